#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>

#include "engine/LaneSet.h"
#include "engine/ProgressLane.h"

namespace domino {
namespace {

constexpr int kHigh = 0, kNormal = 1, kLow = 2;

TEST(LaneSet, EachPriorityAndDirectionHasItsOwnLaneUntilStopped) {
  LaneSet lanes;
  EXPECT_EQ(lanes.lane(Route::kCollective, kNormal), nullptr);
  lanes.start({});
  ProgressLane* high = lanes.lane(Route::kCollective, kHigh);
  ProgressLane* normal = lanes.lane(Route::kCollective, kNormal);
  ProgressLane* low = lanes.lane(Route::kCollective, kLow);
  ProgressLane* send = lanes.lane(Route::kSend, kHigh);
  ProgressLane* recv = lanes.lane(Route::kRecv, kHigh);
  for (ProgressLane* lane : {high, normal, low, send, recv}) ASSERT_NE(lane, nullptr);
  EXPECT_EQ(lanes.lane(Route::kSend, kLow), send);  // priority picks collectives' lanes only
  EXPECT_NE(high, normal);
  EXPECT_NE(normal, low);
  EXPECT_NE(send, recv);
  EXPECT_NE(send, normal);
  lanes.stop();
  EXPECT_EQ(lanes.lane(Route::kCollective, kHigh), nullptr);
  EXPECT_EQ(lanes.lane(Route::kRecv, kHigh), nullptr);
}

TEST(LaneSet, TheLowLaneRunsNicerOnTheRanksCores) {
  EXPECT_EQ(LaneSet::placement(kHigh, {3}).nice, 0);
  EXPECT_EQ(LaneSet::placement(kNormal, {3}).nice, 0);
  EXPECT_GT(LaneSet::placement(kLow, {3}).nice, 0);
  EXPECT_EQ(LaneSet::placement(kLow, {3, 4}).cpus, (std::vector<int>{3, 4}));
}

// The group's shutdown relies on it: a job queued without waking its lane still runs before the
// lane's thread is joined, and the low lane's thread really runs nicer.
TEST(LaneSet, StopRunsEveryQueuedJobAndTheLowLaneThreadIsNicer) {
  LaneSet lanes;
  lanes.start({});
  std::atomic<int> ran{0};
  std::atomic<int> low_nice{-100}, normal_nice{-100};
  lanes.lane(Route::kCollective, kLow)->submit([&] {
    low_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  });
  lanes.lane(Route::kCollective, kNormal)->submit([&] {
    normal_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  });
  for (int i = 0; i < 20; ++i) {
    for (Route route : {Route::kCollective, Route::kSend, Route::kRecv}) {
      lanes.lane(route, kNormal)->submit([&] { ++ran; }, /*wake=*/false);
    }
  }
  lanes.stop();
  EXPECT_EQ(ran.load(), 60);
  EXPECT_GT(low_nice.load(), normal_nice.load());
}

TEST(LaneSet, LowerLanesPauseWhileAMoreUrgentOneHasCollectivesPending) {
  LaneSet lanes;
  domino_comm_config_t high{}, normal{}, low{};
  lanes.pause_for_higher(kHigh, high);
  lanes.pause_for_higher(kNormal, normal);
  lanes.pause_for_higher(kLow, low);
  EXPECT_EQ(high.should_pause, nullptr);  // nothing outranks the high lane
  ASSERT_NE(normal.should_pause, nullptr);
  ASSERT_NE(low.should_pause, nullptr);
  auto pauses = [](const domino_comm_config_t& c) { return c.should_pause(c.pause_context); };

  EXPECT_EQ(pauses(normal), 0);
  EXPECT_EQ(pauses(low), 0);
  lanes.queued(kNormal);
  EXPECT_EQ(pauses(normal), 0);
  EXPECT_EQ(pauses(low), 1);
  lanes.queued(kHigh);
  EXPECT_EQ(pauses(normal), 1);
  lanes.finished(kHigh);
  lanes.finished(kNormal);
  EXPECT_EQ(pauses(normal), 0);
  EXPECT_EQ(pauses(low), 0);
  lanes.queued(kLow);
  EXPECT_FALSE(lanes.higher_priority_pending(kLow));
  lanes.finished(kLow);

  // Issued counts stay after the collectives finish.
  EXPECT_EQ(lanes.issued(), (std::array<uint64_t, LaneSet::kPriorities>{1, 1, 1}));
}

}  // namespace
}  // namespace domino
