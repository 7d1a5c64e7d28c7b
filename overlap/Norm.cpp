#include "Norm.h"

#include <ATen/Functions.h>

namespace domino::overlap {

NormImpl::NormImpl(int64_t hidden_size, Normalization kind, double epsilon,
                   TensorParallelGroupPtr group, WeightInit& init)
    : ShardedModule(std::move(group)), kind_(kind), epsilon_(epsilon) {
  weight = register_sharded("weight", init.constant({hidden_size}, 1.0), {});
  if (kind_ == Normalization::kLayerNorm) {
    bias = register_sharded("bias", init.constant({hidden_size}, 0.0), {});
  }
}

at::Tensor NormImpl::forward(const at::Tensor& input) {
  const int64_t hidden = weight.size(0);
  if (kind_ == Normalization::kLayerNorm) {
    return at::layer_norm(input, {hidden}, weight, bias, epsilon_);
  }
  return at::rms_norm(input, {hidden}, weight, epsilon_);
}

}  // namespace domino::overlap
