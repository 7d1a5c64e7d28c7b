// A new all-reduce added in one file, this one: it registers itself in the algorithm table, and
// with nothing else changed the router chooses it where its cost is lowest, the routing report
// names it in the plan's steps, DOMINO_ALGO accepts it, and it runs over UCX (through the plugin
// ABI's allreduce_with) and over a plugin with only links, handed down by name. Its own binary,
// so that the rest of the suite sees the table as built.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "config/Settings.h"
#include "plugins/algorithms/AlgorithmChoice.h"
#include "plugins/algorithms/Blocks.h"
#include "plugins/algorithms/Registration.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"
#include "plugins/registry/Communicator.h"
#include "plugins/registry/PluginRegistry.h"
#include "plugins/shm/ShmAlgorithms.h"
#include "support/CheckedComm.h"
#include "support/CollectiveChecks.h"
#include "support/RoutedGroup.h"
#include "support/ShmGroup.h"
#include "topology/RoutingReport.h"

namespace domino {
namespace {

// Every rank sends its message to rank 0, which reduces them in rank order and sends the
// result back: two rounds, whatever the group's size, but rank 0's link carries 2(p-1)
// messages.
std::atomic<int> star_runs{0};

void allreduce_star(algorithms::PeerLinks& links, void* data, size_t count, domino_dtype_t dtype,
                    domino_redop_t op) {
  ++star_runs;
  const int size = links.size();
  const size_t bytes = count * dtype_size(dtype);
  if (links.rank() == 0) {
    std::vector<std::vector<char>> theirs(static_cast<size_t>(size), std::vector<char>(bytes));
    for (int r = 1; r < size; ++r) links.post_recv(r, theirs[static_cast<size_t>(r)].data(), bytes);
    links.wait();
    for (int r = 1; r < size; ++r) {
      algorithms::combine(static_cast<char*>(data), theirs[static_cast<size_t>(r)].data(), count,
                          dtype, op);
    }
    if (op == DOMINO_AVG) divide_buffer(data, count, dtype, size);
    for (int r = 1; r < size; ++r) links.post_send(r, data, bytes);
    links.wait();
  } else {
    links.exchange(0, data, bytes, -1, nullptr, 0);
    links.exchange(-1, nullptr, 0, 0, data, bytes);
  }
}

double star_seconds(int ranks, double bytes, int flows, const topology::TransportCost& c) {
  return 2 * topology::alpha_seconds(c) +
         2.0 * (ranks - 1) * bytes * topology::seconds_per_byte(c) * flows;
}

const bool registered = algorithms::register_algorithm(
    {"star",
     "to rank 0 and back: 2 rounds, rank 0's link carries 2(p-1) messages",
     {"all_reduce"},
     topology::AlgorithmHome::kLinks,
     star_seconds},
    [](algorithms::PeerLinks& links, const domino_call_t& call) {
      allreduce_star(links, call.recv->ptr, call.recv->count, call.recv->dtype, call.redop);
    });

// An all-to-all that costs more to start than direct's and less per byte: cheaper for large
// messages. It is never run, only priced.
const bool all_to_all_registered = algorithms::register_algorithm(
    {"bulk_all_to_all",
     "test only: 10 latencies, a tenth of direct's bytes",
     {"all_to_all"},
     topology::AlgorithmHome::kLinks,
     [](int, double bytes, int, const topology::TransportCost& c) {
       return 10 * topology::alpha_seconds(c) + 0.1 * bytes * topology::seconds_per_byte(c);
     }},
    [](algorithms::PeerLinks&, const domino_call_t&) {
      throw std::logic_error("bulk_all_to_all is only priced");
    });

// Five hosts of one rank: recursive doubling takes 4 rounds there (2, plus folding one rank in
// and out), the star 2, so it wins on latency for small messages and loses on bandwidth.
const std::vector<std::string> kFiveHosts = {"a", "b", "c", "d", "e"};

TEST(AddedAlgorithm, TheRouterChoosesItWhereItIsCheapestAndTheReportNamesIt) {
  ASSERT_TRUE(registered);
  EXPECT_NE(topology::algorithm_names("all_reduce", topology::AlgorithmHome::kLinks).find("star"),
            std::string::npos);
  const topology::Router router(topology::layout_from_host_ids(kFiveHosts), {}, {});
  bool small_named = false, large_named = false;
  for (const topology::RoutingRow& row : topology::routing_report(router, {8, 16u << 20})) {
    if (row.op != topology::Collective::kAllReduce) continue;
    const std::string steps = row.chosen.describe();
    (row.bytes == 8 ? small_named : large_named) = steps.find(":star") != std::string::npos;
    if (row.bytes == 8) {
      EXPECT_EQ(row.chosen.inter_algorithm(), "star") << steps;
    }
  }
  EXPECT_TRUE(small_named);
  EXPECT_FALSE(large_named);
  EXPECT_EQ(parse_settings({{"DOMINO_ALGO", "flat,star"}}).settings.inter_algorithm, "star");
}

TEST(AddedAlgorithm, ANameDominoAlgoCouldNotGiveIsRefused) {
  const size_t entries = topology::algorithm_table().size();
  auto named = [](std::string_view name) {
    return topology::AlgorithmEntry{
        name, "refused", {"all_reduce"}, topology::AlgorithmHome::kLinks, star_seconds};
  };
  auto nothing = [](algorithms::PeerLinks&, const domino_call_t&) {};
  // DOMINO_ALGO lowercases what it is given, and reads a plan's word before an algorithm's.
  EXPECT_THROW(algorithms::register_algorithm(named("Star2"), nothing), std::logic_error);
  EXPECT_THROW(algorithms::register_algorithm(named("star-2"), nothing), std::logic_error);
  EXPECT_THROW(algorithms::register_algorithm(named("hierarchical"), nothing), std::logic_error);
  EXPECT_THROW(algorithms::register_algorithm(named("flat"), nothing), std::logic_error);
  EXPECT_EQ(topology::algorithm_table().size(), entries);
}

TEST(AddedAlgorithm, ItRunsOverUcxWhenTheRouterHandsItDown) {
  topology::RouterOptions flat;
  flat.forced_plan = "flat_inter";
  const auto outcomes =
      testing::run_routed(kFiveHosts, flat, [](int rank, int size, RoutedComm& comm) {
        for (size_t n : {size_t{1}, size_t{300}, size_t{1} << 20}) {
          std::vector<int64_t> data(n), want(n, 0);
          for (size_t i = 0; i < n; ++i) data[i] = testing::v(rank, i);
          for (int r = 0; r < size; ++r) {
            for (size_t i = 0; i < n; ++i) want[i] += testing::v(r, i);
          }
          const int before = star_runs.load();
          testing::CheckedComm{comm}.allreduce(testing::buf(data), testing::buf(data), DOMINO_SUM);
          if (auto e = testing::expect_eq(data, want, "allreduce"); !e.empty()) return e;
          // Small messages: the star (the router's choice); 8 MiB: a bandwidth-optimal one.
          const bool ran = star_runs.load() > before;
          if (ran != (n < 4096)) {
            return std::string("the star ") + (ran ? "ran" : "did not run") + " for " +
                   std::to_string(n) + " elements";
          }
        }
        return std::string();
      });
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
  }
}

TEST(AddedAlgorithm, OnOneHostItRunsOverSharedMemorysLinksWhenForced) {
  // DOMINO_ALGO=intra:star: every all-reduce of the one-host group runs it, at every size.
  topology::RouterOptions intra;
  intra.forced_intra_algorithm = "star";
  const auto outcomes = testing::run_routed(
      {"a", "a", "a"}, intra, [](int rank, int size, RoutedComm& comm) -> std::string {
        for (size_t n : {size_t{1}, size_t{1} << 20}) {
          std::vector<int64_t> data(n), want(n, 0);
          for (size_t i = 0; i < n; ++i) data[i] = testing::v(rank, i);
          for (int r = 0; r < size; ++r) {
            for (size_t i = 0; i < n; ++i) want[i] += testing::v(r, i);
          }
          const int before = star_runs.load();
          testing::CheckedComm{comm}.allreduce(testing::buf(data), testing::buf(data), DOMINO_SUM);
          if (auto e = testing::expect_eq(data, want, "allreduce"); !e.empty()) return e;
          if (star_runs.load() == before) return "the star did not run for " + std::to_string(n);
        }
        return {};
      });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
}

TEST(AddedAlgorithm, APluginWithOnlyLinksRunsItByName) {
  static PluginRegistry registry({DOMINO_TEST_PLUGIN_DIR});
  const domino_plugin_t* mailbox = registry.find("mailbox");
  ASSERT_NE(mailbox, nullptr);
  const int size = 3;
  std::vector<std::string> outcome(size);
  std::vector<int64_t> global = {0, 1, 2};
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      domino_comm_config_t config{};
      config.rank = r;
      config.size = size;
      config.global_ranks = global.data();
      config.group_name = "added-star";
      config.timeout_ms = 30000;
      try {
        Communicator comm(mailbox, config);
        std::vector<double> data(1001, r + 1.0);
        domino_buffer_t b{data.data(), data.size(), DOMINO_FLOAT64, -1};
        comm.collective(
            domino::make_call(domino::topology::Collective::kAllReduce, b, b, DOMINO_AVG),
            std::string("star"));
        for (double x : data) {
          if (x != 2.0) outcome[static_cast<size_t>(r)] = "AVG gave " + std::to_string(x);
        }
      } catch (const std::exception& e) {
        outcome[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < size; ++r) EXPECT_EQ(outcome[static_cast<size_t>(r)], "") << "rank " << r;
  EXPECT_GE(star_runs.load(), size);
}

TEST(AddedAlgorithm, AnAllToAllIsChosenByTheNumberOfRanksAloneAndPricedAtItsSize) {
  // The ranks of an uneven all-to-all send different amounts: were the algorithm chosen by each
  // rank's size, two ranks could run different ones.
  ASSERT_TRUE(all_to_all_registered);
  const topology::Router router(topology::layout_from_host_ids(kFiveHosts), {}, {});
  const topology::Plan small = router.choose(topology::Collective::kAllToAll, 8);
  const topology::Plan large = router.choose(topology::Collective::kAllToAll, 64u << 20);
  ASSERT_EQ(small.steps.size(), 1u);
  ASSERT_EQ(large.steps.size(), 1u);
  EXPECT_EQ(small.steps.front().algorithm, large.steps.front().algorithm);
  EXPECT_NE(large.steps.front().algorithm, "bulk_all_to_all");
  EXPECT_GT(large.predicted_us, 100 * small.predicted_us);
}

TEST(AddedAlgorithm, HandedNoNameATransportTakesTheCheapestNotTheFirstByName) {
  // bulk_all_to_all comes before direct in the table; chosen by the number of ranks alone (no
  // bytes), direct's one latency beats its ten, whatever the message.
  ASSERT_TRUE(all_to_all_registered);
  for (size_t bytes : {size_t{8}, size_t{64} << 20}) {
    domino_buffer_t message{nullptr, bytes, DOMINO_UINT8, -1};
    const domino_call_t call = make_call(topology::Collective::kAllToAll, message, message);
    EXPECT_EQ(algorithms::resolve_algorithm(call, "", "", 5, 65536), "direct") << bytes;
  }
}

// Shared memory remembers the path it took for the last call handed no name (small ops repeat
// one call, and pricing the table cost more than their round); a path added since is priced on
// the next call all the same.
std::atomic<int> counted_direct_runs{0};
std::atomic<int> counted_direct_pricings{0};

TEST(AddedAlgorithm, SharedMemorysRememberedChoiceGivesWayToOneAddedSince) {
  testing::ShmGroup group;
  const auto outcomes = group.run(2, 30000, [](int rank, shm::ShmCommunicator& comm) {
    std::vector<float> data(6, static_cast<float>(rank + 1));
    domino_buffer_t buffer{data.data(), data.size(), DOMINO_FLOAT32, -1};
    const domino_call_t call =
        make_call(topology::Collective::kAllReduce, buffer, buffer, DOMINO_SUM);
    comm.collective(call);  // direct, the cheapest as built: remembered
    if (data[0] != 3) return "the first sum gave " + std::to_string(data[0]);
    // In this rank's process alone (a forked child): the cheapest for 24-byte messages.
    shm::register_shm_algorithm(
        {"counted_direct",
         "direct, counted",
         {"all_reduce"},
         topology::AlgorithmHome::kShm,
         [](int, double bytes, int, const topology::TransportCost&) {
           ++counted_direct_pricings;
           return bytes == 24 ? 0.0 : std::numeric_limits<double>::infinity();
         }},
        [](shm::ShmCommunicator& on, const domino_call_t& c) {
          ++counted_direct_runs;
          shm::find_shm_body(topology::Collective::kAllReduce, "direct")(on, c);
        });
    comm.collective(call);
    comm.collective(call);  // the same call again: remembered, not priced
    if (data[0] != 12) return "the third sum gave " + std::to_string(data[0]);
    if (counted_direct_runs != 2) return std::string("the path added since did not run");
    if (counted_direct_pricings != 1) {
      return "the table was priced " + std::to_string(counted_direct_pricings.load()) +
             " times for two like calls";
    }
    return std::string();
  });
  for (size_t r = 0; r < outcomes.size(); ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
  }
}

}  // namespace
}  // namespace domino
