// Y = X A^T + b with A cut by output rows over the tensor-parallel ranks (Megatron's
// column-parallel linear). The input is replicated, so its gradient is a sum over ranks: that
// all-reduce is issued asynchronously in backward and overlaps the weight-gradient GEMM (and,
// when deferred, whatever else the autograd engine has ready).
#pragma once

#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

#include "DeferredReduction.h"
#include "ShardedModule.h"
#include "WeightInit.h"

namespace domino::overlap {

class ColumnParallelLinearImpl : public ShardedModule {
 public:
  // `out_segments`: the full output rows, as fused blocks that are each cut over the ranks
  // (for example {q, k, v}); a plain linear has one segment. segment_names: theirs, if any.
  ColumnParallelLinearImpl(int64_t in_features, std::vector<int64_t> out_segments, bool bias,
                           TensorParallelGroupPtr group, WeightInit& init,
                           std::vector<std::string> segment_names = {});

  // defer_input_gradient: backward leaves the input-gradient reduction in flight past the weight
  // GEMM too, and the autograd engine runs other ready work (another micro-batch's backward)
  // before a node on the input's path waits for it.
  at::Tensor forward(const at::Tensor& input, bool defer_input_gradient = false);

  int64_t in_features() const { return weight.size(1); }
  int64_t local_out_features() const { return weight.size(0); }

  at::Tensor weight;
  at::Tensor bias;
};
TORCH_MODULE(ColumnParallelLinear);

}  // namespace domino::overlap
