#include <cstring>
#include <vector>

#include "Algorithms.h"
#include "Blocks.h"
#include "Registration.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"

namespace domino::algorithms {

void reduce_binomial(PeerLinks& links, const void* send, void* recv, size_t count,
                     domino_dtype_t dtype, domino_redop_t op, int root) {
  const int size = links.size();
  const size_t bytes = count * dtype_size(dtype);
  std::vector<char> acc(static_cast<const char*>(send), static_cast<const char*>(send) + bytes);
  std::vector<char> theirs(bytes);
  const int me = (links.rank() - root + size) % size;
  auto real = [&](int virtual_rank) { return (virtual_rank + root) % size; };
  for (int mask = 1; mask < size; mask <<= 1) {
    if (me & mask) {
      links.exchange(real(me - mask), acc.data(), bytes, -1, nullptr, 0);
      return;
    }
    if (me + mask < size) {
      links.exchange(-1, nullptr, 0, real(me + mask), theirs.data(), bytes);
      combine(acc.data(), theirs.data(), count, dtype, op);
    }
  }
  if (bytes > 0) std::memcpy(recv, acc.data(), bytes);
  if (op == DOMINO_AVG) divide_buffer(recv, count, dtype, size);
}

namespace {
// log p rounds of the whole message, one flow per rank.
double reduce_seconds(int ranks, double bytes, int flows, const topology::TransportCost& c) {
  return topology::log2_ceil(ranks) *
         (topology::alpha_seconds(c) + bytes * topology::seconds_per_byte(c) * flows);
}

const bool registered =
    register_algorithm({"binomial_tree",
                        "log p rounds to the root",
                        {"reduce"},
                        topology::AlgorithmHome::kLinks,
                        reduce_seconds},
                       [](PeerLinks& links, const domino_call_t& call) {
                         reduce_binomial(links, call.send->ptr, call.recv->ptr, call.send->count,
                                         call.send->dtype, call.redop, call.root);
                       });
}  // namespace

}  // namespace domino::algorithms
