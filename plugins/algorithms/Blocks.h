// Helpers the algorithms share: a message cut into near-equal blocks, the fold that lets the
// power-of-two algorithms run on any number of ranks, and the pairwise combine.
#pragma once

#include <cstddef>
#include <vector>

#include "PeerLinks.h"
#include "domino/plugin.h"

namespace domino::algorithms {

// Blocks of a message cut into `parts` pieces whose sizes differ by at most one element.
class Blocks {
 public:
  Blocks(size_t count, int parts) : count_(count), parts_(static_cast<size_t>(parts)) {}
  size_t offset(int block) const {
    const size_t b = static_cast<size_t>(block);
    const size_t base = count_ / parts_, extra = count_ % parts_;
    return b * base + (b < extra ? b : extra);
  }
  size_t size(int block) const { return offset(block + 1) - offset(block); }

 private:
  size_t count_, parts_;
};

// into = op(into, other), elementwise; AVG adds (the caller divides once at the end).
void combine(char* into, const char* other, size_t count, domino_dtype_t dtype, domino_redop_t op);

// Non-powers of two: ranks below 2 * (size - pof2) pair up, the even one handing its data to the
// odd one, so pof2 ranks go on. fold_in returns this rank's index among them, or -1 if it sat
// out; fold_out hands the result back to the ranks that sat out.
class Fold {
 public:
  explicit Fold(PeerLinks& links);
  int pof2() const { return pof2_; }
  int fold_in(char* data, size_t count, domino_dtype_t dtype, domino_redop_t op);
  void fold_out(char* data, size_t bytes, int folded_rank);
  // The real rank behind a folded one.
  int unfolded(int folded_rank) const;

 private:
  PeerLinks& links_;
  int pof2_;
};

// (b mod n) in 0..n-1, for ring arithmetic on rank - step.
inline int ring_index(int b, int n) {
  return ((b % n) + n) % n;
}

}  // namespace domino::algorithms
