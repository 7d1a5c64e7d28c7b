// Which plan a collective takes, from where the group's ranks sit and what each transport costs,
// as a Plan (Plan.h): its steps, each step's algorithm, its chunks. The candidates are every
// registered plan shape (PlanShapes.h) that serves the op in the group's layout. The router
// prices each candidate step by step with the alpha-beta model: every step on the inter-host
// transport takes the cheapest algorithm of the table (AlgorithmTable.h) for its op by the
// table's own costs, and the executor hands that name to the transport with the call, so what
// the router predicts and reports is what runs. It takes the cheapest plan, unless one is
// forced. Torch-free.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "AlgorithmTable.h"
#include "CostModel.h"
#include "GroupLayout.h"
#include "Plan.h"

namespace domino::topology {

struct PlanShape;

struct RouterOptions {
  // The plan to take wherever it serves: a plan shape's name, or the word DOMINO_ALGO forces
  // shapes by ("flat", "hierarchical", "leader", an added shape's), resolved in the group's
  // layout (forced_plan_shape in PlanShapes.h); empty: none.
  std::string forced_plan;
  std::string forced_inter_algorithm;  // DOMINO_ALGO=ring|recursive_doubling|rabenseifner
  // DOMINO_ALGO=direct|rsag|single_copy|intra:<links all-reduce>: what every all-reduce step
  // on the intra-host transport runs, handed down with each call.
  std::string forced_intra_algorithm;
  // Which of the table's algorithms the intra-host transport runs by name: shared memory's own,
  // or those over links (a plugin with links); none: it chooses for itself, and its steps name
  // no algorithm.
  std::optional<AlgorithmHome> intra_home = AlgorithmHome::kShm;
  // Hierarchical plans in host memory go through their steps in chunks of about this many bytes
  // of the whole message, pipelined so the link never waits for the host steps; 0: in one piece
  // (DOMINO_RAIL_CHUNK_BYTES).
  size_t rail_chunk_bytes = size_t{2} << 20;
  // Whether the inter-host transport runs the table's algorithms over links (UCX, a plugin
  // with links); else its collectives are its own, and its steps name no algorithm.
  bool inter_runs_table = true;
};

class Router {
 public:
  // Throws std::invalid_argument where options force a plan no shape answers to.
  Router(GroupLayout layout, CostModel costs, RouterOptions options);

  // The plan for op on a message of bytes, per rank as the table sizes them (AlgorithmTable.h:
  // the buffer of all-reduce, broadcast and reduce, one rank's block of all-gather,
  // reduce-scatter, gather and scatter). Never returns an infeasible plan: a forced plan that
  // cannot serve op falls back to the best feasible one.
  Plan choose(Collective op, size_t bytes) const;
  // Every feasible plan with its predicted time, cheapest first.
  std::vector<Plan> candidates(Collective op, size_t bytes) const;
  // The plan of the shape named `shape` for op (the one a plan trial adopted); throws
  // std::invalid_argument where that shape cannot serve op here.
  Plan plan(std::string_view shape, Collective op, size_t bytes) const;
  // The flat plan for op on the communicator over the whole group that a lane builds (the
  // inter-host transport's where the group uses that, else the intra-host one's): what takes an
  // all-to-all, or a call with a root no plan can place.
  Plan whole_group(Collective op, size_t bytes) const;
  // The shape options.forced_plan resolves to in this layout; nullptr where none is forced.
  const PlanShape* forced_shape() const { return forced_; }
  // The all-reduce algorithms of the intra-host transport that can run among a one-host group's
  // ranks for bytes, cheapest first by the table, at most `most`: what a group's algorithm trial
  // tries. Empty across hosts, where an in-host algorithm is forced, or where the transport
  // chooses for itself.
  std::vector<std::string> intra_allreduce_candidates(size_t bytes, size_t most) const;

  // How many chunks a pipelined plan over a whole message of bytes goes in (all ranks' blocks
  // for all-gather and reduce-scatter): about rail_chunk_bytes each, at most kMaxRailChunks; 1
  // when that is fewer than 2 (one piece).
  static constexpr size_t kMaxRailChunks = 16;
  size_t rail_chunks(size_t bytes) const;

  // For transports choosing for themselves (no name handed down): inter-host all-reduces of at
  // most this many bytes use recursive doubling, above it Rabenseifner or ring.
  size_t inter_small_message_bytes() const { return inter_small_bytes_; }
  bool multi_host() const { return !layout_.single_host(); }
  // Whether the group needs communicators of the inter-host transport at all.
  bool uses_inter() const { return uses_inter_; }
  // Whether some plan that may serve an op in this group steps on level (besides kGroup): the
  // communicators a lane must build.
  bool steps_on(Level level) const { return steps_on_[static_cast<size_t>(level)]; }
  const GroupLayout& layout() const { return layout_; }
  const CostModel& costs() const { return costs_; }
  const RouterOptions& options() const { return options_; }

 private:
  bool feasible(const PlanShape& shape, Collective op) const;
  // The plan of shape for op, its algorithms chosen and its time predicted; shape must be
  // feasible for op.
  Plan priced(const PlanShape& shape, Collective op, size_t bytes) const;
  // Seconds for one step whose op moves bytes (as AlgorithmTable.h sizes them); step.algorithm
  // receives what runs.
  double step_seconds(Step& step, double bytes) const;
  // Time of an inter-host all-reduce of bytes among ranks ranks, flows of them sharing one
  // host's link at once; algorithm receives what the inter transport runs.
  double inter_allreduce(int ranks, double bytes, int flows, std::string* algorithm) const;
  // An in-host step on the intra-host transport's own collectives among ranks.
  double intra_seconds(Collective op, int ranks, double bytes) const;
  // An inter-host step's algorithm as reported and handed down: name where the transport runs
  // the table's algorithms, "" where its own collectives decide.
  std::string inter_name(std::string_view name) const;
  // How many units (Plan.h) blocks stands for, sized for pricing: the largest host's.
  double units(Blocks blocks) const;

  GroupLayout layout_;
  CostModel costs_;
  RouterOptions options_;
  const PlanShape* forced_ = nullptr;
  bool uses_inter_ = false;
  bool steps_on_[kLevels] = {};  // by Level
  size_t inter_small_bytes_ = 64 * 1024;
  // Flat rings (all-gather, reduce-scatter) in group-rank order: the most ring edges leaving
  // one host, i.e. how many of their flows share that host's link (1 with host-contiguous
  // ranks, up to the local size when ranks alternate between hosts).
  int ring_flows_ = 1;
  // Every host has one rank: the split-rail plans are a single rail step, nothing to pipeline.
  bool one_rank_per_host_ = false;
  int most_host_ranks_ = 1;
};

}  // namespace domino::topology
