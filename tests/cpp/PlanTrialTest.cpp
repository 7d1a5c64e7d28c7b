// The small-message plan trial: round robin over the candidates, warm-ups dropped, the plan
// with the lowest agreed time adopted.
#include <gtest/gtest.h>

#include "engine/PlanTrial.h"

namespace domino {
namespace {

using topology::PlanKind;

TEST(PlanTrial, TriesEachPlanInTurnThenAdoptsTheFastest) {
  PlanTrial trial({PlanKind::kHierarchical, PlanKind::kLeader, PlanKind::kFlatInter});
  const double cost[] = {3e-4, 2e-4, 1e-4};
  int calls = 0;
  while (!trial.measured()) {
    ASSERT_FALSE(trial.decided());
    const PlanKind kind = trial.next();
    EXPECT_EQ(kind, trial.candidates()[static_cast<size_t>(calls) % 3]);
    // The warm-up call of each plan is absurdly slow and must not count.
    trial.record(calls < 3 ? 1.0 : cost[calls % 3]);
    ++calls;
  }
  EXPECT_EQ(calls, PlanTrial::kCallsPerPlan * 3);
  const std::vector<double> medians = trial.medians();
  EXPECT_DOUBLE_EQ(medians[0], 3e-4);
  EXPECT_DOUBLE_EQ(medians[2], 1e-4);
  // Another rank saw flat_inter slower: the group's slowest times decide.
  trial.adopt({3e-4, 2e-4, 5e-4});
  ASSERT_TRUE(trial.decided());
  EXPECT_EQ(trial.winner(), PlanKind::kLeader);
  EXPECT_FALSE(trial.measured());
}

TEST(PlanTrial, OneCandidateNeedsNoTrial) {
  PlanTrial trial({PlanKind::kFlatInter});
  EXPECT_TRUE(trial.decided());
  EXPECT_EQ(trial.winner(), PlanKind::kFlatInter);
}

}  // namespace
}  // namespace domino
