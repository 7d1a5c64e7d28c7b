#include <cstring>
#include <vector>

#include "Algorithms.h"
#include "Blocks.h"
#include "Registration.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"

namespace domino::algorithms {

void allreduce_recursive_doubling(PeerLinks& links, void* buffer, size_t count,
                                  domino_dtype_t dtype, domino_redop_t op) {
  char* data = static_cast<char*>(buffer);
  const size_t bytes = count * dtype_size(dtype);
  Fold fold(links);
  const int me = fold.fold_in(data, count, dtype, op);
  if (me >= 0) {
    std::vector<char> theirs(bytes);
    for (int mask = 1; mask < fold.pof2(); mask <<= 1) {
      const int partner = fold.unfolded(me ^ mask);
      links.exchange(partner, data, bytes, partner, theirs.data(), bytes);
      // Both partners apply op with the lower rank's operand first, so order-sensitive cases
      // (NaN or signed zeros under MIN and MAX) end up the same on both.
      if (links.rank() < partner) {
        combine(data, theirs.data(), count, dtype, op);
      } else {
        combine(theirs.data(), data, count, dtype, op);
        if (bytes > 0) std::memcpy(data, theirs.data(), bytes);
      }
    }
  }
  fold.fold_out(data, bytes, me);
  if (op == DOMINO_AVG) divide_buffer(data, count, dtype, links.size());
}

namespace {
double recursive_doubling_seconds(int ranks, double bytes, int flows,
                                  const topology::TransportCost& c) {
  return topology::log2_ceil(topology::power_of_two_below(ranks)) *
             (topology::alpha_seconds(c) + bytes * topology::seconds_per_byte(c) * flows) +
         topology::fold_seconds(ranks, bytes, flows, c);
}
const bool registered =
    register_algorithm({"recursive_doubling",
                        "log p rounds of the whole message (latency-optimal)",
                        {"all_reduce"},
                        topology::AlgorithmHome::kLinks,
                        recursive_doubling_seconds},
                       [](PeerLinks& links, const domino_call_t& call) {
                         allreduce_recursive_doubling(links, call.recv->ptr, call.recv->count,
                                                      call.recv->dtype, call.redop);
                       });
}  // namespace

}  // namespace domino::algorithms
