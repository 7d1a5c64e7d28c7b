// Which all-reduce runs over PeerLinks: the name the router handed down with the call, else a
// name forced through the plugin ABI's `algorithm` field (DOMINO_ALGO), else the size rule.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace domino::algorithms {

// Where config->small_message_bytes is 0: at or below, the latency-optimal algorithm.
inline constexpr size_t kDefaultSmallMessageBytes = 64 * 1024;

// name itself ("" for NULL or empty: no choice); throws TransportError(INVALID), naming
// `transport` and the names there are, for one no registered all-reduce has.
std::string parse_allreduce_algorithm(const char* name, const char* transport);

// handed_down, else forced, else the size rule (both may be empty).
std::string_view resolve_allreduce_algorithm(std::string_view handed_down, std::string_view forced,
                                             size_t bytes, int ranks, size_t small_message_bytes);

class PeerLinks;
// Runs the all-reduce registered as `algorithm` in place, AVG included; throws
// TransportError(UNSUPPORTED) naming the transport's op for a name none has (before any message,
// so the caller may run another).
void run_allreduce(PeerLinks& links, std::string_view algorithm, void* data, size_t count,
                   int dtype, int op);

}  // namespace domino::algorithms
