#include "Router.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "AlgorithmTable.h"

namespace domino::topology {

namespace {
double log2_ceil(int n) {
  return n <= 1 ? 0.0 : std::ceil(std::log2(static_cast<double>(n)));
}
}  // namespace

const char* collective_name(Collective op) {
  switch (op) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
    case Collective::kAllToAll:
      return "all_to_all";
    case Collective::kBarrier:
      return "barrier";
  }
  return "?";
}

const char* plan_name(PlanKind kind) {
  switch (kind) {
    case PlanKind::kFlatIntra:
      return "flat_intra";
    case PlanKind::kFlatInter:
      return "flat_inter";
    case PlanKind::kHierarchical:
      return "hierarchical";
    case PlanKind::kLeader:
      return "leader";
  }
  return "?";
}

const std::vector<Collective>& all_collectives() {
  static const std::vector<Collective> ops = {
      Collective::kAllReduce, Collective::kBroadcast,     Collective::kReduce,
      Collective::kAllGather, Collective::kReduceScatter, Collective::kGather,
      Collective::kScatter,   Collective::kAllToAll,      Collective::kBarrier};
  return ops;
}

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

double Router::inter_allreduce(int ranks, double bytes, int flows, std::string* algorithm) const {
  if (ranks <= 1) {
    *algorithm = "none";
    return 0;
  }
  std::string chosen = options_.forced_inter_algorithm;
  if (chosen.empty()) {
    // Hierarchical steps move fractional shares: round up, so a share just above the threshold
    // stays above it.
    chosen = auto_links_allreduce(static_cast<size_t>(std::ceil(bytes)), ranks, inter_small_bytes_);
  }
  *algorithm = chosen;
  const AlgorithmEntry* entry = find_algorithm(chosen, "all_reduce", AlgorithmHome::kLinks);
  if (entry == nullptr || entry->allreduce_seconds == nullptr) {
    throw std::invalid_argument("no inter-host all-reduce algorithm '" + chosen + "'; there are " +
                                algorithm_names("all_reduce", AlgorithmHome::kLinks));
  }
  return entry->allreduce_seconds(ranks, bytes, flows, costs_.inter);
}

double Router::predict(PlanKind kind, Collective op, double n, std::string* algorithm) const {
  const int p = static_cast<int>(layout_.host_of_rank.size());
  const int hosts = static_cast<int>(layout_.hosts.size());
  int local = 1;
  for (const auto& ranks : layout_.host_ranks)
    local = std::max(local, static_cast<int>(ranks.size()));
  const LinkCost& s = costs_.intra;
  const double s_alpha = s.latency_us * 1e-6, s_beta = 1.0 / (s.gbytes_per_s * 1e9);
  auto intra_part = [&](int m, double bytes) {  // reduce-scatter or all-gather inside a host
    return m <= 1 ? 0.0 : s_alpha + (m - 1.0) / m * bytes * s_beta;
  };
  const LinkCost& c = costs_.inter;
  const double alpha = c.latency_us * 1e-6, beta = 1.0 / (c.gbytes_per_s * 1e9);
  algorithm->clear();
  if (kind == PlanKind::kHierarchical && op != Collective::kAllReduce) {
    // All-gather and reduce-scatter: a ring among the hosts on each rail (n, one rank's block,
    // per step, `local` rails sharing a link), and the host step over H blocks per rank.
    *algorithm = "ring";
    const double chunks = static_cast<double>(rail_chunks(static_cast<size_t>(n) * p));
    const double cross = (hosts - 1) * (alpha + n / chunks * beta * local) * chunks;
    const double in_host = intra_part(local, n / chunks * hosts * local) * chunks;
    if (chunks < 2) return cross + in_host;
    return std::max(in_host, cross) + std::min(in_host, cross) / chunks;
  }
  if (kind == PlanKind::kHierarchical) {
    const double chunks = static_cast<double>(rail_chunks(static_cast<size_t>(n)));
    const double cross = inter_allreduce(hosts, n / local / chunks, local, algorithm) * chunks;
    const double in_host = 2 * intra_part(local, n / chunks) * chunks;
    if (chunks < 2) return in_host + cross;
    // A pipeline runs at its slower stage; the faster one shows only in filling and draining.
    return std::max(in_host, cross) + std::min(in_host, cross) / chunks;
  }
  if (kind == PlanKind::kLeader && op == Collective::kBroadcast) {
    // Inside the root's host, a tree among the hosts' first ranks, inside every other host.
    *algorithm = "binomial_tree";
    const double in_host = local <= 1 ? 0.0 : s_alpha + n * s_beta;
    return in_host + log2_ceil(hosts) * (alpha + n * beta) + in_host;
  }
  if (kind == PlanKind::kLeader) {
    const double cross = inter_allreduce(hosts, n, 1, algorithm);
    const double in_host = local <= 1 ? 0.0 : s_alpha + n * s_beta;
    const double wakeup = local <= 1 ? 0.0 : costs_.idle_wakeup_us * 1e-6;
    return in_host + cross + in_host + wakeup;
  }
  if (kind == PlanKind::kFlatIntra) {
    switch (op) {
      case Collective::kAllReduce:
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
  switch (op) {
    case Collective::kAllReduce:
      return inter_allreduce(p, n, local, algorithm);
    case Collective::kBroadcast:
    case Collective::kReduce:
      *algorithm = "binomial_tree";
      return log2_ceil(p) * (alpha + n * beta);
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      *algorithm = "ring";
      return (p - 1) * (alpha + n * beta * ring_flows_);
    case Collective::kGather:
    case Collective::kScatter:
      *algorithm = "direct";
      return alpha + (p - 1) * n * beta;
    case Collective::kAllToAll:
      *algorithm = "direct";
      return alpha + (p - 1.0) / p * n * beta * local;
    case Collective::kBarrier:
      *algorithm = "dissemination";
      return log2_ceil(p) * alpha;
  }
  return 0;
}

std::vector<Plan> Router::candidates(Collective op, size_t bytes) const {
  std::vector<Plan> plans;
  for (PlanKind kind :
       {PlanKind::kFlatIntra, PlanKind::kFlatInter, PlanKind::kHierarchical, PlanKind::kLeader}) {
    if (!feasible(kind, op)) continue;
    Plan plan;
    plan.kind = kind;
    plan.predicted_us = 1e6 * predict(kind, op, static_cast<double>(bytes), &plan.inter_algorithm);
    if (kind == PlanKind::kHierarchical) {
      // All-gather and reduce-scatter: bytes is one rank's block; the pipeline cuts them all.
      plan.chunks =
          rail_chunks(op == Collective::kAllReduce ? bytes : bytes * layout_.host_of_rank.size());
    }
    plans.push_back(plan);
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
