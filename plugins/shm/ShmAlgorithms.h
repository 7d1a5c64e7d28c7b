// How a path of the shared-memory transport joins the build: its own file registers its table
// entry (priced by topology/ShmCosts.h; the router, the report and DOMINO_ALGO read it) and its
// body, which ShmCommunicator::collective runs by the name the router hands down, or, handed
// none, by the table's cheapest for the call. A new path is one file:
//
//   namespace domino::shm {
//   namespace { struct MyPath; }
//   template <>
//   void run_path<MyPath>(ShmCommunicator& comm, const domino_call_t& call) {
//     ... the communicator's rounds (run_chunks, slot, ...) ...
//   }
//   namespace {
//   const bool registered = register_shm_algorithm(
//       {"my_name", "what it does", {"all_reduce"}, topology::AlgorithmHome::kShm, my_seconds},
//       run_path<MyPath>);
//   }
//   }  // namespace domino::shm
//
// The shared-memory library is linked whole (CMake's WHOLE_ARCHIVE) into the transports, so a
// file nothing calls still registers in every binary that links them (libdomino, the C++ tests).
#pragma once

#include <string_view>

#include "domino/plugin.h"
#include "topology/AlgorithmTable.h"
#include "topology/Collectives.h"

namespace domino::shm {

class ShmCommunicator;

// Runs one call of the entry's op, by this path, on comm's segment.
using ShmBody = void (*)(ShmCommunicator& comm, const domino_call_t& call);

// Adds a path: entry must run at AlgorithmHome::kShm, serve one op, and have a cost and a body.
// Returns true (for a namespace-scope initializer); throws std::logic_error for a name taken for
// that op or an entry that is not one.
bool register_shm_algorithm(topology::AlgorithmEntry entry, ShmBody body);
// The body registered under name for op; nullptr if none.
ShmBody find_shm_body(topology::Collective op, std::string_view name);

// What a communicator prices a call handed no name with: CostModel's in-host defaults, the host's
// CPUs and whether its ranks can read each other's memory (the probe's verdict). The paths' costs
// all scale one alpha-beta model, so their regimes decide, not its two numbers; the router's
// measured or configured costs would choose alike.
topology::TransportCost shm_own_cost(int cpus, bool single_copy);
// What shared memory runs for op among ranks when handed no name: the table's cheapest path for
// it over a transport costing `cost`, for a message of `bytes` as the router sizes it
// (AlgorithmTable.h); nullptr for an op no path serves.
const topology::AlgorithmEntry* shm_own_choice(topology::Collective op, int ranks, double bytes,
                                               const topology::TransportCost& cost);

}  // namespace domino::shm
