// Small all-reduces across hosts cost a few wire latencies whichever plan they take, and which
// plan wins depends on how the ranks get scheduled (how many cores they share, who sleeps while
// whom talks), which no alpha-beta model captures. So the first small all-reduces of a group
// try each feasible plan, each rank times them, and the group adopts the plan whose slowest
// rank was fastest. Each plan runs a block of consecutive calls, the first ones dropped: only
// then are its ranks' waits in the state a plan in steady use sees (one plan per call, round
// robin, made every plan with more steps look slower than it runs). Blocks repeat in rounds, so
// the machine's drift touches every plan alike. Every rank makes the same calls in the same
// order (the lane contract), so every rank is at the same trial step and adopts the same plan.
// Torch-free.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "topology/Router.h"

namespace domino {

class PlanTrial {
 public:
  static constexpr size_t kMaxBytes = 16 * 1024;  // larger messages follow the cost model
  static constexpr int kCallsPerBlock = 8;
  static constexpr int kWarmUpPerBlock = 3;  // of each block, not timed
  static constexpr int kRounds = 3;

  explicit PlanTrial(std::vector<topology::PlanKind> candidates);

  bool decided() const { return winner_.has_value(); }
  topology::PlanKind winner() const { return *winner_; }
  // The plan the next trial call takes.
  topology::PlanKind next() const;
  // Records how long the call that took next() lasted on this rank.
  void record(double seconds);
  // Whether every trial call has run; then agree() must be given the group's per-plan times.
  bool measured() const;
  // How many calls the whole trial takes.
  int calls_needed() const {
    return kRounds * kCallsPerBlock * static_cast<int>(candidates_.size());
  }
  // This rank's median time per candidate, in candidate order.
  std::vector<double> medians() const;
  // Adopts the fastest plan from the group's slowest-rank medians (same order as medians()).
  void adopt(const std::vector<double>& slowest_medians);
  const std::vector<topology::PlanKind>& candidates() const { return candidates_; }

 private:
  std::vector<topology::PlanKind> candidates_;
  std::vector<std::vector<double>> samples_;
  int calls_ = 0;
  std::optional<topology::PlanKind> winner_;
};

}  // namespace domino
