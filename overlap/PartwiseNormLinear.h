// linear(norm(x)) for a column-parallel linear whose input x arrives in column parts, each as
// soon as its share of the previous block's all-reduce is summed. A norm needs the whole row, so
// the GEMM is cut along its inner dimension instead: part k's product starts when part k lands,
// while later parts are still on the wire, and the row statistics, gathered part by part, scale
// the sum at the end:
//
//   rmsnorm:   r * sum_k (x_k * g_k) W_k^T
//   layernorm: r * (sum_k ((x_k - m_k) * g_k) W_k^T + sum_k (m_k - m) g_k W_k^T) + b W^T
//
// with r the row's rsqrt(variance + eps) (rmsnorm: of mean x^2 + eps), m_k each part's row mean
// and m the row's; centring each part on its own mean keeps the products as well conditioned as
// a plain layer norm's.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "ColumnParallelLinear.h"
#include "MicroBatch.h"
#include "Norm.h"

namespace domino::overlap {

// What the part-by-part forward derives from the weights alone: each part's gain and slice of
// the weight, layernorm's g_k W_k^T rows under the last part's, and the shift b W^T + bias. The
// micro-batches of one forward pass share it; it lives only as long as that pass, so a weight
// changed between passes, by whatever means, is always seen.
struct PartwiseWeights {
  std::vector<at::Tensor> gains;      // per part, float
  std::vector<at::Tensor> weights_t;  // per part, [width (+ parts on layernorm's last), out]
  at::Tensor shift;                   // undefined when there is none
  int64_t parts = 0;                  // 0: not made yet
  c10::ScalarType compute = c10::ScalarType::Undefined;
};

// one_gradient_message: backward sums the parts' input gradients in one all-reduce instead of
// one each. Right where the producer of the parts waits for all of them anyway (the row-parallel
// backward of several micro-batches runs as one node); the per-part messages pay off only where
// it takes them part by part (one micro-batch).
at::Tensor partwise_norm_linear(MicroBatch& input, const NormImpl& norm,
                                const ColumnParallelLinearImpl& linear, PartwiseWeights& weights,
                                bool one_gradient_message = false);

}  // namespace domino::overlap
