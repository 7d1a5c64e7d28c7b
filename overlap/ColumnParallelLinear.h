// Y = X A^T + b with A cut by output rows over the tensor-parallel ranks (Megatron's
// column-parallel linear). The input is replicated, so its gradient is a sum over ranks: that
// all-reduce is issued asynchronously in backward and overlaps the weight-gradient GEMM (and,
// when deferred, whatever else the autograd engine has ready).
#pragma once

#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

#include "DeferredReduction.h"
#include "SequenceParallel.h"
#include "ShardedModule.h"
#include "WeightInit.h"

namespace domino::overlap {

class ColumnParallelLinearImpl : public ShardedModule {
 public:
  // `out_segments`: the full output rows, as fused blocks that are each cut over the ranks
  // (for example {q, k, v}); a plain linear has one segment. segment_names: theirs, if any.
  // sequence_parallel: the input is this rank's rows of the sequence ([s/tp, b, in]), gathered
  // along the sequence before the GEMM; backward reduce-scatters its gradient instead of
  // all-reducing it.
  ColumnParallelLinearImpl(int64_t in_features, std::vector<int64_t> out_segments, bool bias,
                           TensorParallelGroupPtr group, WeightInit& init,
                           std::vector<std::string> segment_names = {},
                           bool sequence_parallel = false);

  // defer_input_gradient: backward leaves the input-gradient reduction in flight past the weight
  // GEMM too, and the autograd engine runs other ready work (another micro-batch's backward)
  // before a node on the input's path waits for it.
  at::Tensor forward(const at::Tensor& input, bool defer_input_gradient = false);

  // Sequence parallelism: starts gathering the input in `chunks` (see SequenceGather), so the
  // caller can compute something else, or the GEMM can take chunk k while k+1 arrives.
  SequenceGather start_gather(const at::Tensor& local_rows, int64_t chunks = 1) const;
  // The GEMM over a gather that start_gather began, chunk by chunk as they land: [s, b, out/tp].
  at::Tensor forward_gathered(SequenceGather gather, bool defer_input_gradient = false);

  bool sequence_parallel() const { return sequence_parallel_; }

  int64_t in_features() const { return weight.size(1); }
  int64_t local_out_features() const { return weight.size(0); }

  at::Tensor weight;
  at::Tensor bias;

 private:
  bool sequence_parallel_ = false;
};
TORCH_MODULE(ColumnParallelLinear);

}  // namespace domino::overlap
