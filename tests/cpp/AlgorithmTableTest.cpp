// The algorithm table against its readers: every all-reduce entry over links is one the shared
// algorithms run under that name, the size rule and the router's threshold, and DOMINO_ALGO's
// names coming from the table.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "config/Settings.h"
#include "plugins/algorithms/AllreduceChoice.h"
#include "plugins/common/TransportError.h"
#include "topology/AlgorithmTable.h"

namespace domino {
namespace {

using topology::AlgorithmHome;

TEST(AlgorithmTable, EachNameServesAnOpOnceWhereItRuns) {
  std::set<std::string> seen;
  for (const auto& entry : topology::algorithm_table()) {
    EXPECT_FALSE(entry.description.empty()) << entry.name;
    for (auto op : entry.ops) {
      const std::string key = std::string(entry.name) + "/" + std::string(op) + "/" +
                              (entry.home == AlgorithmHome::kLinks ? "links" : "shm");
      EXPECT_TRUE(seen.insert(key).second) << key << " twice";
    }
  }
}

TEST(AlgorithmTable, EveryAllReduceOverLinksRunsUnderItsNameAndHasACost) {
  int count = 0;
  for (const auto& entry : topology::algorithm_table()) {
    if (topology::find_algorithm(entry.name, "all_reduce", AlgorithmHome::kLinks) != &entry)
      continue;
    ++count;
    const std::string name(entry.name);
    const auto algorithm = algorithms::parse_allreduce_algorithm(name.c_str(), "test");
    EXPECT_EQ(algorithms::allreduce_algorithm_name(algorithm), name);
    ASSERT_NE(entry.allreduce_seconds, nullptr) << name;
    topology::LinkCost link{30, 1.2};
    EXPECT_GT(entry.allreduce_seconds(4, 1 << 20, 1, link), 0) << name;
  }
  EXPECT_EQ(count, 3);
  EXPECT_THROW(algorithms::parse_allreduce_algorithm("rsag", "test"), TransportError);
  EXPECT_EQ(topology::algorithm_names("all_reduce", AlgorithmHome::kLinks),
            "ring, recursive_doubling, rabenseifner");
  EXPECT_EQ(topology::algorithm_names("all_reduce", AlgorithmHome::kShm), "direct, rsag");
}

TEST(AlgorithmTable, TheSizeRuleIsTheOneTheTransportsRun) {
  EXPECT_EQ(topology::auto_links_allreduce(4096, 4, 65536), "recursive_doubling");
  EXPECT_EQ(topology::auto_links_allreduce(1 << 20, 4, 65536), "rabenseifner");
  EXPECT_EQ(topology::auto_links_allreduce(1 << 20, 6, 65536), "ring");
  for (size_t bytes : {size_t{0}, size_t{65536}, size_t{65537}, size_t{1} << 24}) {
    for (int ranks : {2, 3, 4, 6, 8}) {
      EXPECT_EQ(algorithms::allreduce_algorithm_name(
                    algorithms::auto_allreduce_algorithm(bytes, ranks, 65536)),
                topology::auto_links_allreduce(bytes, ranks, 65536));
    }
  }
}

TEST(AlgorithmTable, RecursiveDoublingWinsOnlyForSmallMessages) {
  const topology::LinkCost slow_start{30, 1.2};
  const size_t limit = topology::recursive_doubling_limit(4, slow_start);
  EXPECT_GE(limit, 256u);
  EXPECT_LT(limit, size_t{1} << 30);
  // More latency per message: recursive doubling's fewer rounds pay for longer.
  EXPECT_GE(topology::recursive_doubling_limit(4, topology::LinkCost{300, 1.2}), limit);
}

TEST(AlgorithmTable, DominoAlgoTakesItsNamesFromTheTable) {
  const Settings s = parse_settings({{"DOMINO_ALGO", "hierarchical,rabenseifner,rsag"}}).settings;
  EXPECT_EQ(s.inter_algorithm, "rabenseifner");
  try {
    parse_settings({{"DOMINO_ALGO", "binomial_tree"}});
    FAIL() << "binomial_tree is not an all-reduce algorithm";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("(ring, recursive_doubling, rabenseifner)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace domino
