// The small-message plan trial: blocks of consecutive calls per candidate in rounds, each
// block's first calls dropped, the plan with the lowest agreed time adopted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/PlanTrial.h"

namespace domino {
namespace {

TEST(PlanTrial, TriesEachPlanInBlocksThenAdoptsTheFastest) {
  PlanTrial trial({"hierarchical", "leader", "flat_inter"});
  const double cost[] = {3e-4, 2e-4, 1e-4};
  int calls = 0;
  std::vector<std::string> order;
  while (!trial.measured()) {
    ASSERT_FALSE(trial.decided());
    const std::string kind = trial.next();
    order.push_back(kind);
    const size_t plan = static_cast<size_t>(calls / PlanTrial::kCallsPerBlock) % 3;
    EXPECT_EQ(kind, trial.candidates()[plan]);
    // The first calls of each block find the ranks' waits cold: absurdly slow, must not count.
    const bool warm_up = calls % PlanTrial::kCallsPerBlock < PlanTrial::kWarmUpPerBlock;
    trial.record(warm_up ? 1.0 : cost[plan]);
    ++calls;
  }
  EXPECT_EQ(calls, PlanTrial::kRounds * PlanTrial::kCallsPerBlock * 3);
  EXPECT_EQ(calls, trial.calls_needed());
  // Consecutive calls stay on one plan for a block; every plan comes back each round.
  EXPECT_EQ(order[0], order[PlanTrial::kCallsPerBlock - 1]);
  EXPECT_NE(order[0], order[PlanTrial::kCallsPerBlock]);
  EXPECT_EQ(order[0], order[3 * PlanTrial::kCallsPerBlock]);
  const std::vector<double> medians = trial.medians();
  EXPECT_DOUBLE_EQ(medians[0], 3e-4);
  EXPECT_DOUBLE_EQ(medians[2], 1e-4);
  // Another rank saw flat_inter slower: the group's slowest times decide.
  trial.adopt({3e-4, 2e-4, 5e-4});
  ASSERT_TRUE(trial.decided());
  EXPECT_EQ(trial.winner(), "leader");
  EXPECT_FALSE(trial.measured());
}

TEST(PlanTrial, OneCandidateNeedsNoTrial) {
  PlanTrial trial({"flat_inter"});
  EXPECT_TRUE(trial.decided());
  EXPECT_EQ(trial.winner(), "flat_inter");
}

}  // namespace
}  // namespace domino
