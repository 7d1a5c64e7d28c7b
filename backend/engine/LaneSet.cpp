#include "LaneSet.h"

#include "ProgressLane.h"
#include "config/Settings.h"

namespace domino {

namespace {
// Niceness of the low lane's thread: on contended cores it yields most of its share to the
// threads issuing high-priority work, without starving (measured with bench --suite priority).
constexpr int kLowLaneNice = 10;
}  // namespace

LaneSet::LaneSet() {
  for (int lane = 0; lane < kPriorities; ++lane) {
    pause_contexts_[static_cast<size_t>(lane)] = {this, lane};
  }
}

LaneSet::~LaneSet() {
  stop();
}

ThreadPlacement LaneSet::placement(int priority, std::vector<int> cpus) {
  return {static_cast<Priority>(priority) == Priority::kLow ? kLowLaneNice : 0, std::move(cpus)};
}

void LaneSet::start(const std::vector<int>& cpus) {
  for (int lane = 0; lane < kPriorities; ++lane) {
    ThreadPlacement where = placement(lane, cpus);
    lanes_[static_cast<size_t>(lane)] =
        std::make_unique<ProgressLane>(where.nice, std::move(where.cpus));
  }
  send_lane_ = std::make_unique<ProgressLane>(0, cpus);
  recv_lane_ = std::make_unique<ProgressLane>(0, cpus);
}

void LaneSet::stop() {
  for (auto& lane : lanes_) lane.reset();
  send_lane_.reset();
  recv_lane_.reset();
}

ProgressLane* LaneSet::lane(Route route, int priority) const {
  return route == Route::kSend   ? send_lane_.get()
         : route == Route::kRecv ? recv_lane_.get()
                                 : lanes_[static_cast<size_t>(priority)].get();
}

void LaneSet::queued(int priority) {
  pending_[static_cast<size_t>(priority)].fetch_add(1);
  issued_[static_cast<size_t>(priority)].fetch_add(1, std::memory_order_relaxed);
}

void LaneSet::finished(int priority) {
  pending_[static_cast<size_t>(priority)].fetch_sub(1);
}

int LaneSet::pending() const {
  int total = 0;
  for (const auto& count : pending_) total += count.load();
  return total;
}

bool LaneSet::higher_priority_pending(int priority) const {
  for (int higher = 0; higher < priority; ++higher) {
    if (pending_[static_cast<size_t>(higher)].load(std::memory_order_relaxed) > 0) return true;
  }
  return false;
}

std::array<uint64_t, LaneSet::kPriorities> LaneSet::issued() const {
  std::array<uint64_t, kPriorities> counts{};
  for (size_t lane = 0; lane < counts.size(); ++lane) counts[lane] = issued_[lane].load();
  return counts;
}

void LaneSet::pause_for_higher(int priority, domino_comm_config_t& config) {
  if (priority == 0) return;  // nothing is more urgent than the high lane
  config.should_pause = [](void* context) -> int {
    const auto* self = static_cast<const std::pair<const LaneSet*, int>*>(context);
    return self->first->higher_priority_pending(self->second) ? 1 : 0;
  };
  config.pause_context = &pause_contexts_[static_cast<size_t>(priority)];
}

}  // namespace domino
