#include <algorithm>
#include <vector>

#include "Algorithms.h"
#include "Blocks.h"
#include "Registration.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"

namespace domino::algorithms {

void allreduce_rabenseifner(PeerLinks& links, void* buffer, size_t count, domino_dtype_t dtype,
                            domino_redop_t op) {
  char* data = static_cast<char*>(buffer);
  const size_t element = dtype_size(dtype);
  Fold fold(links);
  const int pof2 = fold.pof2();
  const int me = fold.fold_in(data, count, dtype, op);
  if (me >= 0) {
    const Blocks blocks(count, pof2);
    std::vector<char> theirs(count * element);
    auto span = [&](int lo, int hi) { return (blocks.offset(hi) - blocks.offset(lo)) * element; };
    // Recursive halving: each round keeps half of the blocks still held and reduces them.
    int lo = 0, hi = pof2;
    for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
      const int partner = fold.unfolded(me ^ mask);
      const int mid = lo + (hi - lo) / 2;
      const bool lower = (me & mask) == 0;
      const int keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
      const int give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
      const size_t keep_bytes = span(keep_lo, keep_hi);
      links.exchange(partner, data + blocks.offset(give_lo) * element, span(give_lo, give_hi),
                     partner, theirs.data(), keep_bytes);
      combine(data + blocks.offset(keep_lo) * element, theirs.data(), keep_bytes / element, dtype,
              op);
      lo = keep_lo;
      hi = keep_hi;
    }
    // Recursive doubling: each round swaps the reduced ranges, doubling what is held.
    for (int mask = 1; mask < pof2; mask <<= 1) {
      const int partner = fold.unfolded(me ^ mask);
      const int width = hi - lo;
      const int their_lo = (me & mask) == 0 ? hi : lo - width;
      links.exchange(partner, data + blocks.offset(lo) * element, span(lo, hi), partner,
                     data + blocks.offset(their_lo) * element, span(their_lo, their_lo + width));
      lo = std::min(lo, their_lo);
      hi = lo + 2 * width;
    }
  }
  fold.fold_out(data, count * element, me);
  if (op == DOMINO_AVG) divide_buffer(data, count, dtype, links.size());
}

namespace {
double rabenseifner_seconds(int ranks, double bytes, int flows, const topology::TransportCost& c) {
  const int p = topology::power_of_two_below(ranks);
  return 2 * topology::log2_ceil(p) * topology::alpha_seconds(c) +
         2.0 * (p - 1) / p * bytes * topology::seconds_per_byte(c) * flows +
         topology::fold_seconds(ranks, bytes, flows, c);
}
const bool registered = register_algorithm(
    {"rabenseifner",
     "recursive-halving reduce-scatter, then recursive-doubling all-gather",
     {"all_reduce"},
     topology::AlgorithmHome::kLinks,
     rabenseifner_seconds},
    [](PeerLinks& links, const domino_call_t& call) {
      allreduce_rabenseifner(links, call.recv->ptr, call.recv->count, call.recv->dtype, call.redop);
    });
}  // namespace

}  // namespace domino::algorithms
