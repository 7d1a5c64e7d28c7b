// A thread that runs one group's communication jobs in the order they were issued, so callers get
// a handle at once and their compute overlaps the transfer.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace domino {

class ProgressLane {
 public:
  ProgressLane();
  ProgressLane(const ProgressLane&) = delete;
  ProgressLane& operator=(const ProgressLane&) = delete;
  // Runs every job already queued, then joins.
  ~ProgressLane();

  // Jobs must not throw: each reports its own outcome to its handle.
  void submit(std::function<void()> job);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace domino
