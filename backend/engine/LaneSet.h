// A group's progress threads: one lane per priority for its collectives, and a send and a
// receive lane of their own so that a send waiting for its receiver never blocks a receive.
// Counts each priority lane's unfinished collectives, so that a lower lane's chunked work can
// pause while a more urgent lane has some. Torch-free.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "domino/plugin.h"

namespace domino {

class ProgressLane;
struct ThreadPlacement;

// Which lane an op runs on: its priority's (collectives), or the send or the receive lane.
enum class Route { kCollective, kSend, kRecv };

class LaneSet {
 public:
  static constexpr int kPriorities = 3;  // indexed by Priority: high, normal, low

  LaneSet();
  LaneSet(const LaneSet&) = delete;
  LaneSet& operator=(const LaneSet&) = delete;
  ~LaneSet();

  // Also for the threads a lane's communicators start, so that they yield as the lane does.
  static ThreadPlacement placement(int priority, std::vector<int> cpus);

  // cpus: the rank's own cores (empty: unbound).
  void start(const std::vector<int>& cpus);
  // Runs what each lane has queued, then joins.
  void stop();

  // nullptr once stopped. priority counts for collectives only.
  ProgressLane* lane(Route route, int priority) const;

  // Around each collective on priority's lane, so that lower lanes know to pause.
  void queued(int priority);
  void finished(int priority);
  bool higher_priority_pending(int priority) const;
  // Collectives queued or running on the priority lanes, all of them.
  int pending() const;
  // Per priority lane, for observability and tests.
  std::array<uint64_t, kPriorities> issued() const;

  // Lets config's communicators cut their chunked work short while a more urgent lane has
  // collectives pending. This set must outlive them.
  void pause_for_higher(int priority, domino_comm_config_t& config);

 private:
  std::array<std::atomic<int>, kPriorities> pending_{};
  std::array<std::atomic<uint64_t>, kPriorities> issued_{};
  std::array<std::pair<const LaneSet*, int>, kPriorities> pause_contexts_{};
  std::array<std::unique_ptr<ProgressLane>, kPriorities> lanes_;
  std::unique_ptr<ProgressLane> send_lane_;
  std::unique_ptr<ProgressLane> recv_lane_;
};

}  // namespace domino
