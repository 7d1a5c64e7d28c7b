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

#include "ColumnParallelLinear.h"
#include "MicroBatch.h"
#include "Norm.h"

namespace domino::overlap {

at::Tensor partwise_norm_linear(MicroBatch& input, const NormImpl& norm,
                                const ColumnParallelLinearImpl& linear);

}  // namespace domino::overlap
