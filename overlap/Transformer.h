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

  // The same pass one layer at a time, for recomputing each layer in backward: the pass's
  // dropout seed (0 when nothing drops), layer `index` over [s, b, h] with that seed (its
  // reductions finished), and the final norm. Layer by layer with one seed gives the masks and
  // values forward() gives.
  uint64_t dropout_seed(const at::Tensor& hidden);
  at::Tensor forward_layer(int64_t index, const at::Tensor& hidden, uint64_t dropout_seed);
  at::Tensor forward_final_norm(const at::Tensor& hidden);

  const TransformerConfig& config() const { return config_; }

  torch::nn::ModuleList layers{nullptr};
  Norm final_norm{nullptr};

 private:
  TransformerConfig config_;
  std::shared_ptr<TensorParallelRng> rng_;  // the dropout streams every layer shares
};
TORCH_MODULE(Transformer);

}  // namespace domino::overlap
