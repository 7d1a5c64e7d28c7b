// The algorithm table against its readers: every all-reduce entry over links is one the shared
// algorithms run under that name, the size rule and the router's threshold, and DOMINO_ALGO's
// names coming from the table.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "config/Settings.h"
#include "plugins/algorithms/AlgorithmChoice.h"
#include "plugins/algorithms/Registration.h"
#include "plugins/common/CallDescriptor.h"
#include "plugins/common/TransportError.h"
#include "topology/AlgorithmTable.h"
#include "topology/Plan.h"

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
    EXPECT_EQ(algorithms::parse_allreduce_algorithm(name.c_str(), "test"), name);
    EXPECT_NE(algorithms::find_body("all_reduce", name), nullptr) << name;
    ASSERT_NE(entry.seconds, nullptr) << name;
    topology::TransportCost link{30, 1.2};
    EXPECT_GT(entry.seconds(4, 1 << 20, 1, link), 0) << name;
  }
  // Registered by their own files, none of which the rest of the build calls: the whole
  // archive is linked.
  EXPECT_EQ(count, 3);
  EXPECT_THROW(algorithms::parse_allreduce_algorithm("rsag", "test"), TransportError);
  EXPECT_EQ(topology::algorithm_names("all_reduce", AlgorithmHome::kLinks),
            "rabenseifner, recursive_doubling, ring");
  EXPECT_EQ(topology::algorithm_names("all_reduce", AlgorithmHome::kShm),
            "direct, rsag, single_copy");
  for (const char* op : {"all_gather", "reduce_scatter", "broadcast", "reduce", "gather", "scatter",
                         "all_to_all", "barrier"}) {
    EXPECT_FALSE(topology::algorithm_names(op, AlgorithmHome::kLinks).empty()) << op;
  }
}

TEST(AlgorithmTable, EveryOpHasAPricedAlgorithmAtEveryHomeAndOverLinksABody) {
  const topology::TransportCost link{30, 1.2};
  for (topology::Collective op : topology::all_collectives()) {
    const char* name = topology::collective_name(op);
    for (AlgorithmHome home : {AlgorithmHome::kLinks, AlgorithmHome::kShm}) {
      double seconds = -1;
      const auto* best = topology::cheapest_algorithm(name, home, 4, 4096, 1, link, &seconds);
      ASSERT_NE(best, nullptr) << name;
      EXPECT_GE(seconds, 0) << name;
      if (home == AlgorithmHome::kLinks) {
        EXPECT_NE(algorithms::find_body(name, best->name), nullptr) << name;
        domino_buffer_t message{nullptr, 4096, DOMINO_UINT8, -1};
        EXPECT_FALSE(
            algorithms::resolve_algorithm(make_call(op, message, message), "", "", 4, 65536)
                .empty())
            << name;
      }
    }
  }
}

TEST(AlgorithmTable, SharedMemorysPathsArePricedInTheRegimesTheyWin) {
  auto shm = [](const char* op, int ranks, double bytes, int cpus = 8, bool single_copy = true) {
    topology::TransportCost link{1.5, 6.0};
    link.cpus = cpus;
    link.single_copy = single_copy;
    double seconds = 0;
    return std::string(
        topology::cheapest_algorithm(op, AlgorithmHome::kShm, ranks, bytes, 1, link, &seconds)
            ->name);
  };
  EXPECT_EQ(shm("all_reduce", 2, 8), "direct");
  EXPECT_EQ(shm("all_reduce", 4, 32 << 10), "direct");
  EXPECT_EQ(shm("all_reduce", 4, (32 << 10) + 4), "rsag");
  EXPECT_EQ(shm("all_reduce", 2, 1 << 20), "rsag");
  EXPECT_EQ(shm("all_reduce", 2, 4 << 20), "single_copy");
  EXPECT_EQ(shm("all_reduce", 2, 128 << 20), "rsag");   // beyond the caches: two bytes beat 2.5
  EXPECT_EQ(shm("all_reduce", 4, 4 << 20, 2), "rsag");  // more ranks than CPUs
  EXPECT_EQ(shm("all_reduce", 2, 4 << 20, 8, false), "rsag");  // DOMINO_SINGLE_COPY=off
  EXPECT_EQ(shm("all_gather", 4, 4 << 10), "segment");         // 16 KiB gathered
  EXPECT_EQ(shm("all_gather", 4, 32 << 10), "single_copy");
  EXPECT_EQ(shm("all_gather", 4, 32 << 10, 2), "segment");
  EXPECT_EQ(shm("all_gather", 4, 1 << 20, 2), "single_copy");
  EXPECT_EQ(shm("reduce_scatter", 4, 1 << 20, 2), "segment");
  EXPECT_EQ(shm("reduce_scatter", 2, 1 << 20), "single_copy");
  EXPECT_EQ(shm("broadcast", 2, 1 << 20), "segment");
}

