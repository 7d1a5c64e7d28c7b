#include "AlgorithmTable.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "PlanShapes.h"

namespace domino::topology {

namespace {
std::atomic<uint64_t> added{0};
std::vector<AlgorithmEntry>& entries() {
  // Filled during static initialization, by each algorithm's own file (AlgorithmTable.h).
  static std::vector<AlgorithmEntry> table;
  return table;
}
// A name serves an op at a home once (add_algorithm), so this entry is the one for it there.
bool serves(const AlgorithmEntry& e, std::string_view op, AlgorithmHome home) {
  if (e.home != home) return false;
  for (std::string_view served : e.ops) {
    if (served == op) return true;
  }
  return false;
}
}  // namespace

const std::vector<AlgorithmEntry>& algorithm_table() {
  return entries();
}

bool is_algo_word(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

void add_algorithm(AlgorithmEntry entry) {
  if (!is_algo_word(entry.name)) {
    throw std::logic_error("algorithm '" + std::string(entry.name) +
                           "' is not made of lowercase letters, digits and '_' (DOMINO_ALGO "
                           "lowercases what it is given, so it could never name it); rename it");
  }
  for (std::string_view op : entry.ops) {
    // DOMINO_ALGO reads a word as a plan before an all-reduce algorithm.
    if (op == "all_reduce" && forces_a_plan(entry.name)) {
      throw std::logic_error("all-reduce algorithm '" + std::string(entry.name) +
                             "' has the DOMINO_ALGO word of a plan shape, which would hide it; "
                             "rename it");
    }
    if (find_algorithm(entry.name, op, entry.home) != nullptr) {
      throw std::logic_error("two algorithms named '" + std::string(entry.name) + "' serve " +
                             std::string(op) + "; rename one");
    }
  }
  std::vector<AlgorithmEntry>& table = entries();
  table.push_back(std::move(entry));
  std::stable_sort(table.begin(), table.end(),
                   [](const AlgorithmEntry& a, const AlgorithmEntry& b) {
                     return a.home != b.home ? a.home < b.home : a.name < b.name;
                   });
  added.fetch_add(1, std::memory_order_release);
}

uint64_t algorithm_table_version() {
  return added.load(std::memory_order_acquire);
}

const AlgorithmEntry* find_algorithm(std::string_view name, std::string_view op,
                                     AlgorithmHome home) {
  for (const AlgorithmEntry& e : algorithm_table()) {
    if (e.name == name && serves(e, op, home)) return &e;
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

const AlgorithmEntry* cheapest_algorithm(std::string_view op, AlgorithmHome home, int ranks,
                                         double bytes, int flows, const TransportCost& cost,
                                         double* seconds) {
  const AlgorithmEntry* best = nullptr;
  for (const AlgorithmEntry& e : algorithm_table()) {
    // Asked on calls handed no name too (shared memory's own choice): one pass over the table.
    if (e.seconds == nullptr || !serves(e, op, home)) continue;
    const double t = e.seconds(ranks, bytes, flows, cost);
    if (best == nullptr || t < *seconds) {
      best = &e;
      *seconds = t;
    }
  }
  return best;
}

std::string_view auto_links_allreduce(size_t bytes, int ranks, size_t small_message_bytes) {
  if (bytes <= small_message_bytes) return "recursive_doubling";
  // Both move 2(p-1)/p of the message; Rabenseifner in 2 log p rounds instead of 2(p-1), but
  // folding in a non-power of two costs a whole extra message, which the ring avoids.
  return power_of_two_below(ranks) == ranks ? "rabenseifner" : "ring";
}

size_t recursive_doubling_limit(int ranks, const TransportCost& c) {
  size_t limit = 0;
  for (size_t bytes = 256; bytes <= (size_t{1} << 30); bytes *= 2) {
    const double n = static_cast<double>(bytes);
    const double doubling = log2_ceil(ranks) * c.seconds_for(n);
    const double bandwidth = power_of_two_below(ranks) == ranks
                                 ? 2 * log2_ceil(ranks) * alpha_seconds(c) +
                                       2.0 * (ranks - 1) / ranks * n * seconds_per_byte(c)
                                 : 2.0 * (ranks - 1) * c.seconds_for(n / ranks);
    if (doubling > bandwidth) break;
    limit = bytes;
  }
  return limit;
}

}  // namespace domino::topology
