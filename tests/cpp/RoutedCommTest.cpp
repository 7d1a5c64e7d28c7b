// Hierarchical and flat plans across simulated hosts: ranks forked on this machine, each
// "host" a label, shared memory inside a host and UCX between hosts, exactly as the backend
// composes them. Every op against a local reference, in uniform, non-uniform and interleaved
// layouts, with each plan forced in turn (all-reduce, large ones through the hierarchical
// plan's pipeline; all-gather and reduce-scatter by rail; broadcast through the hosts' first
// ranks).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <tuple>

#include "engine/RoutedComm.h"
#include "support/CheckedComm.h"
#include "support/CollectiveChecks.h"
#include "support/RoutedGroup.h"

namespace domino {
namespace {

using testing::buf;
using testing::expect_eq;
using testing::v;

std::string check_allreduce(int rank, int size, RoutedComm& comm, const char* expected_plan) {
  // 1048579 elements (8 MiB of int64) take the hierarchical plan's pipeline in 4 chunks, padded.
  for (size_t n :
       {size_t{0}, size_t{1}, size_t{7}, size_t{4099}, size_t{300001}, size_t{1048579}}) {
    std::vector<int64_t> mine(n), out(n, -1), want(n, 0);
    for (size_t i = 0; i < n; ++i) mine[i] = v(rank, i);
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < n; ++i) want[i] += v(r, i);
    }
    testing::CheckedComm{comm}.allreduce(buf(mine), buf(out), DOMINO_SUM);
    if (auto e = expect_eq(out, want, "allreduce SUM"); !e.empty()) return e;
    if (expected_plan != nullptr && comm.last_plan() != expected_plan) {
      return "allreduce of " + std::to_string(n) + " took plan " + comm.last_plan() +
             ", expected " + expected_plan;
    }
    std::vector<double> f(n);
    for (size_t i = 0; i < n; ++i) f[i] = rank + 0.25 * static_cast<double>(i % 5);
    domino_buffer_t fb{f.data(), n, DOMINO_FLOAT64, -1};
    testing::CheckedComm{comm}.allreduce(fb, fb, DOMINO_AVG);
    for (size_t i = 0; i < n; ++i) {
      const double expected = (size - 1) / 2.0 + 0.25 * static_cast<double>(i % 5);
      if (std::fabs(f[i] - expected) > 1e-12) return "AVG element " + std::to_string(i) + " wrong";
    }
  }
  return "";
}

