// What the layers accept: hidden states [s, b, h], sequence first as in Megatron. Checked before
// any compute so a wrong shape is named, not reported from deep inside a GEMM.
#pragma once

#include <ATen/core/Tensor.h>

#include "TensorParallelGroup.h"
#include "TransformerConfig.h"

namespace domino::overlap {

// Throws std::invalid_argument naming the layer, the shape expected and the one given.
void check_hidden_shape(const at::Tensor& hidden, int64_t hidden_size,
                        const TensorParallelGroup& group, const char* layer);

// The shape, and enough sequences for the config's micro-batches.
void check_hidden(const at::Tensor& hidden, const TransformerConfig& config,
                  const TensorParallelGroup& group, const char* layer);

}  // namespace domino::overlap
