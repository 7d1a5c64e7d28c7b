// Watches device work after it is enqueued: a transfer that a dead or absent peer never finishes
// would otherwise leave the caller's stream waiting forever (NCCL's kernels spin). Each watched
// work has a deadline; the first one missed calls on_timeout once (the backend then aborts the
// group's device communicators), and watching stops. Torch-free: work is a "finished?" query.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace domino {

class DeviceWatchdog {
 public:
  DeviceWatchdog(std::chrono::milliseconds timeout,
                 std::function<void(const std::string& what)> on_timeout);
  DeviceWatchdog(const DeviceWatchdog&) = delete;
  DeviceWatchdog& operator=(const DeviceWatchdog&) = delete;
  ~DeviceWatchdog();

  // finished: whether the work is done (e.g. its end event's query), asked from the watchdog's
  // thread until it says yes; what: the op, for the message.
  void watch(std::function<bool()> finished, std::string what);

 private:
  struct Watched {
    std::function<bool()> finished;
    std::string what;
    std::chrono::steady_clock::time_point deadline;
  };
  void run();

  const std::chrono::milliseconds timeout_;
  std::function<void(const std::string&)> on_timeout_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Watched> watched_;
  bool stopping_ = false;
  bool fired_ = false;
  std::thread thread_;
};

}  // namespace domino
