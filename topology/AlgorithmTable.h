// The one table of collective algorithms: each entry's name, what it does, which ops and which
// transports it serves, and, where the router models it, its alpha-beta cost. DOMINO_ALGO's
// parsing, the router's prediction and the report, and the transports' run all read it, and the
// all-reduce size rule lives here alone, so what the router predicts is what runs. Torch-free.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "CostModel.h"

namespace domino::topology {

// Where an algorithm runs: over any transport's PeerLinks (UCX, plugins with links), or inside
// the shared-memory transport.
enum class AlgorithmHome { kLinks, kShm };

struct AlgorithmEntry {
  std::string_view name;
  std::string_view description;
  std::vector<std::string_view> ops;  // collective_name() spellings
  AlgorithmHome home;
  // Seconds for an all-reduce of bytes among ranks, `flows` of them sharing one link; nullptr
  // where the router does not model the algorithm.
  double (*allreduce_seconds)(int ranks, double bytes, int flows, const LinkCost& link);
};

const std::vector<AlgorithmEntry>& algorithm_table();
// The entry named `name` serving `op` at `home`; nullptr if none.
const AlgorithmEntry* find_algorithm(std::string_view name, std::string_view op,
                                     AlgorithmHome home);
// The names serving `op` at `home`, in table order, e.g. "ring, recursive_doubling, rabenseifner".
std::string algorithm_names(std::string_view op, AlgorithmHome home);

// The all-reduce over links at or below small_message_bytes: recursive doubling; above it,
// Rabenseifner for powers of two and ring otherwise.
std::string_view auto_links_allreduce(size_t bytes, int ranks, size_t small_message_bytes);
// The largest power of two of bytes (256 B .. 1 GiB, 0 if none) for which recursive doubling
// beats the bandwidth-optimal algorithm among `ranks` over `link`: the router's threshold.
size_t recursive_doubling_limit(int ranks, const LinkCost& link);

}  // namespace domino::topology
