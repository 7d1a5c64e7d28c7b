// The one table of collective algorithms: each entry's name, what it does, which ops and which
// transports it serves, and, where the router models it, its alpha-beta cost. DOMINO_ALGO's
// parsing, the router's choice and prediction, the report and the transports' run all read it.
// Every entry is added from its algorithm's own file: one over PeerLinks through
// plugins/algorithms/Registration.h, a path of the shared-memory transport through
// plugins/shm/ShmAlgorithms.h. Both libraries are linked whole into the transports (libdomino
// and the C++ tests), so there the table holds them all; a binary that links the topology
// library alone sees none of them. Torch-free.
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

// Whether an entry can run at all among ranks over a transport costing `cost`, whatever the size.
using Runs = bool (*)(int ranks, const TransportCost& cost);

// Seconds for one call of an entry's op among ranks over a transport costing `cost`, `flows` of its
// flows sharing one host's NIC. bytes is the op's message as the router sizes it: the whole buffer
// of an all-reduce, broadcast or reduce; one rank's block of an all-gather, reduce-scatter, gather
// or scatter; what one rank sends in all of an all-to-all; 0 for a barrier.
using Seconds = double (*)(int ranks, double bytes, int flows, const TransportCost& cost);

struct AlgorithmEntry {
  std::string_view name;
  std::string_view description;
  std::vector<std::string_view> ops;  // collective_name() spellings
  AlgorithmHome home;
  // The cost of one call of any of its ops; nullptr where the router does not model it.
  Seconds seconds;
  // nullptr: wherever its transport runs. Where it returns false, the router hands a forced
  // name down no more and takes the cheapest of the others (its cost is then infinite as well).
  Runs runs = nullptr;
};

// Every entry, ordered by home, then name (the same on every rank of one build). Complete once
// static initialization is over.
const std::vector<AlgorithmEntry>& algorithm_table();
// Adds entry (during static initialization). Throws std::logic_error for a name that already
// serves one of its ops at its home, one DOMINO_ALGO cannot spell (is_algo_word), or an
// all-reduce's name that is a plan shape's DOMINO_ALGO word (add_plan_shape refuses the
// converse, so whichever registers second is refused).
void add_algorithm(AlgorithmEntry entry);
// Counts the entries added so far: a choice made from the table holds while this is unchanged.
uint64_t algorithm_table_version();

// Whether a registered name can be given in DOMINO_ALGO, which lowercases what it is given:
// lowercase letters, digits and '_', not empty.
bool is_algo_word(std::string_view name);
// The entry named `name` serving `op` at `home`; nullptr if none.
const AlgorithmEntry* find_algorithm(std::string_view name, std::string_view op,
                                     AlgorithmHome home);
// The names serving `op` at `home`, in table order, e.g. "rabenseifner, recursive_doubling, ring".
std::string algorithm_names(std::string_view op, AlgorithmHome home);

// The cheapest entry serving op at home among `ranks` for bytes, `flows` of them sharing a link,
// by the entries' own costs (ties: table order); *seconds receives its cost. nullptr when no
// entry serving it has a cost.
const AlgorithmEntry* cheapest_algorithm(std::string_view op, AlgorithmHome home, int ranks,
                                         double bytes, int flows, const TransportCost& cost,
                                         double* seconds);

// What a transport runs over links when nothing was handed down: at or below
// small_message_bytes recursive doubling; above it, Rabenseifner for powers of two and ring
// otherwise.
std::string_view auto_links_allreduce(size_t bytes, int ranks, size_t small_message_bytes);
// The largest power of two of bytes (256 B .. 1 GiB, 0 if none) for which recursive doubling
// beats the bandwidth-optimal algorithm among `ranks` over a transport costing `cost`: the
// threshold the router gives transports for their own choice.
size_t recursive_doubling_limit(int ranks, const TransportCost& cost);

}  // namespace domino::topology
