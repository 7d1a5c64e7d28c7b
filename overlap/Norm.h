// LayerNorm or RMSNorm over the hidden dimension; replicated on every tensor-parallel rank.
#pragma once

#include <torch/nn/pimpl.h>

#include "ShardedModule.h"
#include "TransformerConfig.h"
#include "WeightInit.h"

namespace domino::overlap {

class NormImpl : public ShardedModule {
 public:
  NormImpl(int64_t hidden_size, Normalization kind, double epsilon, TensorParallelGroupPtr group,
           WeightInit& init);
  at::Tensor forward(const at::Tensor& input);

  Normalization kind() const { return kind_; }
  double epsilon() const { return epsilon_; }

  at::Tensor weight;
  at::Tensor bias;  // layernorm only

 private:
  Normalization kind_;
  double epsilon_;
};
TORCH_MODULE(Norm);

}  // namespace domino::overlap
