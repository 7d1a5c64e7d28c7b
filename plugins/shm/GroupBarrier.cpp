#include "GroupBarrier.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <fstream>
#include <thread>

#include "../common/TransportError.h"

namespace domino::shm {

namespace {
using Clock = std::chrono::steady_clock;

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1000000000),
              static_cast<long>(timeout.count() % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// A killed rank stays a zombie until its parent reaps it, so look at its state, not just its pid.
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
}  // namespace

GroupBarrier::GroupBarrier(SegmentHeader* header, int rank, int size, std::string group_label)
    : header_(header),
      ranks_(rank_controls(header)),
      rank_(rank),
      size_(size),
      group_label_(std::move(group_label)) {}

bool GroupBarrier::all_arrived(uint64_t phase) const {
  return header_->arrivals.load(std::memory_order_acquire) >= phase * static_cast<uint64_t>(size_);
}

std::string GroupBarrier::absent_ranks(uint64_t phase, bool* any_dead) const {
  std::string list;
  *any_dead = false;
  for (int r = 0; r < size_; ++r) {
    if (ranks_[r].arrived_phase.load(std::memory_order_acquire) >= phase) continue;
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
  uint32_t expected = 0;
  if (header_->broken.compare_exchange_strong(expected, 1)) {
    const size_t n = std::min(reason.size(), sizeof(header_->broken_reason) - 1);
    std::memcpy(header_->broken_reason, reason.data(), n);
    header_->broken_reason[n] = '\0';
  }
  header_->wake_epoch.fetch_add(1);
  futex_wake_all(&header_->wake_epoch);
}

void GroupBarrier::fail(domino_status_t status, const std::string& message) {
  mark_broken("rank " + std::to_string(rank_) + ": " + message);
  throw TransportError(status, message);
}

void GroupBarrier::arrive_and_wait(uint64_t phase, Deadline deadline, const char* op_name) {
  ranks_[rank_].arrived_phase.store(phase, std::memory_order_release);
  const uint64_t target = phase * static_cast<uint64_t>(size_);
  if (header_->arrivals.fetch_add(1) + 1 == target) {
    header_->wake_epoch.fetch_add(1);
    if (header_->sleepers.load() > 0) futex_wake_all(&header_->wake_epoch);
    return;
  }

  // Spinning only pays while every rank has a core of its own.
  static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const bool spin = static_cast<unsigned>(size_) <= cores;
  const auto start = Clock::now();
  if (spin) {
    for (int i = 0; i < 4096; ++i) {
      if (all_arrived(phase)) return;
      cpu_relax();
    }
  }
  while (Clock::now() - start < std::chrono::microseconds(100)) {
    if (all_arrived(phase)) return;
    sched_yield();
  }

  auto next_health_check = Clock::now() + std::chrono::milliseconds(100);
  while (true) {
    const uint32_t epoch = header_->wake_epoch.load();
    header_->sleepers.fetch_add(1);
    if (all_arrived(phase)) {
      header_->sleepers.fetch_sub(1);
      return;
    }
    if (header_->broken.load() == 0) futex_wait(&header_->wake_epoch, epoch, std::chrono::milliseconds(20));
    header_->sleepers.fetch_sub(1);
    if (all_arrived(phase)) return;

    if (header_->broken.load() != 0) {
      throw TransportError(DOMINO_ERR_PEER, std::string(op_name) + " on " + group_label_ +
                                                " aborted because another rank failed: " +
                                                header_->broken_reason);
    }
    const auto now = Clock::now();
    if (now >= deadline || now >= next_health_check) {
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
                 " never reached it. Check that every rank issues the same collectives in the "
                 "same order, or raise the group's timeout.");
      }
      next_health_check = now + std::chrono::milliseconds(100);
    }
  }
}

}  // namespace domino::shm
