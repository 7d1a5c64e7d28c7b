#include "TransformerLayer.h"

#include <ATen/Functions.h>

#include <stdexcept>

namespace domino::overlap {

MicroBatch MicroBatch::ready(at::Tensor value, int64_t batch_offset) {
  MicroBatch micro_batch;
  micro_batch.residual = std::move(value);
  micro_batch.batch_offset = batch_offset;
  return micro_batch;
}

at::Tensor MicroBatch::resolve() {
  if (delta.empty()) return residual;
  auto update = delta.resolve();
  update = dropout.apply(update);
  residual = residual + update;
  delta = PendingSum();
  dropout = DropMask();
  return residual;
}

std::vector<MicroBatch> split_batch(const at::Tensor& hidden, int64_t count) {
  std::vector<MicroBatch> micro_batches;
  int64_t offset = 0;
  for (auto& part : at::tensor_split(hidden, count, 1)) {
    const int64_t rows = part.size(1);
    micro_batches.push_back(MicroBatch::ready(std::move(part), offset));
    offset += rows;
  }
  return micro_batches;
}

at::Tensor join_batch(std::vector<MicroBatch>& micro_batches) {
  std::vector<at::Tensor> parts;
  for (auto& micro_batch : micro_batches) parts.push_back(micro_batch.resolve());
  return parts.size() == 1 ? parts[0] : at::cat(parts, 1);
}

TransformerLayerImpl::TransformerLayerImpl(const TransformerConfig& config, int64_t layer_number,
                                           TensorParallelGroupPtr group, WeightInit& init,
                                           std::shared_ptr<TensorParallelRng> rng)
    : ShardedModule(group), config_(config), layer_number_(layer_number), rng_(std::move(rng)) {
  config_.validate(group_->size());
  input_norm = register_module("input_norm", Norm(config_.hidden_size, config_.normalization,
                                                  config_.norm_epsilon, group_, init));
  attention = register_module("attention", ShardedAttention(config_, group_, init, rng_));
  post_attention_norm = register_module(
      "post_attention_norm",
      Norm(config_.hidden_size, config_.normalization, config_.norm_epsilon, group_, init));
  mlp = register_module("mlp", ParallelMLP(config_, group_, init));
}

TransformerLayerImpl::TransformerLayerImpl(const TransformerConfig& config,
                                           TensorParallelGroupPtr group)
    : TransformerLayerImpl(config, 0, group,
                           *std::make_unique<WeightInit>(config.seed, config.init_std,
                                                         parse_params_dtype(config.params_dtype)),
                           std::make_shared<TensorParallelRng>(config.seed, group->rank())) {}

std::vector<MicroBatch> TransformerLayerImpl::forward_micro_batches(std::vector<MicroBatch> inputs,
                                                                    BatchDropout& dropout) {
  const int64_t chunks = config_.column_slices();
  const std::string prefix = "layers." + std::to_string(layer_number_) + ".";
  // With several micro-batches, backward hides each input-gradient reduction behind the other
  // micro-batches' backward; with one, it waits right after its weight GEMM (Megatron).
  const bool defer = inputs.size() > 1;
  std::vector<MicroBatch> attended;
  for (auto& input : inputs) {
    auto x = input.resolve();
    auto context = attention->context(input_norm->forward(x), dropout, input.batch_offset,
                                      prefix + "attention.probs", defer);
    MicroBatch next = MicroBatch::ready(x, input.batch_offset);
    next.delta = attention->project(context, chunks);
    next.dropout = dropout.mask(prefix + "attention.out", x, config_.hidden_dropout, 1,
                                input.batch_offset, DropoutStream::kReplicated);
    attended.push_back(std::move(next));
  }
  std::vector<MicroBatch> outputs;
  for (auto& input : attended) {
    auto y = input.resolve();
    auto activated = mlp->activated(post_attention_norm->forward(y), defer);
    MicroBatch next = MicroBatch::ready(y, input.batch_offset);
    next.delta = mlp->project(activated, chunks);
    next.dropout = dropout.mask(prefix + "mlp.out", y, config_.hidden_dropout, 1,
                                input.batch_offset, DropoutStream::kReplicated);
    outputs.push_back(std::move(next));
  }
  if (config_.overlap == OverlapScope::kIntra) {
    for (auto& output : outputs) output.resolve();
  }
  return outputs;
}

at::Tensor TransformerLayerImpl::forward(const at::Tensor& hidden) {
  DeferredWaitScope pass;
  check_hidden(hidden, config_, *group_, "DominoTransformerLayer");
  BatchDropout dropout = begin_dropout(is_training(), config_.hidden_dropout,
                                       config_.attention_dropout, hidden, rng_, *group_);
  auto outputs = forward_micro_batches(split_batch(hidden, config_.batch_slices()), dropout);
  return join_batch(outputs);
}

}  // namespace domino::overlap
