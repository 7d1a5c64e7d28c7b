#include "AlgorithmTable.h"

#include <bit>
#include <cmath>

namespace domino::topology {

namespace {
double log2_ceil(int n) {
  return n <= 1 ? 0.0 : std::ceil(std::log2(static_cast<double>(n)));
}
int pof2_of(int ranks) {
  return static_cast<int>(std::bit_floor(static_cast<unsigned>(ranks)));
}
double alpha(const LinkCost& c) {
  return c.latency_us * 1e-6;
}
double beta(const LinkCost& c) {
  return 1.0 / (c.gbytes_per_s * 1e9);
}
// Non-powers of two fold the extra ranks in and out: two more whole-message rounds.
double fold(int ranks, double bytes, int flows, const LinkCost& c) {
  return pof2_of(ranks) == ranks ? 0.0 : 2 * (alpha(c) + bytes * beta(c) * flows);
}

double recursive_doubling_seconds(int ranks, double bytes, int flows, const LinkCost& c) {
  return log2_ceil(pof2_of(ranks)) * (alpha(c) + bytes * beta(c) * flows) +
         fold(ranks, bytes, flows, c);
}
double rabenseifner_seconds(int ranks, double bytes, int flows, const LinkCost& c) {
  const int p = pof2_of(ranks);
  return 2 * log2_ceil(p) * alpha(c) + 2.0 * (p - 1) / p * bytes * beta(c) * flows +
         fold(ranks, bytes, flows, c);
}
double ring_seconds(int ranks, double bytes, int flows, const LinkCost& c) {
  return 2.0 * (ranks - 1) * (alpha(c) + bytes / ranks * beta(c) * flows);
}
}  // namespace

const std::vector<AlgorithmEntry>& algorithm_table() {
  static const std::vector<AlgorithmEntry> table = {
      {"ring",
       "2(p-1) rounds of n/p: reduce-scatter then all-gather around the ranks",
       {"all_reduce", "all_gather", "reduce_scatter"},
       AlgorithmHome::kLinks,
       ring_seconds},
      {"recursive_doubling",
       "log p rounds of the whole message (latency-optimal)",
       {"all_reduce"},
       AlgorithmHome::kLinks,
       recursive_doubling_seconds},
      {"rabenseifner",
       "recursive-halving reduce-scatter, then recursive-doubling all-gather",
       {"all_reduce"},
       AlgorithmHome::kLinks,
       rabenseifner_seconds},
      {"binomial_tree",
       "log p rounds from or to the root",
       {"broadcast", "reduce"},
       AlgorithmHome::kLinks,
       nullptr},
      {"direct",
       "the root (all-to-all: every rank) posts a message per peer at once",
       {"gather", "scatter", "all_to_all"},
       AlgorithmHome::kLinks,
       nullptr},
      {"dissemination",
       "ceil(log2 p) rounds of empty messages",
       {"barrier"},
       AlgorithmHome::kLinks,
       nullptr},
      {"direct",
       "every rank reduces the whole message from the segment (latency-optimal)",
       {"all_reduce"},
       AlgorithmHome::kShm,
       nullptr},
      {"rsag",
       "each rank reduces its slice of every chunk, then all copy the slices out",
       {"all_reduce"},
       AlgorithmHome::kShm,
       nullptr},
  };
  return table;
}

const AlgorithmEntry* find_algorithm(std::string_view name, std::string_view op,
                                     AlgorithmHome home) {
  for (const AlgorithmEntry& e : algorithm_table()) {
    if (e.name != name || e.home != home) continue;
    for (std::string_view served : e.ops) {
      if (served == op) return &e;
    }
  }
  return nullptr;
}

std::string algorithm_names(std::string_view op, AlgorithmHome home) {
  std::string out;
  for (const AlgorithmEntry& e : algorithm_table()) {
    if (find_algorithm(e.name, op, home) != &e) continue;
    out += (out.empty() ? "" : ", ") + std::string(e.name);
  }
  return out;
}

std::string_view auto_links_allreduce(size_t bytes, int ranks, size_t small_message_bytes) {
  if (bytes <= small_message_bytes) return "recursive_doubling";
  // Both move 2(p-1)/p of the message; Rabenseifner in 2 log p rounds instead of 2(p-1), but
  // folding in a non-power of two costs a whole extra message, which the ring avoids.
  return pof2_of(ranks) == ranks ? "rabenseifner" : "ring";
}

size_t recursive_doubling_limit(int ranks, const LinkCost& c) {
  size_t limit = 0;
  for (size_t bytes = 256; bytes <= (size_t{1} << 30); bytes *= 2) {
    const double n = static_cast<double>(bytes);
    const double doubling = log2_ceil(ranks) * c.seconds_for(n);
    // As the router always wrote it (the same rounding, so the same threshold).
    const double bandwidth = pof2_of(ranks) == ranks
                                 ? 2 * log2_ceil(ranks) * c.latency_us * 1e-6 +
                                       2.0 * (ranks - 1) / ranks * n / (c.gbytes_per_s * 1e9)
                                 : 2.0 * (ranks - 1) * c.seconds_for(n / ranks);
    if (doubling > bandwidth) break;
    limit = bytes;
  }
  return limit;
}

}  // namespace domino::topology
