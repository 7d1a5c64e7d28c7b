#include "engine/DeviceWatchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace domino {
namespace {

using namespace std::chrono_literals;

struct Fired {
  std::mutex mutex;
  std::vector<std::string> ops;
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> lock(mutex);
    return ops;
  }
};

TEST(DeviceWatchdog, WorkThatNeverFinishesFiresOnceAfterTheTimeout) {
  Fired fired;
  const auto started = std::chrono::steady_clock::now();
  std::atomic<long> fired_after_ms{-1};
  DeviceWatchdog watchdog(300ms, [&](const std::string& what) {
    fired_after_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - started)
                         .count();
    std::lock_guard<std::mutex> lock(fired.mutex);
    fired.ops.push_back(what);
  });
  watchdog.watch([] { return true; }, "finished at once");
  watchdog.watch([] { return false; }, "ALLREDUCE");
  watchdog.watch([] { return false; }, "BROADCAST");
  for (int i = 0; i < 40 && fired.seen().empty(); ++i) std::this_thread::sleep_for(50ms);
  std::this_thread::sleep_for(400ms);  // nothing more after the first
  ASSERT_EQ(fired.seen(), std::vector<std::string>{"ALLREDUCE"});
  EXPECT_GE(fired_after_ms.load(), 300);
  EXPECT_LT(fired_after_ms.load(), 1500);
  watchdog.watch([] { return false; }, "after firing");  // ignored: the group is aborted
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(fired.seen().size(), 1u);
}

TEST(DeviceWatchdog, WorkThatFinishesBeforeItsDeadlineNeverFires) {
  Fired fired;
  std::atomic<bool> done{false};
  {
    DeviceWatchdog watchdog(1500ms, [&](const std::string& what) {
      std::lock_guard<std::mutex> lock(fired.mutex);
      fired.ops.push_back(what);
    });
    watchdog.watch([&] { return done.load(); }, "ALLGATHER");
    std::this_thread::sleep_for(100ms);
    done = true;
    std::this_thread::sleep_for(600ms);
  }  // stops and joins promptly
  EXPECT_TRUE(fired.seen().empty());
}

TEST(DeviceWatchdog, AQueryThatThrowsCountsAsHungAndDoesNotEndTheProcess) {
  Fired fired;
  DeviceWatchdog watchdog(200ms, [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(fired.mutex);
    fired.ops.push_back(what);
    throw std::runtime_error("abort failed too");  // swallowed by the watchdog
  });
  watchdog.watch([]() -> bool { throw std::runtime_error("sticky device error"); }, "REDUCE");
  for (int i = 0; i < 40 && fired.seen().empty(); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_EQ(fired.seen().size(), 1u);
  EXPECT_NE(fired.seen()[0].find("sticky device error"), std::string::npos) << fired.seen()[0];
}

}  // namespace
}  // namespace domino
