#include "Algorithms.h"
#include "Registration.h"

namespace domino::algorithms {

void barrier_dissemination(PeerLinks& links) {
  const int rank = links.rank(), size = links.size();
  for (int distance = 1; distance < size; distance <<= 1) {
    links.exchange((rank + distance) % size, nullptr, 0, (rank - distance + size) % size, nullptr,
                   0);
  }
}

namespace {
double barrier_seconds(int ranks, double, int, const topology::TransportCost& c) {
  return topology::log2_ceil(ranks) * topology::alpha_seconds(c);
}

const bool registered = register_algorithm(
    {"dissemination",
     "ceil(log2 p) rounds of empty messages",
     {"barrier"},
     topology::AlgorithmHome::kLinks,
     barrier_seconds},
    [](PeerLinks& links, const domino_call_t&) { barrier_dissemination(links); });
}  // namespace

}  // namespace domino::algorithms
