#include "DeviceWatchdog.h"

#include <iterator>

namespace domino {

namespace {
// How often finished work is dropped and deadlines are checked: late by at most this much.
constexpr auto kPoll = std::chrono::milliseconds(100);
}  // namespace

DeviceWatchdog::DeviceWatchdog(std::chrono::milliseconds timeout,
                               std::function<void(const std::string& what)> on_timeout)
    : timeout_(timeout), on_timeout_(std::move(on_timeout)), thread_([this] { run(); }) {}

DeviceWatchdog::~DeviceWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void DeviceWatchdog::watch(std::function<bool()> finished, std::string what) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fired_ || stopping_) return;
  watched_.push_back(
      {std::move(finished), std::move(what), std::chrono::steady_clock::now() + timeout_});
}

void DeviceWatchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kPoll, [this] { return stopping_; });
    if (stopping_ || fired_) continue;
    // Asked outside the lock so that issuing work never waits on the driver here.
    std::vector<Watched> batch;
    batch.swap(watched_);
    lock.unlock();
    const auto now = std::chrono::steady_clock::now();
    std::vector<Watched> pending;
    std::string missed;
    for (Watched& w : batch) {
      try {
        if (w.finished()) continue;
      } catch (const std::exception& e) {
        // A device that cannot say (a sticky CUDA error) is treated as hung: never let an
        // exception end this thread, which would end the process.
        if (missed.empty()) missed = w.what + " (its state could not be read: " + e.what() + ")";
      }
      if (now > w.deadline && missed.empty()) missed = w.what;
      pending.push_back(std::move(w));
    }
    if (!missed.empty()) {
      try {
        on_timeout_(missed);
      } catch (...) {  // the abort is best effort; the group is marked failed either way
      }
    }
    lock.lock();
    if (!missed.empty()) {
      fired_ = true;
      watched_.clear();
      continue;
    }
    // Work watched meanwhile goes after what was already pending: order is by deadline.
    pending.insert(pending.end(), std::make_move_iterator(watched_.begin()),
                   std::make_move_iterator(watched_.end()));
    watched_.swap(pending);
  }
}

}  // namespace domino
