// The output of a row-parallel linear while its all-reduce is still in flight: partial sums,
// cut in column chunks that are reduced in place, plus the bias that is added once, after the
// sum. Resolving waits for the chunks and assembles the result.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <vector>

namespace domino::overlap {

class PendingSum {
 public:
  PendingSum() = default;
  PendingSum(std::vector<at::Tensor> chunks, std::vector<c10::intrusive_ptr<c10d::Work>> works,
             at::Tensor bias);

  bool empty() const { return chunks_.empty(); }
  int64_t chunks() const { return static_cast<int64_t>(chunks_.size()); }
  // Chunk k summed, plus its columns of the bias; waits for that chunk's reduction only.
  at::Tensor chunk(int64_t k);
  at::Tensor resolve();

 private:
  std::vector<at::Tensor> chunks_;
  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
  at::Tensor bias_;
  at::Tensor resolved_;
};

}  // namespace domino::overlap
