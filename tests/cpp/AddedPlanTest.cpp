// A new plan shape added in one file, this one: it registers "root_rail", a gather along the
// root's rail (the built-in shapes have none), and with nothing else changed the router prices
// it and chooses it where it is cheapest, the routing report names it, DOMINO_ALGO forces it by
// its name, the lane builds the communicators it steps on, and the executor runs it across
// simulated hosts, pipelined. Its own binary (with the added algorithm), so that the rest of the
// suite sees the shapes as built.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "config/Settings.h"
#include "support/CheckedComm.h"
#include "support/CollectiveChecks.h"
#include "support/RoutedGroup.h"
#include "topology/PlanShapes.h"
#include "topology/RoutingReport.h"

namespace domino {
namespace {

using topology::Action;
using topology::Blocks;
using topology::Buffer;
using topology::Collective;
using topology::Level;
using topology::Members;
using topology::RootIs;

// Inside every host to the rank on the root's rail, then along that rail to the root, which
// puts the blocks in group order.
topology::Plan rail_gather() {
  const topology::View hosts_blocks{Buffer::kScratch0, Blocks::kHostRanks};
  const topology::View grid{Buffer::kScratch1, Blocks::kHostsByMost};
  return topology::two_level_template(
      Collective::kGather,
      {topology::collective_step(Level::kHost, Collective::kGather, topology::kSendOne,
                                 hosts_blocks, Members::kAll, RootIs::kRootLocal),
       topology::collective_step(Level::kRail, Collective::kGather, hosts_blocks, grid,
                                 Members::kRootRail, RootIs::kRootHost),
       topology::local_step(Action::kFromHostOrder, topology::BlockOrder::kHostMajor, grid,
                            topology::kRecvGroup, Members::kRoot)},
      true);
}

const bool registered =
    topology::add_plan_shape({"root_rail",
                              "gather inside each host to the root's rail, then along it",
                              "",
                              topology::across_hosts,
                              {rail_gather()}});

const std::vector<std::string> kTwoByThree = {"a", "a", "a", "b", "b", "b"};

TEST(AddedPlan, TheRouterPricesItChoosesItWhereCheapestAndTheReportNamesIt) {
  ASSERT_TRUE(registered);
  const topology::Router router(topology::layout_from_host_ids(kTwoByThree), {}, {});
  // One rank's 1 MiB block: along the rail, each host's three blocks cross the link once in one
  // message, where a flat gather sends every block to the root over the link.
  const std::vector<topology::Plan> plans = router.candidates(Collective::kGather, 1 << 20);
  ASSERT_EQ(plans.size(), 3u);  // flat_inter, leader and it
  EXPECT_EQ(plans.front().shape, "root_rail");
  EXPECT_GT(plans.front().predicted_us, 0);
  EXPECT_LT(plans.front().predicted_us, plans[1].predicted_us);
  const topology::Plan plan = router.choose(Collective::kGather, 1 << 20);
  EXPECT_EQ(plan.shape, "root_rail");
  EXPECT_FALSE(plan.forced);
  EXPECT_EQ(plan.describe(), "gather@host:segment > gather@rail:direct > from_host_order x3");
  bool reported = false;
  for (const topology::RoutingRow& row : topology::routing_report(router, {1 << 20})) {
    if (row.op != Collective::kGather) continue;
    reported = row.chosen.shape == "root_rail" && row.chosen.describe() == plan.describe();
  }
  EXPECT_TRUE(reported);
  // It serves gather alone; where it cannot run (no rails), it is no candidate.
  EXPECT_NE(router.choose(Collective::kScatter, 1 << 20).shape, "root_rail");
  const topology::Router uneven(topology::layout_from_host_ids({"a", "a", "b"}), {}, {});
  for (const topology::Plan& p : uneven.candidates(Collective::kGather, 1 << 20)) {
    EXPECT_NE(p.shape, "root_rail");
  }
  EXPECT_EQ(uneven.choose(Collective::kGather, 1 << 20).shape, "flat_inter");
}

TEST(AddedPlan, DominoAlgoForcesItByItsName) {
  const Settings settings = parse_settings({{"DOMINO_ALGO", "root_rail,ring"}}).settings;
  EXPECT_EQ(settings.plan, "root_rail");
  try {
    parse_settings({{"DOMINO_ALGO", "root_rails"}});
    ADD_FAILURE() << "DOMINO_ALGO=root_rails was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("one plan (flat, hierarchical, leader, root_rail)"),
              std::string::npos)
        << e.what();
  }
  topology::RouterOptions options;
  options.forced_plan = settings.plan;
  const topology::Router router(topology::layout_from_host_ids(kTwoByThree), {}, options);
  // 8 bytes: the flat gather is cheaper, but the forced shape wins where it serves.
  const topology::Router unforced(topology::layout_from_host_ids(kTwoByThree), {}, {});
  EXPECT_NE(unforced.choose(Collective::kGather, 8).shape, "root_rail");
  const topology::Plan plan = router.choose(Collective::kGather, 8);
  EXPECT_EQ(plan.shape, "root_rail");
  EXPECT_TRUE(plan.forced);
  EXPECT_NE(router.choose(Collective::kAllReduce, 8).shape, "root_rail");  // others: by cost
  EXPECT_TRUE(router.steps_on(Level::kRail));
}

TEST(AddedPlan, TheExecutorRunsItPipelinedFromEveryRoot) {
  topology::RouterOptions forced;
  forced.forced_plan = "root_rail";
  const auto outcomes =
      testing::run_routed(kTwoByThree, forced, [](int rank, int size, RoutedComm& comm) {
        // 700001 int64 per rank: 33.6 MB gathered, 16 chunks through the rail's pipeline.
        for (size_t n : {size_t{0}, size_t{5}, size_t{700001}}) {
          std::vector<int64_t> mine(n);
          for (size_t i = 0; i < n; ++i) mine[i] = testing::v(rank, i);
          for (int root = 0; root < size; ++root) {
            std::vector<int64_t> all(rank == root ? n * static_cast<size_t>(size) : 0, -1);
            testing::CheckedComm{comm}.gather(testing::buf(mine), testing::buf(all), root);
            if (comm.last_plan() != "root_rail") return "gather took " + comm.last_plan();
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

// A shape named so, serving gather by `plan`.
topology::PlanShape shape_of(std::string_view name, topology::Plan plan) {
  return {name, "malformed", "", topology::across_hosts, {std::move(plan)}};
}

TEST(AddedPlan, AMalformedOrTakenShapeIsRefused) {
  const size_t shapes = topology::plan_shapes().size();
  EXPECT_THROW(topology::add_plan_shape(shape_of("root_rail", rail_gather())),
               std::invalid_argument);
  EXPECT_THROW(topology::add_plan_shape(shape_of("flat", rail_gather())),  // DOMINO_ALGO's word
               std::invalid_argument);
  EXPECT_THROW(topology::add_plan_shape(shape_of("", rail_gather())), std::invalid_argument);
  // DOMINO_ALGO lowercases what it is given, and reads a plan's word before an algorithm's.
  EXPECT_THROW(topology::add_plan_shape(shape_of("Rail_Gather", rail_gather())),
               std::invalid_argument);
  topology::PlanShape shouting = shape_of("rail_gather", rail_gather());
  shouting.forced_as = "RAIL";
  EXPECT_THROW(topology::add_plan_shape(shouting), std::invalid_argument);
  EXPECT_THROW(topology::add_plan_shape(shape_of("rabenseifner", rail_gather())),
               std::invalid_argument);
  EXPECT_THROW(topology::add_plan_shape(shape_of("rsag", rail_gather())), std::invalid_argument);
  topology::PlanShape no_layouts = shape_of("broken", rail_gather());
  no_layouts.feasible = nullptr;
  EXPECT_THROW(topology::add_plan_shape(no_layouts), std::invalid_argument);
  topology::PlanShape twice = shape_of("broken", rail_gather());
  twice.templates.push_back(rail_gather());
  EXPECT_THROW(topology::add_plan_shape(twice), std::invalid_argument);
  topology::Plan unread = rail_gather();
  unread.steps.erase(unread.steps.begin());  // the rail step reads scratch nothing wrote
  EXPECT_THROW(topology::add_plan_shape(shape_of("broken", unread)), std::invalid_argument);
  topology::Plan rootless = rail_gather();
  rootless.steps[1].root = RootIs::kNone;
  EXPECT_THROW(topology::add_plan_shape(shape_of("broken", rootless)), std::invalid_argument);
  // The whole group's communicator takes a call as it is: a flat plan's one step, not one of many.
  topology::Plan on_group = rail_gather();
  on_group.steps[1].level = Level::kGroup;
  EXPECT_THROW(topology::add_plan_shape(shape_of("broken", on_group)), std::invalid_argument);
  // Rails of a 2+1 layout differ in length: a rail step needs a uniform layout, pipelined or not.
  topology::Plan uneven_rails = rail_gather();
  uneven_rails.pipelined = false;
  uneven_rails.needs_uniform = false;
  EXPECT_THROW(topology::add_plan_shape(shape_of("broken", uneven_rails)), std::invalid_argument);
  // Only the leaders take part in a leaders step.
  topology::Plan leaders_for_all = rail_gather();
  leaders_for_all.pipelined = false;
  leaders_for_all.steps[1].level = Level::kLeaders;
  leaders_for_all.steps[1].members = Members::kAll;
  EXPECT_THROW(topology::add_plan_shape(shape_of("broken", leaders_for_all)),
               std::invalid_argument);
  EXPECT_EQ(topology::find_plan_shape("broken"), nullptr);
  EXPECT_EQ(topology::plan_shapes().size(), shapes);
}

// Last in this binary: it registers a shape the tests above must not see. A lane builds host,
// rail and leaders communicators only across hosts, so on one host a shape that steps on them is
// no candidate and cannot be forced, whatever its own layout rule says (it would otherwise take
// its host step for a copy on a rank alone and return wrong sums).
TEST(AddedPlan, OnOneHostAShapeThatStepsOnLevelsIsNoCandidate) {
  topology::PlanShape anywhere = shape_of("rail_anywhere", rail_gather());
  anywhere.feasible = [](const topology::GroupLayout&, bool) { return true; };
  topology::add_plan_shape(anywhere);
  const topology::GroupLayout one_host = topology::layout_from_host_ids({"a", "a", "a"});
  const topology::Router router(one_host, {}, {});
  for (const topology::Plan& p : router.candidates(Collective::kGather, 1 << 20)) {
    EXPECT_NE(p.shape, "rail_anywhere");
  }
  topology::RouterOptions options;
  options.forced_plan = "rail_anywhere";
  const topology::Router forced(one_host, {}, options);
  EXPECT_NE(forced.choose(Collective::kGather, 1 << 20).shape, "rail_anywhere");
  // Across hosts it is a candidate as its rule says.
  const topology::Router hosts(topology::layout_from_host_ids(kTwoByThree), {}, {});
  bool offered = false;
  for (const topology::Plan& p : hosts.candidates(Collective::kGather, 1 << 20)) {
    offered = offered || p.shape == "rail_anywhere";
  }
  EXPECT_TRUE(offered);
}

}  // namespace
}  // namespace domino
