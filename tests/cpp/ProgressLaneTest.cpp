#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/ProgressLane.h"

namespace domino {
namespace {

TEST(ProgressLane, RunsJobsInIssueOrderOffTheCallingThread) {
  std::vector<int> order;
  std::mutex mutex;
  const auto caller = std::this_thread::get_id();
  bool off_thread = true;
  {
    ProgressLane lane;
    for (int i = 0; i < 100; ++i) {
      lane.submit([&, i] {
        std::lock_guard<std::mutex> lock(mutex);
        off_thread = off_thread && std::this_thread::get_id() != caller;
        order.push_back(i);
      });
    }
  }  // the destructor drains the queue
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_TRUE(off_thread);
}

}  // namespace
}  // namespace domino

namespace domino {
namespace {

TEST(ProgressLane, AWaiterRunsAnUnstartedJobItself) {
  ProgressLane lane;
  std::thread::id ran_on;
  const uint64_t ticket = lane.submit([&] { ran_on = std::this_thread::get_id(); }, /*wake=*/false);
  EXPECT_TRUE(lane.run_now(ticket));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_FALSE(lane.run_now(ticket));  // already taken
}

TEST(ProgressLane, RunNowRespectsIssueOrder) {
  ProgressLane lane;
  std::mutex mutex;
  std::condition_variable released;
  bool go = false;
  std::vector<int> order;
  lane.submit([&] {
    std::unique_lock<std::mutex> lock(mutex);
    released.wait(lock, [&] { return go; });
    order.push_back(1);
  });
  const uint64_t second = lane.submit(
      [&] {
        std::lock_guard<std::mutex> lock(mutex);
        order.push_back(2);
      },
      /*wake=*/false);
  // The first job is still running on the lane, so the second must not jump ahead.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(lane.run_now(second));
  {
    std::lock_guard<std::mutex> lock(mutex);
    go = true;
  }
  released.notify_all();
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard<std::mutex> lock(mutex);
    if (order.size() == 2) break;
  }
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace domino
