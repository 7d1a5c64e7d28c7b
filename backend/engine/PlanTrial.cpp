#include "PlanTrial.h"

#include <algorithm>

namespace domino {

PlanTrial::PlanTrial(std::vector<topology::PlanKind> candidates)
    : candidates_(std::move(candidates)), samples_(candidates_.size()) {
  if (candidates_.size() <= 1)
    winner_ = candidates_.empty() ? topology::PlanKind::kFlatInter : candidates_.front();
}

topology::PlanKind PlanTrial::next() const {
  return candidates_[static_cast<size_t>(calls_ / kCallsPerBlock) % candidates_.size()];
}

void PlanTrial::record(double seconds) {
  const size_t plan = static_cast<size_t>(calls_ / kCallsPerBlock) % candidates_.size();
  if (calls_ % kCallsPerBlock >= kWarmUpPerBlock) samples_[plan].push_back(seconds);
  ++calls_;
}

bool PlanTrial::measured() const {
  return !decided() && calls_ >= calls_needed();
}

std::vector<double> PlanTrial::medians() const {
  std::vector<double> out;
  for (std::vector<double> s : samples_) {
    std::nth_element(s.begin(), s.begin() + static_cast<long>(s.size() / 2), s.end());
    out.push_back(s.empty() ? 0.0 : s[s.size() / 2]);
  }
  return out;
}

void PlanTrial::adopt(const std::vector<double>& slowest_medians) {
  size_t best = 0;
  for (size_t i = 1; i < slowest_medians.size() && i < candidates_.size(); ++i) {
    if (slowest_medians[i] < slowest_medians[best]) best = i;
  }
  winner_ = candidates_[best];
}

}  // namespace domino
