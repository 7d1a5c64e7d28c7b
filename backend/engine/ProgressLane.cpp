#include "ProgressLane.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace domino {

ProgressLane::ProgressLane(int nice, std::vector<int> cpus)
    : thread_([this, nice, cpus = std::move(cpus)] {
        const auto tid = static_cast<pid_t>(syscall(SYS_gettid));
        if (nice != 0) setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice);
        if (!cpus.empty()) {
          cpu_set_t set;
          CPU_ZERO(&set);
          for (int cpu : cpus) {
            if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
          }
          sched_setaffinity(tid, sizeof set, &set);  // best effort: a refused mask changes nothing
        }
        run();
      }) {}

ProgressLane::~ProgressLane() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  thread_.join();
}

uint64_t ProgressLane::submit(std::function<void()> job, bool wake) {
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ticket = next_ticket_++;
    jobs_.push_back({ticket, std::move(job)});
  }
  if (wake) ready_.notify_all();
  return ticket;
}

void ProgressLane::wake() {
  ready_.notify_all();
}

bool ProgressLane::run_now(uint64_t ticket) {
  std::function<void()> job;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_ || jobs_.empty() || jobs_.front().ticket != ticket) return false;
    job = std::move(jobs_.front().job);
    jobs_.pop_front();
    running_ = true;
  }
  run_claimed(job);
  return true;
}

void ProgressLane::finish_one() {
  bool lane_has_work = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    lane_has_work = !jobs_.empty() || stopping_;
  }
  // Waking an idle lane for nothing costs two context switches per blocking collective.
  if (lane_has_work) ready_.notify_all();
}

void ProgressLane::run() {
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock,
                  [this] { return (stopping_ && !running_) || (!running_ && !jobs_.empty()); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front().job);
      jobs_.pop_front();
      running_ = true;
    }
    job();
    finish_one();
  }
}

}  // namespace domino
