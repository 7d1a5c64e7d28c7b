// A micro-batch of the hidden state between two blocks: residual + dropout(delta), where delta is
// a row-parallel output whose all-reduce may still be in flight, in column chunks. A consumer
// that takes the residual part by part gets part k as soon as chunk k is summed; one that takes
// it whole gets it in one add, with no cut and join.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "PendingSum.h"
#include "TensorParallelRng.h"

namespace domino::overlap {

class MicroBatch {
 public:
  MicroBatch() = default;
  static MicroBatch ready(at::Tensor value, int64_t batch_offset);
  // `parts`: the columns of the residual in order, equal widths.
  static MicroBatch ready(std::vector<at::Tensor> parts, int64_t batch_offset);

  // Adds dropout(delta) to the residual; a residual in parts takes a delta in as many chunks or
  // in one, a whole residual takes any.
  void add(PendingSum delta, DropMask dropout);

  int64_t batch_offset() const { return batch_offset_; }
  // The column parts a consumer takes: the sum's chunks while a whole residual waits for them.
  int64_t parts() const;
  // Cuts the residual into `count` equal column parts (no-op when parts() is already count).
  void cut_columns(int64_t count);
  // Column part k, its share of delta summed and added; waits for that chunk only.
  at::Tensor part(int64_t k);
  // Every chunk summed and added.
  void settle();
  // The whole [s, b, h], settled.
  at::Tensor resolve();
  // [s, b, h] for a tensor shaped like the whole, without resolving anything.
  at::Tensor like_whole() const;

 private:
  // A whole residual with a sum in several chunks pending: taken whole, it needs no cut.
  bool whole_awaits_chunks() const;
  // Narrows the single, whole residual into `count` column parts.
  void cut_whole(int64_t count, bool settled);

  std::vector<at::Tensor> parts_;
  std::vector<bool> settled_;
  PendingSum delta_;
  DropMask dropout_;
  int64_t batch_offset_ = 0;
};

// Cuts [s, b, h] into `count` micro-batches along b (sizes differ by at most one) and back.
std::vector<MicroBatch> split_batch(const at::Tensor& hidden, int64_t count);
at::Tensor join_batch(std::vector<MicroBatch>& micro_batches);

}  // namespace domino::overlap
