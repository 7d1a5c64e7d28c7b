// Y = sum over ranks of X_r B_r^T, + b: B cut by input columns over the tensor-parallel ranks
// (Megatron's row-parallel linear). The product is computed in column chunks of the output and
// each chunk's all-reduce starts as soon as the chunk exists, so chunk k's reduction overlaps
// chunk k+1's GEMM (Domino's column split). The bias is replicated and added once, after the sum.
#pragma once

#include <torch/nn/pimpl.h>

#include "PendingSum.h"
#include "ShardedModule.h"
#include "WeightInit.h"

namespace domino::overlap {

class RowParallelLinearImpl : public ShardedModule {
 public:
  // `init_scale` scales the weights' standard deviation (output projections use 1/sqrt(2L)).
  // sequence_parallel: the partial sums are reduce-scattered along the sequence instead of
  // all-reduced, so the output (and each chunk) holds this rank's rows, [s/tp, b, out]; the
  // bias is added to those rows.
  RowParallelLinearImpl(int64_t in_features, int64_t out_features, bool bias,
                        TensorParallelGroupPtr group, WeightInit& init, double init_scale = 1.0,
                        bool sequence_parallel = false);

  // Starts the reduction; `column_chunks` must divide out_features. Backward takes the chunks
  // one by one where `backward_per_chunk` (each chunk's GEMMs run as soon as its output
  // gradient is there, under the reductions of the other chunks' inputs; what one micro-batch
  // has to overlap with), else all at once in one GEMM each for the input and the weight
  // (cheaper, for several micro-batches, whose backward fills that time anyway).
  PendingSum issue(const at::Tensor& local_input, int64_t column_chunks = 1,
                   bool backward_per_chunk = false);
  at::Tensor forward(const at::Tensor& local_input) { return issue(local_input).resolve(); }

  int64_t out_features() const { return weight.size(0); }
  int64_t local_in_features() const { return weight.size(1); }

  bool sequence_parallel() const { return sequence_parallel_; }

  at::Tensor weight;
  at::Tensor bias;

 private:
  bool sequence_parallel_ = false;
};
TORCH_MODULE(RowParallelLinear);

}  // namespace domino::overlap
