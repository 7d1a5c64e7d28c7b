// Choosing among candidates by running them, where no cost model decides reliably: the group
// tries each candidate on its first calls, each rank times them, and the group adopts the one
// whose slowest rank was fastest. Each candidate runs a block of consecutive calls, the first ones
// dropped: only then are its ranks' waits in the state a candidate in steady use sees (one
// candidate per call, round robin, made every candidate with more steps look slower than it
// runs). Blocks repeat in rounds, so the machine's drift touches every candidate alike. Every
// rank makes the same calls in the same order (the lane contract), so every rank is at the same
// trial step and adopts the same candidate. Used for plans (PlanTrial.h) and for shared memory's
// large all-reduce algorithms (RoutedComm). Torch-free.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace domino {

template <class Candidate>
class Trial {
 public:
  static constexpr int kCallsPerBlock = 8;
  static constexpr int kWarmUpPerBlock = 3;  // of each block, not timed
  static constexpr int kRounds = 3;

  // No candidate: nothing to try; decided() stays false and next() must not be called.
  explicit Trial(std::vector<Candidate> candidates)
      : candidates_(std::move(candidates)), samples_(candidates_.size()) {
    if (candidates_.size() == 1) winner_ = 0;
  }

  bool decided() const { return winner_.has_value(); }
  const Candidate& winner() const { return candidates_[*winner_]; }
  // The candidate the next trial call takes.
  const Candidate& next() const { return candidates_[block()]; }
  // Records how long the call that took next() lasted on this rank.
  void record(double seconds) {
    if (calls_ % kCallsPerBlock >= kWarmUpPerBlock) samples_[block()].push_back(seconds);
    ++calls_;
  }
  // Whether every trial call has run; then adopt() must be given the group's per-candidate times.
  bool measured() const { return !decided() && !candidates_.empty() && calls_ >= calls_needed(); }
  // How many calls the whole trial takes.
  int calls_needed() const {
    return kRounds * kCallsPerBlock * static_cast<int>(candidates_.size());
  }
  // This rank's median time per candidate, in candidate order.
  std::vector<double> medians() const {
    std::vector<double> out;
    for (std::vector<double> s : samples_) {
      std::nth_element(s.begin(), s.begin() + static_cast<long>(s.size() / 2), s.end());
      out.push_back(s.empty() ? 0.0 : s[s.size() / 2]);
    }
    return out;
  }
  // Adopts the fastest candidate from the group's slowest-rank medians (same order as medians()).
  void adopt(const std::vector<double>& slowest_medians) {
    size_t best = 0;
    for (size_t i = 1; i < slowest_medians.size() && i < candidates_.size(); ++i) {
      if (slowest_medians[i] < slowest_medians[best]) best = i;
    }
    winner_ = best;
  }
  const std::vector<Candidate>& candidates() const { return candidates_; }

 private:
  size_t block() const { return static_cast<size_t>(calls_ / kCallsPerBlock) % candidates_.size(); }

  std::vector<Candidate> candidates_;
  std::vector<std::vector<double>> samples_;
  int calls_ = 0;
  std::optional<size_t> winner_;
};

}  // namespace domino
