// A thread that runs one group's communication jobs in the order they were issued, so callers get
// a handle at once and their compute overlaps the transfer. A caller that waits for a job the
// thread has not started yet may run it itself (run_now): a blocking collective then costs no
// thread hand-off at all, while an async one still overlaps.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "plugins/common/SpinPolicy.h"

namespace domino {

// Where a thread of the group runs: its niceness (Linux, per thread) and the cores it may use
// (the rank's own; empty leaves it unbound).
struct ThreadPlacement {
  int nice = 0;
  std::vector<int> cpus;
};

class ProgressLane {
 public:
  // nice: the thread's niceness (Linux, per thread); a low lane runs nicer so that the caller's
  // threads, which issue the urgent work, win the cores when ranks outnumber them.
  // cpus: where the thread may run (the rank's own cores); empty leaves it unbound.
  explicit ProgressLane(int nice = 0, std::vector<int> cpus = {});
  ProgressLane(const ProgressLane&) = delete;
  ProgressLane& operator=(const ProgressLane&) = delete;
  // Runs every job already queued, then joins.
  ~ProgressLane();

  // Jobs must not throw: each reports its own outcome to its handle. Returns the job's ticket.
  // wake=false leaves an idle lane asleep, for a job its caller is about to wait on (and so run
  // itself through run_now); a busy lane still reaches it in order.
  uint64_t submit(std::function<void()> job, bool wake = true);

  // Runs job `ticket` on the calling thread if it is next in line and nothing is running.
  // Returns false when the lane thread has it or earlier jobs are still pending.
  bool run_now(uint64_t ticket);

  // Runs fn on the calling thread at once when nothing is queued or running, in the lane's order
  // as if it were the next job, and returns true; false (fn not run) otherwise. The blocking op's
  // way past the queue: no job to allocate, no hand-off, no ticket. fn must not throw.
  template <class Fn>
  bool run_if_idle(Fn&& fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (running_ || !jobs_.empty()) return false;
      running_ = true;
    }
    run_claimed(std::forward<Fn>(fn));
    return true;
  }

  // Makes an idle lane look at its queue (a job submitted with wake=false that its caller will
  // not run after all).
  void wake();

 private:
  struct Entry {
    uint64_t ticket;
    std::function<void()> job;
  };
  void run();
  void finish_one();
  // Runs fn on the caller, which claimed the lane (running_), then releases it.
  template <class Fn>
  void run_claimed(Fn&& fn) {
    // Released even if fn throws (a job's own handler can fail to allocate): a lane left
    // claimed would never run another job.
    struct Release {
      ProgressLane* lane;
      ~Release() { lane->finish_one(); }
    } release{this};
    // The caller's own thread runs its op and has nothing else to do until it ends.
    SpinMayYield caller_waits;
    fn();
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Entry> jobs_;
  uint64_t next_ticket_ = 1;
  bool running_ = false;  // a job is executing, on the lane or on a caller
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace domino