TEST(AlgorithmTable, ANameTakenTwiceIsRefused) {
  EXPECT_THROW(
      topology::add_algorithm({"ring", "again", {"all_reduce"}, AlgorithmHome::kLinks, nullptr}),
      std::logic_error);
}

TEST(AlgorithmTable, TheSizeRuleIsWhatTransportsRunWhenNothingIsHandedDown) {
  EXPECT_EQ(topology::auto_links_allreduce(4096, 4, 65536), "recursive_doubling");
  EXPECT_EQ(topology::auto_links_allreduce(1 << 20, 4, 65536), "rabenseifner");
  EXPECT_EQ(topology::auto_links_allreduce(1 << 20, 6, 65536), "ring");
}

TEST(AlgorithmTable, TheCheapestAllReduceIsTheTablesOwnCostMinimum) {
  const topology::TransportCost link{30, 1.2};
  for (int ranks : {2, 3, 4, 6, 8}) {
    for (double bytes : {64.0, 65536.0, 1048576.0, 67108864.0}) {
      double seconds = 0;
      const auto* best = topology::cheapest_algorithm("all_reduce", AlgorithmHome::kLinks, ranks,
                                                      bytes, 1, link, &seconds);
      ASSERT_NE(best, nullptr);
      for (const auto& entry : topology::algorithm_table()) {
        if (topology::find_algorithm(entry.name, "all_reduce", AlgorithmHome::kLinks) != &entry)
          continue;
        EXPECT_LE(seconds, entry.seconds(ranks, bytes, 1, link)) << entry.name;
      }
    }
  }
  double seconds = 0;
  EXPECT_EQ(
      topology::cheapest_algorithm("all_reduce", AlgorithmHome::kLinks, 4, 64, 1, link, &seconds)
          ->name,
      "recursive_doubling");
  EXPECT_EQ(topology::cheapest_algorithm("all_reduce", AlgorithmHome::kLinks, 4, 64 << 20, 1, link,
                                         &seconds)
                ->name,
            "rabenseifner");
  EXPECT_EQ(topology::cheapest_algorithm("all_reduce", AlgorithmHome::kLinks, 6, 64 << 20, 1, link,
                                         &seconds)
                ->name,
            "ring");
}

TEST(AlgorithmTable, RecursiveDoublingWinsOnlyForSmallMessages) {
  const topology::TransportCost slow_start{30, 1.2};
  const size_t limit = topology::recursive_doubling_limit(4, slow_start);
  EXPECT_GE(limit, 256u);
  EXPECT_LT(limit, size_t{1} << 30);
  // More latency per message: recursive doubling's fewer rounds pay for longer.
  EXPECT_GE(topology::recursive_doubling_limit(4, topology::TransportCost{300, 1.2}), limit);
}

TEST(AlgorithmTable, DominoAlgoTakesItsNamesFromTheTable) {
  const Settings s = parse_settings({{"DOMINO_ALGO", "hierarchical,rabenseifner,rsag"}}).settings;
  EXPECT_EQ(s.inter_algorithm, "rabenseifner");
  try {
    parse_settings({{"DOMINO_ALGO", "binomial_tree"}});
    FAIL() << "binomial_tree is not an all-reduce algorithm";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("(rabenseifner, recursive_doubling, ring)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace domino
