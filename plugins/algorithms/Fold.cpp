#include <bit>
#include <vector>

#include "Blocks.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"

namespace domino::algorithms {

void combine(char* into, const char* other, size_t count, domino_dtype_t dtype, domino_redop_t op) {
  const void* inputs[2] = {into, other};
  reduce_buffers(into, inputs, 2, count, dtype, op == DOMINO_AVG ? DOMINO_SUM : op);
}

Fold::Fold(PeerLinks& links)
    : links_(links), pof2_(static_cast<int>(std::bit_floor(static_cast<unsigned>(links.size())))) {}

int Fold::unfolded(int folded_rank) const {
  const int extra = links_.size() - pof2_;
  return folded_rank < extra ? folded_rank * 2 + 1 : folded_rank + extra;
}

int Fold::fold_in(char* data, size_t count, domino_dtype_t dtype, domino_redop_t op) {
  const int rank = links_.rank(), extra = links_.size() - pof2_;
  const size_t bytes = count * dtype_size(dtype);
  if (rank >= 2 * extra) return rank - extra;
  if (rank % 2 == 0) {
    links_.exchange(rank + 1, data, bytes, -1, nullptr, 0);
    return -1;
  }
  std::vector<char> theirs(bytes);
  links_.exchange(-1, nullptr, 0, rank - 1, theirs.data(), bytes);
  combine(data, theirs.data(), count, dtype, op);
  return rank / 2;
}

void Fold::fold_out(char* data, size_t bytes, int folded_rank) {
  const int rank = links_.rank(), extra = links_.size() - pof2_;
  if (rank >= 2 * extra) return;
  if (folded_rank < 0) {
    links_.exchange(-1, nullptr, 0, rank + 1, data, bytes);
  } else {
    links_.exchange(rank - 1, data, bytes, -1, nullptr, 0);
  }
}

}  // namespace domino::algorithms
