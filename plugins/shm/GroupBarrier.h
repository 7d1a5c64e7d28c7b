// The rendezvous every collective round goes through (see WaitWord.h for how it sleeps). While
// waiting it watches the deadline, the group's broken flag and whether the ranks it waits for are
// alive, so it never hangs; on failure it marks the group broken so peers give up too.
#pragma once

#include <chrono>
#include <string>

#include "SegmentLayout.h"
#include "domino/plugin.h"

namespace domino::shm {

class GroupBarrier {
 public:
  GroupBarrier(SegmentHeader* header, int rank, int size, std::string group_label);

  // Blocks until every rank has arrived at `phase` (phases count up by one from 1). On timeout or
  // a dead or failed peer it marks the group broken and throws TransportError naming the ranks.
  void arrive_and_wait(uint64_t phase, Deadline deadline, const char* op_name);

  // Throws if the group was marked broken or `peers` (or, with peer < 0, nobody in particular)
  // died, or the deadline passed. what_waits names the operation for messages.
  void check_health(std::chrono::steady_clock::time_point now, Deadline deadline,
                    const std::string& what_waits, int peer);
  // Throws, naming the first failure, once any rank has marked the group broken.
  void throw_if_broken(const std::string& what) const;

  // Tells peers waiting on this group to give up, with why.
  void mark_broken(const std::string& reason);
  bool broken() const { return header_->broken.load() != 0; }
  // Why, once whoever broke it has written that down.
  std::string broken_reason() const;

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

// A killed rank stays a zombie until its parent reaps it, so this looks at its state too.
bool process_alive(int32_t pid);

}  // namespace domino::shm
