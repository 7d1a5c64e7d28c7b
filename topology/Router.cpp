#include "Router.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "AlgorithmTable.h"
#include "PlanShapes.h"

namespace domino::topology {

Router::Router(GroupLayout layout, CostModel costs, RouterOptions options)
    : layout_(std::move(layout)), costs_(std::move(costs)), options_(std::move(options)) {
  // Where the inter-host all-reduce (which runs among the hosts) leaves recursive doubling.
  inter_small_bytes_ = recursive_doubling_limit(
      std::max<int>(2, static_cast<int>(layout_.hosts.size())), costs_.inter);
  one_rank_per_host_ = std::all_of(layout_.host_ranks.begin(), layout_.host_ranks.end(),
                                   [](const auto& ranks) { return ranks.size() <= 1; });
  for (const auto& ranks : layout_.host_ranks)
    most_host_ranks_ = std::max(most_host_ranks_, static_cast<int>(ranks.size()));
  std::vector<int> leaving(layout_.hosts.size(), 0);
  const size_t p = layout_.host_of_rank.size();
  for (size_t r = 0; p > 1 && r < p; ++r) {
    const int from = layout_.host_of_rank[r], to = layout_.host_of_rank[(r + 1) % p];
    if (from != to) ring_flows_ = std::max(ring_flows_, ++leaving[static_cast<size_t>(from)]);
  }
  if (!options_.forced_plan.empty()) forced_ = forced_plan_shape(options_.forced_plan, layout_);
  // The communicators a lane builds: those of every plan that may serve an op here. A forced
  // shape that serves every op is all that runs (a plan forced flat needs none of the levels).
  const bool forced_serves_all =
      forced_ != nullptr && std::all_of(std::begin(kCollectives), std::end(kCollectives),
                                        [&](Collective op) { return feasible(*forced_, op); });
  for (const PlanShape& shape : plan_shapes()) {
    if (forced_serves_all && &shape != forced_) continue;
    for (const Plan& plan : shape.templates) {
      if (!feasible(shape, plan.op)) continue;
      for (const Step& step : plan.steps) {
        if (step.action != Action::kCollective) continue;
        uses_inter_ = uses_inter_ || step.inter;
        if (step.level != Level::kGroup) steps_on_[static_cast<size_t>(step.level)] = true;
      }
    }
  }
}

bool Router::feasible(const PlanShape& shape, Collective op) const {
  const Plan* plan = shape.template_for(op);
  if (plan == nullptr || !shape.feasible(layout_, &shape == forced_) ||
      (plan->needs_uniform && !layout_.uniform)) {
    return false;
  }
  // A lane builds host, rail and leaders communicators only for a group across hosts
  // (RoutedComm), so on one host a shape that steps on them could not run as written.
  return multi_host() || std::all_of(plan->steps.begin(), plan->steps.end(), [](const Step& s) {
           return s.action != Action::kCollective || s.level == Level::kGroup;
         });
}

std::string Router::inter_name(std::string_view name) const {
  return options_.inter_runs_table ? std::string(name) : std::string();
}

double Router::units(Blocks blocks) const {
  const double hosts = static_cast<double>(layout_.hosts.size());
  switch (blocks) {
    case Blocks::kOne:
      return 1;
    case Blocks::kHostRanks:
    case Blocks::kMostHostRanks:
      return most_host_ranks_;
    case Blocks::kHosts:
      return hosts;
    case Blocks::kHostsByMost:
      return hosts * most_host_ranks_;
    case Blocks::kGroup:
      return static_cast<double>(layout_.host_of_rank.size());
  }
  return 1;
}

double Router::inter_allreduce(int ranks, double bytes, int flows, std::string* algorithm) const {
  if (ranks <= 1) {
    algorithm->clear();
    return 0;
  }
  if (!options_.forced_inter_algorithm.empty()) {
    const AlgorithmEntry* entry =
        find_algorithm(options_.forced_inter_algorithm, "all_reduce", AlgorithmHome::kLinks);
    if (entry == nullptr || entry->seconds == nullptr) {
      throw std::invalid_argument("no inter-host all-reduce algorithm '" +
                                  options_.forced_inter_algorithm + "'; there are " +
                                  algorithm_names("all_reduce", AlgorithmHome::kLinks));
    }
    *algorithm = inter_name(options_.forced_inter_algorithm);
    return entry->seconds(ranks, bytes, flows, costs_.inter);
  }
  if (!options_.inter_runs_table) {
    // The transport chooses for itself; price what the size rule it is given would take.
    const AlgorithmEntry* entry = find_algorithm(
        auto_links_allreduce(static_cast<size_t>(std::ceil(bytes)), ranks, inter_small_bytes_),
        "all_reduce", AlgorithmHome::kLinks);
    if (entry != nullptr && entry->seconds != nullptr) {
      algorithm->clear();
      return entry->seconds(ranks, bytes, flows, costs_.inter);
    }
  }
  double seconds = 0;
  const AlgorithmEntry* best = cheapest_algorithm("all_reduce", AlgorithmHome::kLinks, ranks, bytes,
                                                  flows, costs_.inter, &seconds);
  if (best == nullptr) {
    throw std::logic_error("the algorithm table has no all-reduce over links with a cost");
  }
  *algorithm = inter_name(best->name);
  return seconds;
}

double Router::intra_seconds(Collective op, int ranks, double n) const {
  if (ranks <= 1) return 0;
  const Movement moved = plain_movement(op, ranks);
  return moved.latencies * alpha_seconds(costs_.intra) +
         moved.messages * n * seconds_per_byte(costs_.intra);
}

namespace {
// The size an algorithm is chosen on. The ranks of an uneven all-to-all send different amounts,
// so its algorithm is chosen by the number of ranks alone, or two ranks could run different
// ones; it is still priced at the size given.
double choice_bytes(Collective op, double bytes) {
  return op == Collective::kAllToAll ? 0 : bytes;
}
}  // namespace

double Router::step_seconds(Step& step, double bytes) const {
  step.algorithm.clear();
  if (step.action != Action::kCollective) return 0;  // local copies: not modeled
  const int hosts = static_cast<int>(layout_.hosts.size());
  const int group = static_cast<int>(layout_.host_of_rank.size());
  const int ranks = step.level == Level::kGroup  ? group
                    : step.level == Level::kHost ? most_host_ranks_
                                                 : hosts;
  if (ranks <= 1) return 0;
  if (!step.inter) {
    const char* op = collective_name(step.op);
    const AlgorithmEntry* chosen = nullptr;
    double seconds = 0;
    if (step.op == Collective::kAllReduce && !options_.forced_intra_algorithm.empty()) {
      const auto& forced = options_.forced_intra_algorithm;
      chosen = find_algorithm(forced, op, AlgorithmHome::kLinks);
      if (chosen == nullptr) chosen = find_algorithm(forced, op, AlgorithmHome::kShm);
      if (chosen != nullptr && chosen->seconds != nullptr) {
        seconds = chosen->seconds(ranks, bytes, 1, costs_.intra);
        // A path that cannot run here at all (single-copy reads turned off, or more ranks than
        // cores): the router picks among the others instead of handing down a refused name.
        // Outside its measured regime a forced path still runs.
        if (chosen->runs != nullptr && !chosen->runs(ranks, costs_.intra) && options_.intra_home) {
          chosen =
              cheapest_algorithm(op, *options_.intra_home, ranks, bytes, 1, costs_.intra, &seconds);
        }
      }
    } else if (options_.intra_home) {
      chosen = cheapest_algorithm(op, *options_.intra_home, ranks, choice_bytes(step.op, bytes), 1,
                                  costs_.intra, &seconds);
      if (chosen != nullptr && step.op == Collective::kAllToAll)
        seconds = chosen->seconds(ranks, bytes, 1, costs_.intra);
    }
    if (chosen == nullptr) return intra_seconds(step.op, ranks, bytes);
    step.algorithm = std::string(chosen->name);
    // A forced path outside its regime is priced as what the transport's own choice costs.
    return std::isfinite(seconds) && seconds > 0 ? seconds : intra_seconds(step.op, ranks, bytes);
  }
  // How many of the step's flows share one host's NIC: every rail at once; a flat ring's
  // edges leaving one host; every rank of a host in a flat all-reduce or all-to-all.
  int flows = 1;
  if (step.level == Level::kRail && step.members == Members::kAll) {
    flows = most_host_ranks_;
  } else if (step.level == Level::kGroup) {
    flows = step.op == Collective::kAllGather || step.op == Collective::kReduceScatter ? ring_flows_
            : step.op == Collective::kAllReduce || step.op == Collective::kAllToAll
                ? most_host_ranks_
                : 1;
  }
  if (step.op == Collective::kAllReduce)
    return inter_allreduce(ranks, bytes, flows, &step.algorithm);
  double seconds = 0;
  const AlgorithmEntry* best =
      cheapest_algorithm(collective_name(step.op), AlgorithmHome::kLinks, ranks,
                         choice_bytes(step.op, bytes), flows, costs_.inter, &seconds);
  if (best == nullptr) {
    throw std::logic_error(std::string("the algorithm table has no ") + collective_name(step.op) +
                           " over links with a cost");
  }
  if (step.op == Collective::kAllToAll) seconds = best->seconds(ranks, bytes, flows, costs_.inter);
  step.algorithm = inter_name(best->name);
  return seconds;
}

Plan Router::priced(const PlanShape& shape, Collective op, size_t bytes) const {
  Plan plan = *shape.template_for(op);
  // Hosts of one rank: a step inside the host is this rank alone, its data staying put.
  for (Step& step : plan.steps) {
    if (most_host_ranks_ == 1 && step.action == Action::kCollective && step.level == Level::kHost)
      step.action = Action::kCopy;
  }
  const double n = static_cast<double>(bytes);
  const bool blocks_op = op == Collective::kAllGather || op == Collective::kReduceScatter ||
                         op == Collective::kGather || op == Collective::kScatter;
  if (plan.pipelined) {
    plan.chunks = rail_chunks(blocks_op ? bytes * layout_.host_of_rank.size() : bytes);
  }
  const double chunks = static_cast<double>(plan.chunks);
  // What each step moves per chunk: its op's message (AlgorithmTable.h) in units of the plan.
  const double unit = n / units(plan.data_blocks) / chunks;
  auto message = [&](const Step& step) {
    if (plan.flat()) return n;
    return unit * units(sized_by_output(step.op) ? step.out.blocks : step.in.blocks);
  };
  // The steps before the rail's, the rail's, and those after: a pipeline's three stages.
  double before = 0, rail = 0, after = 0;
  bool waits = false, past_rail = false;
  for (Step& step : plan.steps) {
    const double seconds = step_seconds(step, message(step)) * chunks;
    if (step.action == Action::kCollective && step.level == Level::kRail) {
      rail += seconds;
      past_rail = true;
    } else {
      (past_rail ? after : before) += seconds;
    }
    // Ranks that sit out an inter-host step wait for it asleep, and must be woken.
    waits = waits || (step.inter && step.members != Members::kAll && most_host_ranks_ > 1);
  }
  const double in_host = before + after;
  double total = in_host + rail;
  // A pipeline runs at its slower stage; the faster one shows only in filling and draining.
  if (plan.pipelined && chunks >= 2) {
    total = std::max(in_host, rail) + std::min(in_host, rail) / chunks;
  }
  if (waits) total += costs_.idle_wakeup_us * 1e-6;
  plan.predicted_us = 1e6 * total;
  return plan;
}

Plan Router::plan(std::string_view shape_name, Collective op, size_t bytes) const {
  const PlanShape* shape = find_plan_shape(shape_name);
  if (shape == nullptr || !feasible(*shape, op)) {
    throw std::invalid_argument("plan " + std::string(shape_name) + " cannot serve " +
                                collective_name(op) + " in this group");
  }
  return priced(*shape, op, bytes);
}

Plan Router::whole_group(Collective op, size_t bytes) const {
  for (const PlanShape& shape : plan_shapes()) {
    const Plan* plan = shape.template_for(op);
    if (plan != nullptr && plan->flat() && plan->steps.front().inter == uses_inter_ &&
        feasible(shape, op)) {
      return priced(shape, op, bytes);
    }
  }
  throw std::logic_error(std::string("no flat plan serves ") + collective_name(op) +
                         " over the whole group's communicator");
}

std::vector<Plan> Router::candidates(Collective op, size_t bytes) const {
  std::vector<Plan> plans;
  for (const PlanShape& shape : plan_shapes()) {
    if (feasible(shape, op)) plans.push_back(priced(shape, op, bytes));
  }
  std::stable_sort(plans.begin(), plans.end(),
                   [](const Plan& a, const Plan& b) { return a.predicted_us < b.predicted_us; });
  return plans;
}

std::vector<std::string> Router::intra_allreduce_candidates(size_t bytes, size_t most) const {
  if (multi_host() || !options_.intra_home || !options_.forced_intra_algorithm.empty()) return {};
  const int ranks = static_cast<int>(layout_.host_of_rank.size());
  std::vector<std::pair<double, std::string>> priced;
  for (const AlgorithmEntry& entry : algorithm_table()) {
    if (entry.home != *options_.intra_home || entry.seconds == nullptr) continue;
    if (std::find(entry.ops.begin(), entry.ops.end(), "all_reduce") == entry.ops.end()) continue;
    const double seconds = entry.seconds(ranks, static_cast<double>(bytes), 1, costs_.intra);
    if (std::isfinite(seconds)) priced.emplace_back(seconds, std::string(entry.name));
  }
  // Stable: equal costs keep the table's order, the same on every rank.
  std::stable_sort(priced.begin(), priced.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> names;
  for (size_t i = 0; i < priced.size() && i < most; ++i) names.push_back(priced[i].second);
  return names;
}

size_t Router::rail_chunks(size_t bytes) const {
  if (options_.rail_chunk_bytes == 0 || one_rank_per_host_) return 1;
  return std::clamp<size_t>(bytes / options_.rail_chunk_bytes, 1, kMaxRailChunks);
}

Plan Router::choose(Collective op, size_t bytes) const {
  std::vector<Plan> plans = candidates(op, bytes);
  if (plans.empty()) {
    throw std::logic_error(std::string("no plan shape serves ") + collective_name(op) +
                           " in this group");
  }
  if (forced_ != nullptr) {
    for (Plan& plan : plans) {
      if (plan.shape == forced_->name) {
        plan.forced = true;
        return plan;
      }
    }
  }
  return plans.front();
}

}  // namespace domino::topology
