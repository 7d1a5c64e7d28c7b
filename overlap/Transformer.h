// A stack of Domino layers plus a final norm. Layers hand micro-batches to each other with their
// MLP reductions possibly still in flight (overlap=inter), so the last micro-batch's reduction
// of one layer hides behind the next layer's attention on the first.
#pragma once

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <memory>

#include "TransformerLayer.h"

namespace domino::overlap {

class TransformerImpl : public ShardedModule {
 public:
  TransformerImpl(const TransformerConfig& config, TensorParallelGroupPtr group);

  // [s, b, h] -> [s, b, h], normalised by final_norm.
  at::Tensor forward(const at::Tensor& hidden);

  const TransformerConfig& config() const { return config_; }

  torch::nn::ModuleList layers{nullptr};
  Norm final_norm{nullptr};

 private:
  TransformerConfig config_;
  std::shared_ptr<TensorParallelRng> rng_;  // the dropout streams every layer shares
};
TORCH_MODULE(Transformer);

}  // namespace domino::overlap
