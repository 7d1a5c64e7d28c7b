#include "Algorithms.h"
#include "Registration.h"
#include "plugins/common/Dtype.h"

namespace domino::algorithms {

void broadcast_binomial(PeerLinks& links, void* data, size_t bytes, int root) {
  const int size = links.size();
  const int me = (links.rank() - root + size) % size;
  auto real = [&](int virtual_rank) { return (virtual_rank + root) % size; };
  int mask = 1;
  for (; mask < size; mask <<= 1) {
    if (me & mask) {
      links.exchange(-1, nullptr, 0, real(me - mask), data, bytes);
      break;
    }
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (me + mask < size) links.exchange(real(me + mask), data, bytes, -1, nullptr, 0);
  }
}

namespace {
// log p rounds of the whole message, one flow per rank.
double broadcast_seconds(int ranks, double bytes, int flows, const topology::TransportCost& c) {
  return topology::log2_ceil(ranks) *
         (topology::alpha_seconds(c) + bytes * topology::seconds_per_byte(c) * flows);
}

const bool registered = register_algorithm(
    {"binomial_tree",
     "log p rounds from the root",
     {"broadcast"},
     topology::AlgorithmHome::kLinks,
     broadcast_seconds},
    [](PeerLinks& links, const domino_call_t& call) {
      broadcast_binomial(links, call.recv->ptr, call.recv->count * dtype_size(call.recv->dtype),
                         call.root);
    });
}  // namespace

}  // namespace domino::algorithms
