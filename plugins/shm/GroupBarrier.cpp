#include "GroupBarrier.h"

#include <cstring>
#include <fstream>

#include "plugins/common/TransportError.h"

namespace domino::shm {

bool process_alive(int32_t pid) {
  if (pid <= 0) return true;  // not yet attached: cannot tell, assume alive
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close_paren = line.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= line.size()) return true;
  const char state = line[close_paren + 2];
  return state != 'Z' && state != 'X';
}

GroupBarrier::GroupBarrier(SegmentHeader* header, int rank, int size, std::string group_label)
    : header_(header),
      ranks_(rank_controls(header)),
      rank_(rank),
      size_(size),
      group_label_(std::move(group_label)) {}

bool GroupBarrier::all_arrived(uint64_t phase) const {
  for (int r = 0; r < size_; ++r) {
    // Sequentially consistent: the other half of the sleepers handshake (arrive_and_wait).
    if (phase_line(ranks_, r, phase).arrived.load() < phase) return false;
  }
  return true;
}

std::string GroupBarrier::absent_ranks(uint64_t phase, bool* any_dead) const {
  std::string list;
  *any_dead = false;
  for (int r = 0; r < size_; ++r) {
    if (phase_line(ranks_, r, phase).arrived.load(std::memory_order_acquire) >= phase) continue;
    const int32_t pid = ranks_[r].pid.load(std::memory_order_relaxed);
    const bool alive = process_alive(pid);
    *any_dead = *any_dead || !alive;
    if (!list.empty()) list += ", ";
    list += std::to_string(r);
    if (!alive) list += " (pid " + std::to_string(pid) + " is dead)";
  }
  return list;
}

void GroupBarrier::mark_broken(const std::string& reason) {
  // 1 while the first rank to fail writes its reason, 2 once readers may take it.
  uint32_t expected = 0;
  if (header_->broken.compare_exchange_strong(expected, 1)) {
    const size_t n = std::min(reason.size(), sizeof(header_->broken_reason) - 1);
    std::memcpy(header_->broken_reason, reason.data(), n);
    header_->broken_reason[n] = '\0';
    header_->broken.store(2, std::memory_order_release);
  }
  notify(header_->barrier_word);
  for (int r = 0; r < size_; ++r) notify(ranks_[r].mailbox);
}

void GroupBarrier::fail(domino_status_t status, const std::string& message) {
  mark_broken("rank " + std::to_string(rank_) + ": " + message);
  throw TransportError(status, message);
}

std::string GroupBarrier::broken_reason() const {
  // The writer holds state 1 for one short copy; a reader never waits on it for long.
  for (int spin = 0; spin < 100000 && header_->broken.load(std::memory_order_acquire) == 1;
       ++spin) {
    sched_yield();
  }
  if (header_->broken.load(std::memory_order_acquire) != 2) return "no reason given yet";
  // A peer wrote it: bounded by the array, whether or not its end is there.
  const char* reason = header_->broken_reason;
  return std::string(reason, strnlen(reason, sizeof header_->broken_reason));
}

void GroupBarrier::throw_if_broken(const std::string& what) const {
  if (!broken()) return;
  throw TransportError(DOMINO_ERR_PEER, what + " on " + group_label_ +
                                            " ended because the group broke: " + broken_reason());
}

void GroupBarrier::check_health(std::chrono::steady_clock::time_point now, Deadline deadline,
                                const std::string& what_waits, int peer) {
  throw_if_broken(what_waits);
  if (peer >= 0 && !process_alive(ranks_[peer].pid.load())) {
    fail(DOMINO_ERR_PEER,
         what_waits + " on " + group_label_ + ": rank " + std::to_string(peer) + " (pid " +
             std::to_string(ranks_[peer].pid.load()) +
             ") exited. The group cannot continue; destroy it and restart the job.");
  }
  if (now >= deadline) {
    fail(DOMINO_ERR_TIMEOUT, what_waits + " on " + group_label_ + " timed out" +
                                 (peer >= 0 ? " waiting for rank " + std::to_string(peer) : "") +
                                 ". Check that the peer issues the matching operation, or raise "
                                 "the group's timeout.");
  }
}

void GroupBarrier::arrive_and_wait(uint64_t phase, Deadline deadline, const char* op_name) {
  // Sequentially consistent, like the sleepers count a waiter raises before it looks again
  // (wait_for) and the arrivals all_arrived reads: of the ranks arriving last, at least one sees
  // every arrival and, if anyone sleeps, wakes them. Earlier arrivals wake nobody, so sleepers
  // wake once per step.
  phase_line(ranks_, rank_, phase).arrived.store(phase);
  if (all_arrived(phase)) {
    if (header_->barrier_word.sleepers.load() > 0) notify(header_->barrier_word);
    return;
  }
  wait_for([&] { return all_arrived(phase); }, header_->barrier_word, spinning_pays(size_),
           [&](std::chrono::steady_clock::time_point now) {
             throw_if_broken(op_name);
             bool any_dead = false;
             const std::string absent = absent_ranks(phase, &any_dead);
             if (any_dead) {
               fail(DOMINO_ERR_PEER, std::string(op_name) + " on " + group_label_ + ": rank(s) " +
                                         absent +
                                         " exited before reaching it. The group cannot continue; "
                                         "destroy it and restart the job.");
             }
             if (now >= deadline) {
               fail(DOMINO_ERR_TIMEOUT,
                    std::string(op_name) + " on " + group_label_ + " timed out: rank(s) " + absent +
                        " never reached it. Check that every rank issues the same collectives in "
                        "the same order, or raise the group's timeout.");
             }
           });
}

}  // namespace domino::shm
