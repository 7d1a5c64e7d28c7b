// A plan as data: the schedule of steps a collective takes over the group's communicators. Each
// step names the communicator (level), what it does there (a collective with its algorithm and
// root, or a local copy between block orders), the views of the call's buffers and of scratch
// it reads and writes, and which ranks take part. The router builds plans from the templates of
// the registered plan shapes (PlanShapes.h), prices them step by step, and fills in each step's
// algorithm (Router.h); the report, the plan trial and the executor (backend/engine/PlanRun) read
// the same structure. Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "Collectives.h"

namespace domino::topology {

// Which of a lane's communicators a step runs on.
enum class Level {
  kGroup,    // the whole group
  kHost,     // this host's ranks
  kRail,     // the ranks with this local rank, one per host, in host order
  kLeaders,  // each host's first rank, in host order
};
inline constexpr size_t kLevels = 4;
// What a step does.
enum class Action : uint8_t {
  kCollective,     // op on the level's communicator
  kToHostOrder,    // local: the blocks of `in` (the call's, in group-rank order) into `out`, in
                   // `order`
  kFromHostOrder,  // local: the blocks of `in`, in `order`, into `out` (the call's, group order)
  kCopy,           // local: in to out
};
// The buffers a step reads and writes: the call's own, and scratch the executor allocates (the
// largest view of each decides its size).
enum class Buffer : uint8_t { kSend, kRecv, kScratch0, kScratch1, kScratch2 };
inline constexpr int kScratchBuffers = 3;
// How many of the plan's units a view holds. A unit is the call's message cut by the plan's
// data_blocks (all-reduce), one rank's block (all-gather, reduce-scatter, gather, scatter), or
// the whole message. Views are chunk-major: chunk c of a pipelined plan is units
// [c * per, c * per + size(c)) of each block, the blocks of one chunk side by side.
enum class Blocks : uint8_t {
  kOne,
  kHostRanks,      // this rank's host's ranks
  kMostHostRanks,  // the most ranks any host has
  kHosts,
  kHostsByMost,  // hosts x the most ranks any host has
  kGroup,
};
// Which ranks take part in a step; the others skip it.
enum class Members : uint8_t {
  kAll,
  kLeaders,     // each host's first rank
  kRootHost,    // the ranks on the call root's host
  kOtherHosts,  // the ranks on every other host
  kRootRail,    // the ranks with the call root's local rank
  kRoot,        // the call's root
};
// The root a rooted step passes to its communicator.
enum class RootIs : uint8_t {
  kNone,
  kFirst,      // the level's first rank (a host's first rank on kHost)
  kCallRoot,   // the call's root (kGroup)
  kRootLocal,  // the call root's local rank (kHost)
  kRootHost,   // the call root's host (kRail, kLeaders)
};
// How kToHostOrder and kFromHostOrder place rank (host h, local rank l)'s block:
enum class BlockOrder : uint8_t {
  kRailMajor,  // at l * hosts + h (uniform layouts: the order a host step over rail blocks gives)
  kHostMajor,  // at h * most + l (hosts padded to the most ranks any host has)
};

struct View {
  Buffer buffer = Buffer::kRecv;
  Blocks blocks = Blocks::kOne;
};

struct Step {
  Action action = Action::kCollective;
  Level level = Level::kGroup;
  bool inter = false;  // on the inter-host transport (else the intra-host one)
  Collective op = Collective::kAllReduce;
  View in, out;
  Members members = Members::kAll;
  RootIs root = RootIs::kNone;
  BlockOrder order = BlockOrder::kRailMajor;
  // The table's name of what runs (AlgorithmTable.h), chosen by the router and handed to the
  // transport with the call; empty where the transport decides for itself.
  std::string algorithm;
};

struct Plan {
  // The name of the plan shape it was made from (PlanShapes.h), as the report, the plan trial and
  // the executor's messages give it; it points at the registered name.
  std::string_view shape;
  Collective op = Collective::kAllReduce;
  std::vector<Step> steps;
  // Templates: needs the same number of ranks on every host (rails).
  bool needs_uniform = false;
  // Templates: its rail steps may run in a pipeline of chunks (host memory), the steps before
  // them and after them on the calling thread.
  bool pipelined = false;
  // All-reduce: the message is cut into this many equal units (padded where it does not divide).
  Blocks data_blocks = Blocks::kOne;
  // Chunks the plan goes in (Router::rail_chunks); 1 for a plan that is not pipelined.
  size_t chunks = 1;
  double predicted_us = 0;
  bool forced = false;

  // The algorithm of the first step on the inter-host transport that has one; "" if none.
  const std::string& inter_algorithm() const;
  // The algorithm of the first step doing op on level; "" if none.
  const std::string& algorithm_of(Level level, Collective op) const;
  // Whether it is one collective over the whole group, run with the call's own arguments.
  bool flat() const;
  // "reduce_scatter@host > all_reduce@rail:ring > all_gather@host x8".
  std::string describe() const;
};

const char* level_name(Level level);
const std::vector<Collective>& all_collectives();

}  // namespace domino::topology
