// Which algorithm runs over PeerLinks for a call: the name the router handed down with it; else,
// for an all-reduce, a name forced through the plugin ABI's `algorithm` field (DOMINO_ALGO) or
// the size rule; else the table's cheapest algorithm for the op.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "domino/plugin.h"
#include "topology/Collectives.h"

namespace domino::algorithms {

class PeerLinks;

// Where config->small_message_bytes is 0: at or below, the latency-optimal all-reduce.
inline constexpr size_t kDefaultSmallMessageBytes = 64 * 1024;

// name itself ("" for NULL or empty: no choice); throws TransportError(INVALID), naming
// `transport` and the names there are, for one no all-reduce over links has.
std::string parse_allreduce_algorithm(const char* name, const char* transport);

// handed_down; else for an all-reduce forced, else the size rule at small_message_bytes
// (topology::auto_links_allreduce, the threshold the router computed for the transport); else
// the table's cheapest algorithm over links for call's op among `ranks`, sized as the router
// sizes it, under the router's default cost between hosts (CostModel.h: the transport is told no
// cost). "" where the table has none for the op.
std::string_view resolve_algorithm(const domino_call_t& call, std::string_view handed_down,
                                   std::string_view forced, int ranks, size_t small_message_bytes);

// Whether an algorithm over links named `name` serves op (a body is registered for it).
bool runs_over_links(topology::Collective op, std::string_view name);

// Runs the algorithm registered as `algorithm` for call.op over links; throws
// TransportError(UNSUPPORTED) naming the transport's op for a name that op lacks (before any
// message, so the caller may run another).
void run_algorithm(PeerLinks& links, std::string_view algorithm, const domino_call_t& call);

}  // namespace domino::algorithms
