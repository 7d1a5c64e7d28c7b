// The rendezvous every shared-memory step goes through: spin briefly, yield, then sleep on a futex
// so that 8 ranks on 2 cores still make progress. While asleep it watches the clock, the group's
// broken flag and whether the ranks it waits for are still alive, so it never hangs.
#pragma once

#include <chrono>
#include <string>

#include "SegmentLayout.h"
#include "domino/plugin.h"

namespace domino::shm {

using Deadline = std::chrono::steady_clock::time_point;

class GroupBarrier {
 public:
  GroupBarrier(SegmentHeader* header, int rank, int size, std::string group_label);

  // Blocks until every rank has arrived at `phase` (phases count up by one from 1). On timeout or
  // a dead or failed peer it marks the group broken and throws TransportError naming the ranks.
  void arrive_and_wait(uint64_t phase, Deadline deadline, const char* op_name);

  // Tells peers waiting on this group to give up, with why.
  void mark_broken(const std::string& reason);

 private:
  bool all_arrived(uint64_t phase) const;
  std::string absent_ranks(uint64_t phase, bool* any_dead) const;
  [[noreturn]] void fail(domino_status_t status, const std::string& message);

  SegmentHeader* header_;
  RankControl* ranks_;
  int rank_;
  int size_;
  std::string group_label_;
};

}  // namespace domino::shm
