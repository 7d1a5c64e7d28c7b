// How an algorithm over PeerLinks joins the build: its own file registers its table entry (the
// router, the report and DOMINO_ALGO read it) and its body, which every transport that runs the
// shared algorithms calls by the name the router hands down. A new algorithm is one file:
//
//   namespace {
//   double my_seconds(int ranks, double bytes, int flows, const topology::TransportCost& cost);
//   void my_allreduce(PeerLinks& links, const domino_call_t& call);
//   const bool registered = register_algorithm(
//       {"my_name", "what it does", {"all_reduce"}, topology::AlgorithmHome::kLinks, my_seconds},
//       my_allreduce);
//   }
//
// The library is linked whole (CMake's WHOLE_ARCHIVE), so a file nothing calls still registers.
#pragma once

#include <string_view>

#include "PeerLinks.h"
#include "domino/plugin.h"
#include "topology/AlgorithmTable.h"

namespace domino::algorithms {

// Runs one call of the entry's op over links. An all-reduce works in place in call.recv (the
// caller copies the input there first); AVG included (sum, then divide by the group's size).
using Body = void (*)(PeerLinks& links, const domino_call_t& call);

// Adds an algorithm over links: entry must run at AlgorithmHome::kLinks, serve one op, and have
// a cost and a body. Returns true (for a namespace-scope initializer); throws std::logic_error
// for a name taken for that op or an entry that is not one.
bool register_algorithm(topology::AlgorithmEntry entry, Body body);
// The body registered under name for op (collective_name() spelling); nullptr if none.
Body find_body(std::string_view op, std::string_view name);

}  // namespace domino::algorithms