// The ops that have two-level plans besides all-reduce, each with the plan forced: all-gather
// and reduce-scatter (by rail: uniform layouts; through the leaders: any), broadcast and reduce
// from every root, gather and scatter (through the leaders) from every root. Large messages take
// the rails' pipeline.
std::string check_two_level_ops(int rank, int size, RoutedComm& comm, const std::string& plan,
                                bool uniform) {
  const char* want_plan = plan.c_str();
  const bool two_level = plan == "leader" || (plan == "hierarchical" && uniform);
  auto took = [&](const char* op) -> std::string {
    if (!two_level || comm.last_plan() == want_plan) return "";
    return std::string(op) + " took plan " + comm.last_plan() + ", expected " + want_plan;
  };
  // 300007 elements per rank (9.6 MB in all among 4 ranks) take the hierarchical pipeline.
  for (size_t n : {size_t{0}, size_t{3}, size_t{2053}, size_t{300007}}) {
    std::vector<int64_t> mine(n), all(n * static_cast<size_t>(size)), want(all.size());
    for (size_t i = 0; i < n; ++i) mine[i] = v(rank, i);
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < n; ++i) want[static_cast<size_t>(r) * n + i] = v(r, i);
    }
    testing::CheckedComm{comm}.allgather(buf(mine), buf(all));
    if (auto e = expect_eq(all, want, "allgather"); !e.empty()) return e;
    if (auto e = took("allgather"); !e.empty()) return e;
    // Block r of every rank's input is meant for rank r; AVG divides by the group, once.
    std::vector<double> in(n * static_cast<size_t>(size)), out(n, -1);
    for (size_t j = 0; j < in.size(); ++j) in[j] = rank + 0.5 * static_cast<double>(j % 7);
    testing::CheckedComm{comm}.reduce_scatter({in.data(), in.size(), DOMINO_FLOAT64, -1},
                                              {out.data(), out.size(), DOMINO_FLOAT64, -1},
                                              DOMINO_AVG);
    for (size_t i = 0; i < n; ++i) {
      const size_t j = static_cast<size_t>(rank) * n + i;
      const double expected = (size - 1) / 2.0 + 0.5 * static_cast<double>(j % 7);
      if (std::fabs(out[i] - expected) > 1e-12) return "reduce_scatter AVG element wrong";
    }
    if (auto e = took("reduce_scatter"); !e.empty()) return e;
    for (int root = 0; root < size; ++root) {
      const std::string from = " (root " + std::to_string(root) + ", " + std::to_string(n) + ")";
      std::vector<int64_t> data(n), expected(n);
      for (size_t i = 0; i < n; ++i) {
        data[i] = rank == root ? v(root, i) : -1;
        expected[i] = v(root, i);
      }
      testing::CheckedComm{comm}.broadcast(buf(data), root);
      if (auto e = expect_eq(data, expected, "broadcast"); !e.empty()) return e + from;
      if (auto e = took("broadcast"); !e.empty()) return e;
      // Only the root's output is written; AVG divides there once.
      std::vector<double> values(n), result(n, -7);
      for (size_t i = 0; i < n; ++i) values[i] = rank + 0.25 * static_cast<double>(i % 3);
      testing::CheckedComm{comm}.reduce({values.data(), n, DOMINO_FLOAT64, -1},
                                        {result.data(), n, DOMINO_FLOAT64, -1}, DOMINO_AVG, root);
      for (size_t i = 0; i < n; ++i) {
        const double expected_value =
            rank == root ? (size - 1) / 2.0 + 0.25 * static_cast<double>(i % 3) : -7;
        if (std::fabs(result[i] - expected_value) > 1e-12) return "reduce AVG element wrong" + from;
      }
      for (size_t i = 0; i < n; ++i) {
        if (values[i] != rank + 0.25 * static_cast<double>(i % 3)) return "reduce wrote its input";
      }
      if (auto e = took("reduce"); !e.empty()) return e;
      // Gather and scatter go through the leaders only: forced by rail they fall back.
      const bool leaders = plan == "leader";
      std::vector<int64_t> gathered(rank == root ? n * static_cast<size_t>(size) : 0, -1);
      testing::CheckedComm{comm}.gather(buf(mine), buf(gathered), root);
      if (rank == root) {
        if (auto e = expect_eq(gathered, want, "gather"); !e.empty()) return e + from;
      }
      if (leaders) {
        if (auto e = took("gather"); !e.empty()) return e + from;
      }
      std::vector<int64_t> scattered(n, -1), mine_back(n);
      for (size_t i = 0; i < n; ++i) mine_back[i] = v(rank, i);
      testing::CheckedComm{comm}.scatter(buf(rank == root ? want : gathered), buf(scattered), root);
      if (auto e = expect_eq(scattered, mine_back, "scatter"); !e.empty()) return e + from;
      if (leaders) {
        if (auto e = took("scatter"); !e.empty()) return e + from;
      }
    }
  }
  return "";
}

struct Layout {
  const char* name;
  std::vector<std::string> hosts;  // per rank
};

using Case = std::tuple<Layout, std::string>;
class RoutedCommLayouts : public ::testing::TestWithParam<Case> {};

TEST_P(RoutedCommLayouts, EveryOpMatchesALocalReference) {
  const auto& [layout_case, plan] = GetParam();
  const topology::GroupLayout layout = topology::layout_from_host_ids(layout_case.hosts);
  const int size = static_cast<int>(layout_case.hosts.size());
  topology::RouterOptions options;
  options.forced_plan = plan;
  const auto outcomes =
      testing::run_routed(layout_case.hosts, options, [&](int rank, int, RoutedComm& comm) {
        // A forced plan the layout cannot take falls back to the router's choice.
        const bool takes = plan != "hierarchical" || layout.uniform;
        std::string e = check_allreduce(rank, size, comm, takes ? plan.c_str() : nullptr);
        if (e.empty()) e = check_two_level_ops(rank, size, comm, plan, layout.uniform);
        testing::CheckedComm checked{comm};
        return e.empty() ? testing::run_all_collectives(rank, size, checked) : e;
      });
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
  }
}

