// How every shared-memory wait sleeps: spin while each rank has a core, then yield, then sleep
// on a futex, waking to run a health check (deadline, broken group, dead peers) every 100 ms so
// that no wait can hang.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace domino::shm {

using Deadline = std::chrono::steady_clock::time_point;

struct alignas(64) WaitWord {
  std::atomic<uint32_t> epoch;
  std::atomic<uint32_t> sleepers;
};

void futex_sleep(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout);
void futex_wake_all(std::atomic<uint32_t>* word);

// Whoever makes a waiter's condition true calls this after publishing the change.
inline void notify(WaitWord& word) {
  word.epoch.fetch_add(1);
  if (word.sleepers.load() > 0) futex_wake_all(&word.epoch);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// This machine's cores (at least 1).
unsigned host_cores();
// True when `ranks` busy processes fit on this machine's cores, so spinning is worth it.
bool spinning_pays(int ranks);

// Waits until ready() holds. health(now) runs every 100 ms of sleep and throws to give up.
template <class Ready, class Health>
void wait_for(Ready&& ready, WaitWord& word, bool spin, Health&& health) {
  if (ready()) return;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // Spin by the clock, not by a count: the cost of a pause instruction varies 10x across CPUs.
  if (spin) {
    while (Clock::now() - start < std::chrono::microseconds(50)) {
      for (int i = 0; i < 16; ++i) {
        if (ready()) return;
        cpu_relax();
      }
    }
  }
  while (Clock::now() - start < std::chrono::microseconds(spin ? 150 : 100)) {
    if (ready()) return;
    sched_yield();
  }
  auto next_health = Clock::now() + std::chrono::milliseconds(100);
  while (true) {
    const uint32_t epoch = word.epoch.load();
    word.sleepers.fetch_add(1);
    if (ready()) {
      word.sleepers.fetch_sub(1);
      return;
    }
    futex_sleep(&word.epoch, epoch, std::chrono::milliseconds(20));
    word.sleepers.fetch_sub(1);
    if (ready()) return;
    const auto now = Clock::now();
    if (now >= next_health) {
      health(now);
      next_health = now + std::chrono::milliseconds(100);
    }
  }
}

}  // namespace domino::shm
