// A plan as data: the steps a collective takes over the group's communicators, with the
// algorithm each step runs and the chunks a two-level plan is pipelined in. The router builds
// it (Router.h); the executor (backend/engine/RoutedComm) runs its steps and hands each step's
// algorithm to the transport; the report and the plan trial read the same structure.
// Torch-free.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "Collectives.h"

namespace domino::topology {

// flat_intra    one communicator over the group on the intra-host transport (one host only);
// flat_inter    one communicator over the group on the inter-host transport;
// hierarchical  split-rail: steps inside each host and along the rails (the ranks with the
//               same local rank across hosts), pipelined in chunks;
// leader        through each host's first rank.
enum class PlanKind { kFlatIntra, kFlatInter, kHierarchical, kLeader };
// Which of a lane's communicators a step runs on.
enum class Level {
  kGroup,    // the whole group
  kHost,     // this host's ranks
  kRail,     // the ranks with this local rank, one per host
  kLeaders,  // each host's first rank
};

const char* plan_name(PlanKind kind);
const char* level_name(Level level);
const std::vector<Collective>& all_collectives();

struct Step {
  Level level = Level::kGroup;
  bool inter = false;  // on the inter-host transport (else the intra-host one)
  Collective op = Collective::kAllReduce;
  // The table's name of what runs (AlgorithmTable.h), handed to the transport with the call;
  // empty where the transport's native collective decides for itself (shared memory's fused
  // paths, a plugin's own).
  std::string algorithm;
};

struct Plan {
  PlanKind kind = PlanKind::kFlatIntra;
  std::vector<Step> steps;
  // Chunks a hierarchical plan is pipelined in (Router::rail_chunks); 1 for every other plan.
  size_t chunks = 1;
  double predicted_us = 0;
  bool forced = false;

  // The algorithm of the first step on the inter-host transport that has one; "" if none.
  const std::string& inter_algorithm() const;
  // The algorithm of the first step doing op on level; "" if none.
  const std::string& algorithm_of(Level level, Collective op) const;
  // "reduce_scatter@host > all_reduce@rail:ring > all_gather@host x8".
  std::string describe() const;
};

}  // namespace domino::topology
