#include "Router.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "AlgorithmTable.h"

namespace domino::topology {

Router::Router(GroupLayout layout, CostModel costs, RouterOptions options)
    : layout_(std::move(layout)), costs_(std::move(costs)), options_(std::move(options)) {
  // Where the inter-host all-reduce (which runs among the hosts) leaves recursive doubling.
  inter_small_bytes_ = recursive_doubling_limit(
      std::max<int>(2, static_cast<int>(layout_.hosts.size())), costs_.inter);
  one_rank_per_host_ = std::all_of(layout_.host_ranks.begin(), layout_.host_ranks.end(),
                                   [](const auto& ranks) { return ranks.size() <= 1; });
  std::vector<int> leaving(layout_.hosts.size(), 0);
  const size_t p = layout_.host_of_rank.size();
  for (size_t r = 0; p > 1 && r < p; ++r) {
    const int from = layout_.host_of_rank[r], to = layout_.host_of_rank[(r + 1) % p];
    if (from != to) ring_flows_ = std::max(ring_flows_, ++leaving[static_cast<size_t>(from)]);
  }
}

bool Router::uses_inter() const {
  return multi_host() || options_.forced_plan == PlanKind::kFlatInter;
}

bool Router::feasible(PlanKind kind, Collective op) const {
  switch (kind) {
    case PlanKind::kFlatIntra:
      return layout_.single_host();
    case PlanKind::kFlatInter:
      return multi_host() || options_.forced_plan == PlanKind::kFlatInter;
    case PlanKind::kHierarchical:
      return (op == Collective::kAllReduce || op == Collective::kAllGather ||
              op == Collective::kReduceScatter) &&
             multi_host() && layout_.uniform;
    case PlanKind::kLeader:
      return (op == Collective::kAllReduce || op == Collective::kBroadcast) && multi_host();
  }
  return false;
}

std::string Router::inter_name(const char* name) const {
  return options_.inter_runs_table ? std::string(name) : std::string();
}

double Router::inter_allreduce(int ranks, double bytes, int flows, std::string* algorithm) const {
  if (ranks <= 1) {
    algorithm->clear();
    return 0;
  }
  if (!options_.forced_inter_algorithm.empty()) {
    const AlgorithmEntry* entry =
        find_algorithm(options_.forced_inter_algorithm, "all_reduce", AlgorithmHome::kLinks);
    if (entry == nullptr || entry->allreduce_seconds == nullptr) {
      throw std::invalid_argument("no inter-host all-reduce algorithm '" +
                                  options_.forced_inter_algorithm + "'; there are " +
                                  algorithm_names("all_reduce", AlgorithmHome::kLinks));
    }
    *algorithm = inter_name(options_.forced_inter_algorithm.c_str());
    return entry->allreduce_seconds(ranks, bytes, flows, costs_.inter);
  }
  if (!options_.inter_runs_table) {
    // The transport chooses for itself; price what the size rule it is given would take.
    const AlgorithmEntry* entry = find_algorithm(
        auto_links_allreduce(static_cast<size_t>(std::ceil(bytes)), ranks, inter_small_bytes_),
        "all_reduce", AlgorithmHome::kLinks);
    if (entry != nullptr && entry->allreduce_seconds != nullptr) {
      algorithm->clear();
      return entry->allreduce_seconds(ranks, bytes, flows, costs_.inter);
    }
  }
  double seconds = 0;
  const AlgorithmEntry* best =
      cheapest_links_allreduce(ranks, bytes, flows, costs_.inter, &seconds);
  if (best == nullptr) {
    throw std::logic_error("the algorithm table has no all-reduce over links with a cost");
  }
  *algorithm = inter_name(std::string(best->name).c_str());
  return seconds;
}

double Router::predict(PlanKind kind, Collective op, double n, std::vector<Step>* steps) const {
  const int p = static_cast<int>(layout_.host_of_rank.size());
  const int hosts = static_cast<int>(layout_.hosts.size());
  int local = 1;
  for (const auto& ranks : layout_.host_ranks)
    local = std::max(local, static_cast<int>(ranks.size()));
  const LinkCost& s = costs_.intra;
  const double s_alpha = alpha_seconds(s), s_beta = seconds_per_byte(s);
  auto intra_part = [&](int m, double bytes) {  // reduce-scatter or all-gather inside a host
    return m <= 1 ? 0.0 : s_alpha + (m - 1.0) / m * bytes * s_beta;
  };
  const LinkCost& c = costs_.inter;
  const double alpha = alpha_seconds(c), beta = seconds_per_byte(c);
  steps->clear();
  // In-host steps run on the intra-host transport's own collectives; a host of one rank has none.
  auto host_step = [&](Collective step_op) {
    if (local > 1) steps->push_back({Level::kHost, false, step_op, ""});
  };
  auto inter_step = [&](Level level, Collective step_op, std::string algorithm) {
    steps->push_back({level, true, step_op, std::move(algorithm)});
  };
  if (kind == PlanKind::kHierarchical && op != Collective::kAllReduce) {
    // All-gather and reduce-scatter: a ring among the hosts on each rail (n, one rank's block,
    // per step, `local` rails sharing a link), and the host step over H blocks per rank.
    if (op == Collective::kReduceScatter) host_step(op);
    inter_step(Level::kRail, op, inter_name("ring"));
    if (op == Collective::kAllGather) host_step(op);
    const double chunks = static_cast<double>(rail_chunks(static_cast<size_t>(n) * p));
    const double cross = (hosts - 1) * (alpha + n / chunks * beta * local) * chunks;
    const double in_host = intra_part(local, n / chunks * hosts * local) * chunks;
    if (chunks < 2) return cross + in_host;
    return std::max(in_host, cross) + std::min(in_host, cross) / chunks;
  }
  if (kind == PlanKind::kHierarchical) {
    const double chunks = static_cast<double>(rail_chunks(static_cast<size_t>(n)));
    std::string algorithm;
    const double cross = inter_allreduce(hosts, n / local / chunks, local, &algorithm) * chunks;
    host_step(Collective::kReduceScatter);
    inter_step(Level::kRail, Collective::kAllReduce, algorithm);
    host_step(Collective::kAllGather);
    const double in_host = 2 * intra_part(local, n / chunks) * chunks;
    if (chunks < 2) return in_host + cross;
    // A pipeline runs at its slower stage; the faster one shows only in filling and draining.
    return std::max(in_host, cross) + std::min(in_host, cross) / chunks;
  }
  if (kind == PlanKind::kLeader && op == Collective::kBroadcast) {
    // Inside the root's host, a tree among the hosts' first ranks, inside every other host.
    host_step(op);
    inter_step(Level::kLeaders, op, inter_name("binomial_tree"));
    host_step(op);
    const double in_host = local <= 1 ? 0.0 : s_alpha + n * s_beta;
    return in_host + log2_ceil(hosts) * (alpha + n * beta) + in_host;
  }
  if (kind == PlanKind::kLeader) {
    std::string algorithm;
    const double cross = inter_allreduce(hosts, n, 1, &algorithm);
    host_step(Collective::kReduce);
    inter_step(Level::kLeaders, Collective::kAllReduce, algorithm);
    host_step(Collective::kBroadcast);
    const double in_host = local <= 1 ? 0.0 : s_alpha + n * s_beta;
    const double wakeup = local <= 1 ? 0.0 : costs_.idle_wakeup_us * 1e-6;
    return in_host + cross + in_host + wakeup;
  }
  if (kind == PlanKind::kFlatIntra) {
    // Only a links algorithm is handed down; shared memory's own (direct, rsag) reach it at
    // creation, and any other transport keeps its own all-reduce.
    const AlgorithmEntry* links =
        op == Collective::kAllReduce
            ? find_algorithm(options_.forced_intra_algorithm, "all_reduce", AlgorithmHome::kLinks)
            : nullptr;
    steps->push_back({Level::kGroup, false, op, links != nullptr ? std::string(links->name) : ""});
    switch (op) {
      case Collective::kAllReduce:
        if (links != nullptr && links->allreduce_seconds != nullptr && p > 1) {
          return links->allreduce_seconds(p, n, 1, s);
        }
        return 2 * intra_part(p, n);
      case Collective::kAllGather:
      case Collective::kReduceScatter:
        return intra_part(p, n * p);
      case Collective::kBarrier:
        return s_alpha;
      default:
        return s_alpha + n * s_beta;
    }
  }
  // Flat over the inter-host transport: every rank's traffic crosses, `local` flows per link.
  auto flat = [&](const char* algorithm) { inter_step(Level::kGroup, op, inter_name(algorithm)); };
  switch (op) {
    case Collective::kAllReduce: {
      std::string algorithm;
      const double t = inter_allreduce(p, n, local, &algorithm);
      inter_step(Level::kGroup, op, algorithm);
      return t;
    }
    case Collective::kBroadcast:
    case Collective::kReduce:
      flat("binomial_tree");
      return log2_ceil(p) * (alpha + n * beta);
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      flat("ring");
      return (p - 1) * (alpha + n * beta * ring_flows_);
    case Collective::kGather:
    case Collective::kScatter:
      flat("direct");
      return alpha + (p - 1) * n * beta;
    case Collective::kAllToAll:
      flat("direct");
      return alpha + (p - 1.0) / p * n * beta * local;
    case Collective::kBarrier:
      flat("dissemination");
      return log2_ceil(p) * alpha;
  }
  return 0;
}

Plan Router::plan(PlanKind kind, Collective op, size_t bytes) const {
  if (!feasible(kind, op)) {
    throw std::invalid_argument(std::string("plan ") + plan_name(kind) + " cannot serve " +
                                collective_name(op) + " in this group");
  }
  Plan plan;
  plan.kind = kind;
  plan.predicted_us = 1e6 * predict(kind, op, static_cast<double>(bytes), &plan.steps);
  if (kind == PlanKind::kHierarchical) {
    // All-gather and reduce-scatter: bytes is one rank's block; the pipeline cuts them all.
    plan.chunks =
        rail_chunks(op == Collective::kAllReduce ? bytes : bytes * layout_.host_of_rank.size());
  }
  return plan;
}

std::vector<Plan> Router::candidates(Collective op, size_t bytes) const {
  std::vector<Plan> plans;
  for (PlanKind kind :
       {PlanKind::kFlatIntra, PlanKind::kFlatInter, PlanKind::kHierarchical, PlanKind::kLeader}) {
    if (feasible(kind, op)) plans.push_back(plan(kind, op, bytes));
  }
  std::stable_sort(plans.begin(), plans.end(),
                   [](const Plan& a, const Plan& b) { return a.predicted_us < b.predicted_us; });
  return plans;
}

size_t Router::rail_chunks(size_t bytes) const {
  if (options_.rail_chunk_bytes == 0 || one_rank_per_host_) return 1;
  return std::clamp<size_t>(bytes / options_.rail_chunk_bytes, 1, kMaxRailChunks);
}

Plan Router::choose(Collective op, size_t bytes) const {
  std::vector<Plan> plans = candidates(op, bytes);
  if (options_.forced_plan) {
    for (Plan& plan : plans) {
      if (plan.kind == *options_.forced_plan) {
        plan.forced = true;
        return plan;
      }
    }
  }
  // On one host the inter transport is only ever forced; never pick it on a cost guess.
  for (const Plan& plan : plans) {
    if (plan.kind != PlanKind::kFlatInter || multi_host()) return plan;
  }
  return plans.front();
}

}  // namespace domino::topology
