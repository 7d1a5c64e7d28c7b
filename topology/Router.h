// Which plan a collective takes, from where the group's ranks sit and what each transport costs,
// as a Plan (Plan.h): its steps, each step's algorithm, its chunks. Plans:
//   flat_intra    one communicator over the group on the intra-host transport (one host only);
//   flat_inter    one communicator over the group on the inter-host transport;
//   hierarchical  split-rail all-reduce: reduce-scatter inside each host, all-reduce of each
//                 1/L slice among the ranks with the same local rank across hosts, all-gather
//                 inside the host; all-gather: among the ranks with the same local rank across
//                 hosts, then inside the host; reduce-scatter: the reverse (uniform layouts: L
//                 ranks on every host);
//   leader        all-reduce: reduce to each host's first rank, all-reduce among those,
//                 broadcast inside the host (latency-optimal for small messages); broadcast:
//                 inside the root's host, among the hosts' first ranks, inside every other host
//                 (any layout).
// The router predicts each feasible plan's time with the alpha-beta model and takes the
// cheapest, unless one is forced. Each inter-host all-reduce step takes the cheapest algorithm
// of the table (AlgorithmTable.h) by the table's own costs, and the executor hands that name
// to the transport with the call: what the router predicts and reports is what runs.
// Torch-free.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "CostModel.h"
#include "GroupLayout.h"
#include "Plan.h"

namespace domino::topology {

struct RouterOptions {
  std::optional<PlanKind> forced_plan;  // DOMINO_ALGO=flat|hierarchical|leader
  std::string forced_inter_algorithm;   // DOMINO_ALGO=ring|recursive_doubling|rabenseifner
  // DOMINO_ALGO=intra:<links all-reduce>: what a one-host all-reduce step runs, handed to the
  // intra-host transport with each call; empty, or shared memory's own names: its own choice.
  std::string forced_intra_algorithm;
  // Hierarchical all-reduces, all-gathers and reduce-scatters in host memory go through their
  // steps in chunks of about this many bytes of the whole message, pipelined so the link never
  // waits for the host steps; 0: in one piece (DOMINO_RAIL_CHUNK_BYTES).
  size_t rail_chunk_bytes = size_t{2} << 20;
  // Whether the inter-host transport runs the table's algorithms over links (UCX, a plugin
  // with links); else its collectives are its own, and its steps name no algorithm.
  bool inter_runs_table = true;
};

class Router {
 public:
  Router(GroupLayout layout, CostModel costs, RouterOptions options);

  // The plan for op on a message of bytes (per rank: the input of all-reduce, one rank's block
  // of all-gather and reduce-scatter). Never returns an infeasible plan: a forced plan that
  // cannot serve op falls back to the best feasible one.
  Plan choose(Collective op, size_t bytes) const;
  // Every feasible plan with its predicted time, cheapest first.
  std::vector<Plan> candidates(Collective op, size_t bytes) const;
  // The plan of kind for op (the one a plan trial adopted); throws std::invalid_argument where
  // kind cannot serve op.
  Plan plan(PlanKind kind, Collective op, size_t bytes) const;

  // How many chunks a hierarchical plan over a message of bytes goes in (the all-reduce's input,
  // the all-gather's output, the reduce-scatter's input): about rail_chunk_bytes each, at most
  // kMaxRailChunks; 1 when that is fewer than 2 (one piece).
  static constexpr size_t kMaxRailChunks = 16;
  size_t rail_chunks(size_t bytes) const;

  // For transports choosing for themselves (no name handed down): inter-host all-reduces of at
  // most this many bytes use recursive doubling, above it Rabenseifner or ring.
  size_t inter_small_message_bytes() const { return inter_small_bytes_; }
  bool multi_host() const { return !layout_.single_host(); }
  // Whether the group needs communicators of the inter-host transport at all.
  bool uses_inter() const;
  const GroupLayout& layout() const { return layout_; }
  const CostModel& costs() const { return costs_; }
  const RouterOptions& options() const { return options_; }

 private:
  bool feasible(PlanKind kind, Collective op) const;
  // Seconds for plan kind of op over bytes; steps receives its steps.
  double predict(PlanKind kind, Collective op, double bytes, std::vector<Step>* steps) const;
  // Time of an inter-host all-reduce of bytes among ranks ranks, flows of them sharing one
  // host's link at once; algorithm receives what the inter transport runs.
  double inter_allreduce(int ranks, double bytes, int flows, std::string* algorithm) const;
  // An inter-host step's algorithm as reported and handed down: name where the transport runs
  // the table's algorithms, "" where its own collectives decide.
  std::string inter_name(const char* name) const;

  GroupLayout layout_;
  CostModel costs_;
  RouterOptions options_;
  size_t inter_small_bytes_ = 64 * 1024;
  // Flat rings (all-gather, reduce-scatter) in group-rank order: the most ring edges leaving
  // one host, i.e. how many of their flows share that host's link (1 with host-contiguous
  // ranks, up to the local size when ranks alternate between hosts).
  int ring_flows_ = 1;
  // Every host has one rank: the split-rail plans are a single rail step, nothing to pipeline.
  bool one_rank_per_host_ = false;
};

}  // namespace domino::topology
