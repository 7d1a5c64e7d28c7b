// A new two-level plan added as data alone: a template of steps for gather, which ships with
// none. With nothing else changed, the router weighs it and chooses it where it is cheapest, the
// routing report shows its steps, the lane builds the communicators it steps on, and the
// executor runs it across simulated hosts, pipelined. Its own binary (with the added
// algorithm), so that the rest of the suite sees the plans as built.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "support/CheckedComm.h"
#include "support/CollectiveChecks.h"
#include "support/RoutedGroup.h"
#include "topology/PlanTemplates.h"
#include "topology/RoutingReport.h"

namespace domino {
namespace {

using topology::Blocks;
using topology::Buffer;
using topology::Collective;
using topology::Level;
using topology::Members;
using topology::PlanKind;
using topology::RootIs;

// Inside every host to the rank on the root's rail, then along that rail to the root, which
// puts the blocks in group order.
topology::Plan rail_gather() {
  topology::Plan plan;
  plan.kind = PlanKind::kHierarchical;
  plan.op = Collective::kGather;
  plan.needs_uniform = true;
  plan.pipelined = true;
  topology::Step in_host;
  in_host.level = Level::kHost;
  in_host.op = Collective::kGather;
  in_host.in = {Buffer::kSend, Blocks::kOne};
  in_host.out = {Buffer::kScratch0, Blocks::kHostRanks};
  in_host.root = RootIs::kRootLocal;
  topology::Step on_rail;
  on_rail.level = Level::kRail;
  on_rail.inter = true;
  on_rail.op = Collective::kGather;
  on_rail.in = {Buffer::kScratch0, Blocks::kHostRanks};
  on_rail.out = {Buffer::kScratch1, Blocks::kHostsByMost};
  on_rail.members = Members::kRootRail;
  on_rail.root = RootIs::kRootHost;
  topology::Step in_place;
  in_place.action = topology::Action::kFromHostOrder;
  in_place.order = topology::BlockOrder::kHostMajor;
  in_place.in = {Buffer::kScratch1, Blocks::kHostsByMost};
  in_place.out = {Buffer::kRecv, Blocks::kGroup};
  in_place.members = Members::kRoot;
  plan.steps = {in_host, on_rail, in_place};
  return plan;
}

const std::vector<std::string> kTwoByThree = {"a", "a", "a", "b", "b", "b"};

class AddedPlan : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (topology::find_plan_template(PlanKind::kHierarchical, Collective::kGather) == nullptr) {
      topology::add_plan_template(rail_gather());
    }
  }
};

TEST_F(AddedPlan, TheRouterChoosesItAndTheReportShowsItsSteps) {
  const topology::Router router(topology::layout_from_host_ids(kTwoByThree), {}, {});
  // One rank's 1 MiB block: through the hosts, each host's three blocks cross the link once
  // on one rail, where a flat gather sends every block to the root over the link.
  const topology::Plan plan = router.choose(Collective::kGather, 1 << 20);
  EXPECT_EQ(plan.kind, PlanKind::kHierarchical);
  EXPECT_EQ(plan.describe(), "gather@host:segment > gather@rail:direct > from_host_order x3");
  bool reported = false;
  for (const topology::RoutingRow& row : topology::routing_report(router, {1 << 20})) {
    if (row.op == Collective::kGather) reported = row.chosen.describe() == plan.describe();
  }
  EXPECT_TRUE(reported);
  // Where it cannot run (no rails), it is no candidate.
  const topology::Router uneven(topology::layout_from_host_ids({"a", "a", "b"}), {}, {});
  EXPECT_EQ(uneven.choose(Collective::kGather, 1 << 20).kind, PlanKind::kFlatInter);
}

TEST_F(AddedPlan, TheExecutorRunsItPipelinedFromEveryRoot) {
  topology::RouterOptions forced;
  forced.forced_plan = PlanKind::kHierarchical;
  const auto outcomes =
      testing::run_routed(kTwoByThree, forced, [](int rank, int size, RoutedComm& comm) {
        // 700001 int64 per rank: 33.6 MB gathered, 16 chunks through the rail's pipeline.
        for (size_t n : {size_t{0}, size_t{5}, size_t{700001}}) {
          std::vector<int64_t> mine(n);
          for (size_t i = 0; i < n; ++i) mine[i] = testing::v(rank, i);
          for (int root = 0; root < size; ++root) {
            std::vector<int64_t> all(rank == root ? n * static_cast<size_t>(size) : 0, -1);
            testing::CheckedComm{comm}.gather(testing::buf(mine), testing::buf(all), root);
            if (comm.last_plan() != "hierarchical") return "gather took " + comm.last_plan();
            if (rank != root) continue;
            std::vector<int64_t> want(all.size());
            for (int r = 0; r < size; ++r) {
              for (size_t i = 0; i < n; ++i)
                want[static_cast<size_t>(r) * n + i] = testing::v(r, i);
            }
            if (auto e = testing::expect_eq(all, want, "gather"); !e.empty()) {
              return e + " (root " + std::to_string(root) + ")";
            }
          }
        }
        return std::string();
      });
  for (size_t r = 0; r < kTwoByThree.size(); ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
  }
}

TEST_F(AddedPlan, AMalformedOrDuplicateTemplateIsRefused) {
  const topology::Plan* built_in_scatter =
      topology::find_plan_template(PlanKind::kLeader, Collective::kScatter);
  EXPECT_THROW(topology::add_plan_template(rail_gather()), std::invalid_argument);  // a second
  topology::Plan unread = rail_gather();
  unread.op = Collective::kScatter;
  unread.steps.erase(unread.steps.begin());  // the rail step reads scratch nothing wrote
  EXPECT_THROW(topology::add_plan_template(unread), std::invalid_argument);
  topology::Plan rootless = rail_gather();
  rootless.op = Collective::kScatter;
  rootless.steps[1].root = RootIs::kNone;
  EXPECT_THROW(topology::add_plan_template(rootless), std::invalid_argument);
  topology::Plan flat = rail_gather();
  flat.kind = PlanKind::kFlatInter;
  EXPECT_THROW(topology::add_plan_template(flat), std::invalid_argument);
  // Rails of a 2+1 layout differ in length: a rail step needs a uniform layout, pipelined or not.
  topology::Plan uneven_rails = rail_gather();
  uneven_rails.op = Collective::kScatter;
  uneven_rails.pipelined = false;
  uneven_rails.needs_uniform = false;
  EXPECT_THROW(topology::add_plan_template(uneven_rails), std::invalid_argument);
  // Only the leaders take part in a leaders step.
  topology::Plan leaders_for_all = rail_gather();
  leaders_for_all.op = Collective::kScatter;
  leaders_for_all.kind = PlanKind::kLeader;
  leaders_for_all.pipelined = false;
  leaders_for_all.steps[1].level = Level::kLeaders;
  leaders_for_all.steps[1].members = Members::kAll;
  EXPECT_THROW(topology::add_plan_template(leaders_for_all), std::invalid_argument);
  EXPECT_EQ(topology::find_plan_template(PlanKind::kHierarchical, Collective::kScatter), nullptr);
  EXPECT_EQ(topology::find_plan_template(PlanKind::kLeader, Collective::kScatter),
            built_in_scatter);
}

}  // namespace
}  // namespace domino
