// How an algorithm over PeerLinks joins the build: its own file registers its table entry (the
// router, the report and DOMINO_ALGO read it) and, for an all-reduce, its body (every transport
// that runs the shared algorithms calls it by the name the router hands down). A new all-reduce
// is one file:
//
//   namespace {
//   double my_seconds(int ranks, double bytes, int flows, const topology::LinkCost& link);
//   void my_allreduce(PeerLinks& links, void* data, size_t count, domino_dtype_t dtype,
//                     domino_redop_t op);
//   const bool registered = register_allreduce(
//       {"my_name", "what it does", {"all_reduce"}, topology::AlgorithmHome::kLinks, my_seconds},
//       my_allreduce);
//   }
//
// The library is linked whole (CMake's WHOLE_ARCHIVE), so a file nothing calls still registers.
#pragma once

#include <cstddef>
#include <string_view>

#include "PeerLinks.h"
#include "domino/plugin.h"
#include "topology/AlgorithmTable.h"

namespace domino::algorithms {

// In place; AVG included (sum, then divide by the group's size).
using AllreduceBody = void (*)(PeerLinks& links, void* data, size_t count, domino_dtype_t dtype,
                               domino_redop_t op);

// Adds an all-reduce over links: entry must serve "all_reduce" at AlgorithmHome::kLinks and
// have a cost. Returns true (for a namespace-scope initializer); throws std::logic_error for a
// name taken or an entry that is not one.
bool register_allreduce(topology::AlgorithmEntry entry, AllreduceBody body);
// Adds the entry of a shared algorithm the transports call directly (the only one for its ops).
bool register_algorithm(topology::AlgorithmEntry entry);
// The body registered under name; nullptr if none.
AllreduceBody find_allreduce(std::string_view name);

}  // namespace domino::algorithms
