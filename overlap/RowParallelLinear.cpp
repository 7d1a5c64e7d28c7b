#include "RowParallelLinear.h"

#include <ATen/Functions.h>

#include <stdexcept>

namespace domino::overlap {

RowParallelLinearImpl::RowParallelLinearImpl(int64_t in_features, int64_t out_features, bool bias,
                                             TensorParallelGroupPtr group, WeightInit& init,
                                             double init_scale)
    : ShardedModule(std::move(group)) {
  weight = register_sharded("weight", init.normal({out_features, in_features}, init_scale),
                            ShardLayout{1, {in_features}});
  if (bias) this->bias = register_sharded("bias", init.constant({out_features}, 0.0), {});
}

PendingSum RowParallelLinearImpl::issue(const at::Tensor& local_input, int64_t column_chunks) {
  if (local_input.size(-1) != local_in_features()) {
    throw std::invalid_argument(
        "RowParallelLinear: input has " + std::to_string(local_input.size(-1)) +
        " features, this rank's "
        "shard of the weight takes " +
        std::to_string(local_in_features()) + " (" + group_->describe() + ")");
  }
  if (column_chunks < 1 || out_features() % column_chunks != 0) {
    throw std::invalid_argument(
        "RowParallelLinear: column_chunks=" + std::to_string(column_chunks) +
        " does not divide out_features=" + std::to_string(out_features()));
  }
  const int64_t width = out_features() / column_chunks;
  std::vector<at::Tensor> chunks;
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (int64_t chunk = 0; chunk < column_chunks; ++chunk) {
    // A fresh GEMM output that autograd does not save, so reducing it in place is safe; the
    // backward of the sum is the identity on every rank.
    auto partial = at::matmul(local_input, weight.narrow(0, chunk * width, width).t());
    works.push_back(group_->all_reduce_async(partial));
    chunks.push_back(std::move(partial));
  }
  return PendingSum(std::move(chunks), std::move(works), bias);
}

}  // namespace domino::overlap
