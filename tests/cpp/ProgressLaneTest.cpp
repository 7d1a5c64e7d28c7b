#include <gtest/gtest.h>

#include <mutex>
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
