// Which all-reduce algorithm runs over PeerLinks: a name forced through the plugin ABI's
// `algorithm` field (DOMINO_ALGO), or the size rule when none is.
#pragma once

#include <cstddef>

namespace domino::algorithms {

// Where config->small_message_bytes is 0: at or below, the latency-optimal algorithm.
inline constexpr size_t kDefaultSmallMessageBytes = 64 * 1024;

enum class AllreduceAlgorithm { kAuto, kRing, kRecursiveDoubling, kRabenseifner };

// Throws TransportError(INVALID), naming `transport`, for names the shared algorithms lack.
AllreduceAlgorithm parse_allreduce_algorithm(const char* name, const char* transport);
const char* allreduce_algorithm_name(AllreduceAlgorithm algorithm);
// The algorithm kAuto picks for `bytes` among `ranks`, given the small-message threshold.
AllreduceAlgorithm auto_allreduce_algorithm(size_t bytes, int ranks, size_t small_message_bytes);

// forced unless it is kAuto, else the size rule.
AllreduceAlgorithm resolve_allreduce_algorithm(AllreduceAlgorithm forced, size_t bytes, int ranks,
                                               size_t small_message_bytes);

class PeerLinks;
// Runs `algorithm` in place, AVG included; resolve kAuto with auto_allreduce_algorithm first
// (kAuto throws TransportError(INVALID)).
void run_allreduce(PeerLinks& links, AllreduceAlgorithm algorithm, void* data, size_t count,
                   int dtype, int op);

}  // namespace domino::algorithms
