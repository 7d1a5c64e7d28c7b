#include "PlanTemplates.h"

#include <algorithm>
#include <stdexcept>

namespace domino::topology {

namespace {

constexpr View kSendOne{Buffer::kSend, Blocks::kOne};
constexpr View kRecvOne{Buffer::kRecv, Blocks::kOne};

Step collective(Level level, Collective op, View in, View out, Members members = Members::kAll,
                RootIs root = RootIs::kNone) {
  Step step;
  step.level = level;
  step.inter = level == Level::kRail || level == Level::kLeaders;
  step.op = op;
  step.in = in;
  step.out = out;
  step.members = members;
  step.root = root;
  return step;
}

Step reorder(Action action, BlockOrder order, View in, View out, Members members = Members::kAll) {
  Step step;
  step.action = action;
  step.order = order;
  step.in = in;
  step.out = out;
  step.members = members;
  return step;
}

Plan make(PlanKind kind, Collective op, std::vector<Step> steps, bool uniform_and_pipelined,
          Blocks data_blocks = Blocks::kOne) {
  Plan plan;
  plan.kind = kind;
  plan.op = op;
  plan.steps = std::move(steps);
  plan.needs_uniform = uniform_and_pipelined;
  plan.pipelined = uniform_and_pipelined;
  plan.data_blocks = data_blocks;
  return plan;
}

std::vector<Plan> built_in() {
  using C = Collective;
  using L = Level;
  using M = Members;
  using R = RootIs;
  const View s0_one{Buffer::kScratch0, Blocks::kOne};
  const View recv_host{Buffer::kRecv, Blocks::kHostRanks};
  const View send_group{Buffer::kSend, Blocks::kGroup};
  const View recv_group{Buffer::kRecv, Blocks::kGroup};
  const View s0_hosts{Buffer::kScratch0, Blocks::kHosts};
  const View s0_grid{Buffer::kScratch0, Blocks::kHostsByMost};
  const View s1_hosts{Buffer::kScratch1, Blocks::kHosts};
  const View s1_grid{Buffer::kScratch1, Blocks::kHostsByMost};
  const PlanKind rails = PlanKind::kHierarchical, leaders = PlanKind::kLeader;
  return {
      // Split-rail all-reduce: each rank reduces 1/L of the message inside the host, all-reduces
      // that slice with the ranks of its rail, and gathers the slices back inside the host.
      make(rails, C::kAllReduce,
           {collective(L::kHost, C::kReduceScatter, recv_host, s0_one),
            collective(L::kRail, C::kAllReduce, s0_one, s0_one),
            collective(L::kHost, C::kAllGather, s0_one, recv_host)},
           true, Blocks::kHostRanks),
      // To each host's first rank, among those, back inside the host: fewest messages.
      make(leaders, C::kAllReduce,
           {collective(L::kHost, C::kReduce, kRecvOne, kRecvOne, M::kAll, R::kFirst),
            collective(L::kLeaders, C::kAllReduce, kRecvOne, kRecvOne, M::kLeaders),
            collective(L::kHost, C::kBroadcast, kRecvOne, kRecvOne, M::kAll, R::kFirst)},
           false),
      // Every block crosses the link once, along its rail, then spreads inside each host.
      make(rails, C::kAllGather,
           {collective(L::kRail, C::kAllGather, kSendOne, s0_hosts),
            collective(L::kHost, C::kAllGather, s0_hosts, s1_grid),
            reorder(Action::kFromHostOrder, BlockOrder::kRailMajor, s1_grid, recv_group)},
           true),
      make(rails, C::kReduceScatter,
           {reorder(Action::kToHostOrder, BlockOrder::kRailMajor, send_group, s0_grid),
            collective(L::kHost, C::kReduceScatter, s0_grid, s1_hosts),
            collective(L::kRail, C::kReduceScatter, s1_hosts, kRecvOne)},
           true),
      // Any layout: each host's blocks gathered on its first rank, exchanged among those (hosts
      // padded to the largest), and broadcast inside every host.
      make(leaders, C::kAllGather,
           {collective(L::kHost, C::kGather, kSendOne, {Buffer::kScratch0, Blocks::kHostRanks},
                       M::kAll, R::kFirst),
            collective(L::kLeaders, C::kAllGather, {Buffer::kScratch0, Blocks::kMostHostRanks},
                       s1_grid, M::kLeaders),
            collective(L::kHost, C::kBroadcast, s1_grid, s1_grid, M::kAll, R::kFirst),
            reorder(Action::kFromHostOrder, BlockOrder::kHostMajor, s1_grid, recv_group)},
           false),
      make(leaders, C::kReduceScatter,
           {reorder(Action::kToHostOrder, BlockOrder::kHostMajor, send_group, s0_grid),
            collective(L::kHost, C::kReduce, s0_grid, s1_grid, M::kAll, R::kFirst),
            collective(L::kLeaders, C::kReduceScatter, s1_grid,
                       {Buffer::kScratch2, Blocks::kMostHostRanks}, M::kLeaders),
            collective(L::kHost, C::kScatter, {Buffer::kScratch2, Blocks::kHostRanks}, kRecvOne,
                       M::kAll, R::kFirst)},
           false),
      // Any layout: each host's blocks gathered on its first rank, those gathered on the root
      // host's first rank (hosts padded to the largest), which hands them on inside the root's
      // host; the root puts them in group order. One message per host crosses the link, where
      // the flat gather sends one per rank.
      make(leaders, C::kGather,
           {collective(L::kHost, C::kGather, kSendOne, {Buffer::kScratch0, Blocks::kHostRanks},
                       M::kAll, R::kFirst),
            collective(L::kLeaders, C::kGather, {Buffer::kScratch0, Blocks::kMostHostRanks},
                       s1_grid, M::kLeaders, R::kRootHost),
            collective(L::kHost, C::kBroadcast, s1_grid, s1_grid, M::kRootHost, R::kFirst),
            reorder(Action::kFromHostOrder, BlockOrder::kHostMajor, s1_grid, recv_group, M::kRoot)},
           false),
      // The gather backwards: the root's blocks in host order, to its host's first rank, from
      // there one host's share to each other host's first rank, which scatters it inside.
      make(leaders, C::kScatter,
           {reorder(Action::kToHostOrder, BlockOrder::kHostMajor, send_group, s0_grid, M::kRoot),
            collective(L::kHost, C::kBroadcast, s0_grid, s0_grid, M::kRootHost, R::kRootLocal),
            collective(L::kLeaders, C::kScatter, s0_grid,
                       {Buffer::kScratch1, Blocks::kMostHostRanks}, M::kLeaders, R::kRootHost),
            collective(L::kHost, C::kScatter, {Buffer::kScratch1, Blocks::kHostRanks}, kRecvOne,
                       M::kAll, R::kFirst)},
           false),
      // Inside the root's host, among the hosts' first ranks, inside every other host.
      make(leaders, C::kBroadcast,
           {collective(L::kHost, C::kBroadcast, kRecvOne, kRecvOne, M::kRootHost, R::kRootLocal),
            collective(L::kLeaders, C::kBroadcast, kRecvOne, kRecvOne, M::kLeaders, R::kRootHost),
            collective(L::kHost, C::kBroadcast, kRecvOne, kRecvOne, M::kOtherHosts, R::kFirst)},
           false),
      // Along the root's rail, then inside every host; the rail's chunks overlap the hosts'.
      make(rails, C::kBroadcast,
           {collective(L::kRail, C::kBroadcast, kRecvOne, kRecvOne, M::kRootRail, R::kRootHost),
            collective(L::kHost, C::kBroadcast, kRecvOne, kRecvOne, M::kAll, R::kRootLocal)},
           true),
      // Inside every host to the rank on the root's rail, then along that rail to the root.
      make(rails, C::kReduce,
           {collective(L::kHost, C::kReduce, kSendOne, s0_one, M::kAll, R::kRootLocal),
            collective(L::kRail, C::kReduce, s0_one, s0_one, M::kRootRail, R::kRootHost),
            reorder(Action::kCopy, BlockOrder::kRailMajor, s0_one, kRecvOne, M::kRoot)},
           true),
      // Any layout: to each host's first rank, among those to the root's host, then to the root.
      make(leaders, C::kReduce,
           {collective(L::kHost, C::kReduce, kSendOne, s0_one, M::kAll, R::kFirst),
            collective(L::kLeaders, C::kReduce, s0_one, s0_one, M::kLeaders, R::kRootHost),
            collective(L::kHost, C::kBroadcast, s0_one, s0_one, M::kRootHost, R::kFirst),
            reorder(Action::kCopy, BlockOrder::kRailMajor, s0_one, kRecvOne, M::kRoot)},
           false),
  };
}

void check(const Plan& plan);

std::deque<Plan>& templates() {
  static std::deque<Plan> all = [] {
    std::vector<Plan> plans = built_in();
    for (const Plan& plan : plans) check(plan);
    return std::deque<Plan>(plans.begin(), plans.end());
  }();
  return all;
}

bool is_scratch(Buffer buffer) {
  return buffer != Buffer::kSend && buffer != Buffer::kRecv;
}

void check(const Plan& plan) {
  const std::string what =
      std::string("plan template ") + plan_name(plan.kind) + " for " + collective_name(plan.op);
  if (plan.kind == PlanKind::kFlatIntra || plan.kind == PlanKind::kFlatInter) {
    throw std::invalid_argument(what +
                                ": flat plans are one collective over the group and "
                                "need no template");
  }
  if (plan.steps.empty()) throw std::invalid_argument(what + " has no steps");
  bool written[kScratchBuffers] = {false, false, false};
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    const std::string where = what + ", step " + std::to_string(i + 1);
    if (is_scratch(step.in.buffer) &&
        !written[static_cast<int>(step.in.buffer) - static_cast<int>(Buffer::kScratch0)]) {
      throw std::invalid_argument(where + " reads a scratch buffer no earlier step wrote");
    }
    if (step.action == Action::kCollective && rooted(step.op) && step.root == RootIs::kNone) {
      throw std::invalid_argument(where + " is a " + collective_name(step.op) + " with no root");
    }
    if (step.action == Action::kCollective && step.level == Level::kGroup) {
      throw std::invalid_argument(where +
                                  " runs on the whole group: a two-level plan's steps "
                                  "run on host, rail or leaders");
    }
    // Rails of an uneven layout have different lengths, and not every host has every rail.
    if (step.action == Action::kCollective && step.level == Level::kRail && !plan.needs_uniform) {
      throw std::invalid_argument(where +
                                  " runs on a rail, which needs a uniform layout: set "
                                  "needs_uniform");
    }
    if (step.action == Action::kCollective && step.level == Level::kLeaders &&
        step.members != Members::kLeaders) {
      throw std::invalid_argument(where +
                                  " runs on the leaders, so only the leaders take part: "
                                  "set members to Members::kLeaders");
    }
    if (is_scratch(step.out.buffer))
      written[static_cast<int>(step.out.buffer) - static_cast<int>(Buffer::kScratch0)] = true;
  }
  if (plan.pipelined) {
    auto on_rail = [](const Step& s) {
      return s.action == Action::kCollective && s.level == Level::kRail;
    };
    const auto first = std::find_if(plan.steps.begin(), plan.steps.end(), on_rail);
    const auto past = std::find_if_not(first, plan.steps.end(), on_rail);
    if (first == plan.steps.end() || std::any_of(past, plan.steps.end(), on_rail)) {
      throw std::invalid_argument(what +
                                  " is pipelined, so its rail steps must be one run of "
                                  "steps (the pipeline's middle stage)");
    }
    if (!plan.needs_uniform) {
      throw std::invalid_argument(what + " is pipelined along rails, which need a uniform layout");
    }
  }
}

}  // namespace

const std::deque<Plan>& plan_templates() {
  return templates();
}

void add_plan_template(Plan plan) {
  check(plan);
  if (find_plan_template(plan.kind, plan.op) != nullptr) {
    throw std::invalid_argument(std::string("a ") + plan_name(plan.kind) + " plan for " +
                                collective_name(plan.op) + " exists already");
  }
  for (Step& step : plan.steps) step.algorithm.clear();  // the router's to choose
  templates().push_back(std::move(plan));
}

const Plan* find_plan_template(PlanKind kind, Collective op) {
  for (const Plan& plan : templates()) {
    if (plan.kind == kind && plan.op == op) return &plan;
  }
  return nullptr;
}

}  // namespace domino::topology
