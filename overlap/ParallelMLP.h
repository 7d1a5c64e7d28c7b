// The feed-forward block: column-parallel up-projection (for SwiGLU, gate and up rows fused and
// cut alike), the activation on this rank's FFN columns, and a row-parallel down-projection whose
// all-reduce the caller may leave in flight.
#pragma once

#include <torch/nn/pimpl.h>

#include "ColumnParallelLinear.h"
#include "LayerTypes.h"
#include "RowParallelLinear.h"
#include "TransformerConfig.h"

namespace domino::overlap {

class ParallelMLPImpl : public ConfiguredLayerImpl {
 public:
  ParallelMLPImpl(const TransformerConfig& config, TensorParallelGroupPtr group, WeightInit& init);
  // Standalone: its own weights from config.seed.
  ParallelMLPImpl(const TransformerConfig& config, TensorParallelGroupPtr group);

  // [s, b, h] -> activated [s, b, ffn / tp]; defer_input_gradient as in ColumnParallelLinear.
  at::Tensor activated(const at::Tensor& hidden, bool defer_input_gradient = false);
  // The same from fc1's output [s, b, fc1's local columns].
  at::Tensor activate(const at::Tensor& up);
  PendingSum project(const at::Tensor& activated, int64_t column_chunks,
                     bool backward_per_chunk = false);

  at::Tensor forward(const at::Tensor& hidden) override;

  ColumnParallelLinear fc1{nullptr};
  RowParallelLinear fc2{nullptr};

 private:
  Activation activation_;
  int64_t hidden_size_;
};
TORCH_MODULE(ParallelMLP);

}  // namespace domino::overlap
