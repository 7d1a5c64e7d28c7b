#include "ParallelMLP.h"

#include <ATen/Functions.h>

#include <cmath>
#include <memory>

#include "HiddenStates.h"

namespace domino::overlap {

namespace {
const bool parallel_mlp_registered = register_layer_type<ParallelMLPImpl>(
    "ParallelMLP", "Column-parallel up-projection, gelu or SwiGLU, row-parallel down-projection.");
}  // namespace

ParallelMLPImpl::ParallelMLPImpl(const TransformerConfig& config, TensorParallelGroupPtr group,
                                 WeightInit& init)
    : ConfiguredLayerImpl(group), activation_(config.activation), hidden_size_(config.hidden_size) {
  config.validate(group_->size());
  const int64_t ffn = config.ffn_size();
  std::vector<int64_t> segments{ffn};
  std::vector<std::string> names;
  if (activation_ == Activation::kSwiglu) {
    segments.push_back(ffn);  // gate rows, then up rows
    names = {"gate", "up"};
  }
  const bool sequence_parallel = config.sequence_parallel && group_->size() > 1;
  fc1 =
      register_module("fc1", ColumnParallelLinear(config.hidden_size, segments, config.bias, group_,
                                                  init, std::move(names), sequence_parallel));
  fc2 = register_module(
      "fc2", RowParallelLinear(ffn, config.hidden_size, config.bias, group_, init,
                               1.0 / std::sqrt(2.0 * config.num_layers), sequence_parallel));
}

ParallelMLPImpl::ParallelMLPImpl(const TransformerConfig& config, TensorParallelGroupPtr group)
    : ParallelMLPImpl(config, group,
                      *std::make_unique<WeightInit>(config.seed, config.init_std,
                                                    parse_params_dtype(config.params_dtype))) {}

at::Tensor ParallelMLPImpl::activated(const at::Tensor& hidden, bool defer_input_gradient) {
  return activate(fc1->forward(hidden, defer_input_gradient));
}

at::Tensor ParallelMLPImpl::activate(const at::Tensor& up) {
  if (activation_ == Activation::kGelu) return at::gelu(up);
  if (activation_ == Activation::kGeluTanh) return at::gelu(up, "tanh");
  const int64_t half = up.size(-1) / 2;
  return at::silu(up.narrow(-1, 0, half)) * up.narrow(-1, half, half);
}

PendingSum ParallelMLPImpl::project(const at::Tensor& activated, int64_t column_chunks,
                                    bool backward_per_chunk) {
  return fc2->issue(activated, column_chunks, backward_per_chunk);
}

at::Tensor ParallelMLPImpl::forward(const at::Tensor& hidden) {
  check_hidden_shape(hidden, hidden_size_, *group_, "ParallelMLP");
  return project(activated(hidden), 1).resolve();
}

}  // namespace domino::overlap
