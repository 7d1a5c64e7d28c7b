// A plugin with only the ABI's links (tests/cpp/support/MailboxPlugin.cpp: no collective entries)
// runs every collective through the registry's Communicator and the shared algorithms: each op
// against a local reference at world sizes including non-powers of two, every all-reduce
// algorithm by name, a name no algorithm has, a rank that never arrives, and disagreeing sizes.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "plugins/common/TransportError.h"
#include "plugins/registry/Communicator.h"
#include "plugins/registry/PluginRegistry.h"
#include "support/CheckedComm.h"
#include "support/CollectiveChecks.h"

namespace domino {
namespace {

const domino_plugin_t* mailbox() {
  static PluginRegistry registry({DOMINO_TEST_PLUGIN_DIR});
  const domino_plugin_t* plugin = registry.find("mailbox");
  EXPECT_NE(plugin, nullptr);
  return plugin;
}

// Runs body on `size` threads, one communicator each; returns each rank's message ("" = passed).
std::vector<std::string> run_group(int size, const std::string& group, const char* algorithm,
                                   int64_t timeout_ms,
                                   const std::function<std::string(int, Communicator&)>& body) {
  std::vector<std::string> outcome(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  std::vector<int64_t> global(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) global[static_cast<size_t>(r)] = r;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      domino_comm_config_t config{};
      config.rank = r;
      config.size = size;
      config.global_ranks = global.data();
      config.group_name = group.c_str();
      config.timeout_ms = timeout_ms;
      config.algorithm = algorithm;
      try {
        Communicator comm(mailbox(), config);
        outcome[static_cast<size_t>(r)] = body(r, comm);
      } catch (const std::exception& e) {
        outcome[static_cast<size_t>(r)] = std::string("threw: ") + e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return outcome;
}

using Case = std::tuple<int, const char*>;
class PluginLinksCollectives : public ::testing::TestWithParam<Case> {};

TEST_P(PluginLinksCollectives, EveryOpMatchesALocalReference) {
  const auto [size, algorithm] = GetParam();
  const auto outcome =
      run_group(size, "links-" + std::to_string(size) + algorithm, algorithm, 30000,
                [&](int rank, Communicator& comm) {
                  testing::CheckedComm checked{comm};
                  std::string e = testing::check_allreduce(rank, size, checked);
                  return e.empty() ? testing::run_all_collectives(rank, size, checked) : e;
                });
  for (int r = 0; r < size; ++r) EXPECT_EQ(outcome[static_cast<size_t>(r)], "") << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(WorldSizesAndAlgorithms, PluginLinksCollectives,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 6, 7),
                                            ::testing::Values("", "ring", "recursive_doubling",
                                                              "rabenseifner")),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const std::string name = std::get<1>(info.param);
                           return "world" + std::to_string(std::get<0>(info.param)) + "_" +
                                  (name.empty() ? "auto" : name);
                         });

TEST(PluginLinks, AnAlgorithmNoOneWroteIsRefusedAtCreation) {
  const auto outcome = run_group(1, "links-bogus", "bogus", 1000,
                                 [](int, Communicator&) { return std::string("created"); });
  EXPECT_NE(outcome[0].find("the mailbox transport has no all_reduce algorithm 'bogus'"),
            std::string::npos)
      << outcome[0];
}

TEST(PluginLinks, ARankThatNeverArrivesIsNamedWithinTheTimeout) {
  const auto started = std::chrono::steady_clock::now();
  const auto outcome = run_group(3, "links-absent", "", 300, [](int rank, Communicator& comm) {
    if (rank == 2) return std::string();  // never calls the all-reduce
    std::vector<int64_t> data(1000, rank);
    domino_buffer_t b = testing::buf(data);
    try {
      comm.collective(
          domino::make_call(domino::topology::Collective::kAllReduce, b, b, DOMINO_SUM));
    } catch (const TransportError& e) {
      return std::string(e.what());
    }
    return std::string("returned");
  });
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(outcome[static_cast<size_t>(r)].find("mailbox allreduce on group 'links-absent'"),
              std::string::npos)
        << outcome[static_cast<size_t>(r)];
    EXPECT_NE(outcome[static_cast<size_t>(r)].find("within 300 ms"), std::string::npos)
        << outcome[static_cast<size_t>(r)];
  }
}

TEST(PluginLinks, RanksThatDisagreeOnTheSizeAreTold) {
  const auto outcome = run_group(2, "links-sizes", "ring", 2000, [](int rank, Communicator& comm) {
    std::vector<int64_t> data(rank == 0 ? 10 : 12, 1);
    std::vector<int64_t> out(data.size() * 2);
    domino_buffer_t in = testing::buf(data), all = testing::buf(out);
    try {
      comm.collective(domino::make_call(domino::topology::Collective::kAllGather, in, all));
    } catch (const TransportError& e) {
      return std::string(e.what());
    }
    return std::string("returned");
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(outcome[static_cast<size_t>(r)].find("bytes where rank"), std::string::npos)
        << outcome[static_cast<size_t>(r)];
  }
}

}  // namespace
}  // namespace domino