TEST(RoutedComm, SmallAllReducesTryEachPlanThenAllRanksAdoptTheSame) {
  const std::vector<std::string> hosts = {"a", "a", "b", "b"};
  const auto outcomes =
      testing::run_routed(hosts, {}, [](int rank, int size, RoutedComm& comm) -> std::string {
        std::vector<std::string> plans;
        const int trial_calls = PlanTrial::kRounds * PlanTrial::kCallsPerBlock * 3;
        for (int call = 0; call < trial_calls + 5; ++call) {
          std::vector<int64_t> data(16, rank + call), want(16, 0);
          for (int r = 0; r < size; ++r) want.assign(16, want[0] + r + call);
          testing::CheckedComm{comm}.allreduce(buf(data), buf(data), DOMINO_SUM);
          if (auto e = expect_eq(data, want, "allreduce"); !e.empty()) return e;
          plans.push_back(comm.last_plan());
        }
        // After the trial every call takes the adopted plan; all ranks must agree on it.
        std::vector<int64_t> mine(
            1, static_cast<int64_t>(std::hash<std::string>{}(plans.back()) % 1000));
        std::vector<int64_t> all(static_cast<size_t>(size));
        testing::CheckedComm{comm}.allgather(buf(mine), buf(all));
        for (int64_t other : all) {
          if (other != mine[0]) return "ranks adopted different plans; this one " + plans.back();
        }
        for (size_t i = plans.size() - 5; i < plans.size(); ++i) {
          if (plans[i] != plans.back()) return "plan changed after the trial";
        }
        return std::string();
      });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
}

// A one-host group tries the table's two cheapest in-host all-reduces per size class from 64 KiB,
// block by block, then every rank adopts the same one; every call's sum is exact throughout.
TEST(RoutedComm, LargeOneHostAllReducesTryTwoAlgorithmsThenAllRanksAdoptTheSame) {
  const std::vector<std::string> hosts = {"a", "a", "a"};
  // A literal size, not the constant: the trial must start at 64 KiB.
  const size_t n = ((size_t{64} << 10) / sizeof(int64_t)) + 5;
  const auto outcomes = testing::run_routed(hosts, {}, [&](int rank, int size, RoutedComm& comm) {
    std::vector<int64_t> mine(n), out(n), want(n, 0);
    for (size_t i = 0; i < n; ++i) mine[i] = v(rank, i);
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < n; ++i) want[i] += v(r, i);
    }
    std::vector<std::string> ran;
    const int calls = Trial<std::string>::kRounds * Trial<std::string>::kCallsPerBlock * 2 + 6;
    for (int c = 0; c < calls; ++c) {
      std::fill(out.begin(), out.end(), -1);
      testing::CheckedComm{comm}.allreduce(buf(mine), buf(out), DOMINO_SUM);
      if (auto e = expect_eq(out, want, "allreduce SUM"); !e.empty()) return e;
      ran.push_back(comm.last_large_algorithm());
    }
    if (ran.front() == ran[Trial<std::string>::kCallsPerBlock])
      return "the trial's second block ran " + ran.front() + " again";
    for (size_t c = ran.size() - 6; c < ran.size(); ++c) {
      if (ran[c] != ran.back()) return std::string("the algorithm changed after the trial");
    }
    // Every rank adopted the same: the adopted name's hash is the same at its MIN and MAX.
    std::vector<int64_t> mine_hash{static_cast<int64_t>(std::hash<std::string>{}(ran.back()) >> 1)};
    std::vector<int64_t> low{0}, high{0};
    testing::CheckedComm{comm}.allreduce(buf(mine_hash), buf(low), DOMINO_MIN);
    testing::CheckedComm{comm}.allreduce(buf(mine_hash), buf(high), DOMINO_MAX);
    if (low[0] != high[0]) return std::string("ranks adopted different algorithms");
    return std::string();
  });
  for (size_t r = 0; r < hosts.size(); ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
  }
}

const Layout kLayouts[] = {
    {"two_by_two", {"a", "a", "b", "b"}},
    {"two_by_three", {"a", "a", "a", "b", "b", "b"}},
    {"three_by_two", {"a", "a", "b", "b", "c", "c"}},
    {"two_plus_one", {"a", "a", "b"}},
    {"interleaved", {"a", "b", "a", "b"}},
    {"one_each", {"a", "b", "c"}},
};

INSTANTIATE_TEST_SUITE_P(SimulatedHosts, RoutedCommLayouts,
                         ::testing::Combine(::testing::ValuesIn(kLayouts),
                                            ::testing::Values("flat_inter", "hierarchical",
                                                              "leader")),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

}  // namespace
}  // namespace domino
