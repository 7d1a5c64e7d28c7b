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
const bool registered = register_algorithm({"dissemination",
                                            "ceil(log2 p) rounds of empty messages",
                                            {"barrier"},
                                            topology::AlgorithmHome::kLinks,
                                            nullptr});
}  // namespace

}  // namespace domino::algorithms
