#include "TransformerLayer.h"

#include "PartwiseNormLinear.h"
#include "SequenceParallel.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <stdexcept>

namespace domino::overlap {

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
  if (config_.sequence_parallel) {
    sum_gradients_over_group({input_norm->weight, input_norm->bias, post_attention_norm->weight,
                              post_attention_norm->bias},
                             group_);
  }
}

TransformerLayerImpl::TransformerLayerImpl(const TransformerConfig& config,
                                           TensorParallelGroupPtr group)
    : TransformerLayerImpl(config, 0, group,
                           *std::make_unique<WeightInit>(config.seed, config.init_std,
                                                         parse_params_dtype(config.params_dtype)),
                           std::make_shared<TensorParallelRng>(config.seed, group->rank())) {}

std::vector<MicroBatch> TransformerLayerImpl::forward_micro_batches(
    std::vector<MicroBatch> inputs, BatchDropout& dropout, const at::Tensor& rotary_angles) {
  if (config_.sequence_parallel && group_->size() > 1) {
    return forward_sequence_parallel(std::move(inputs), dropout, rotary_angles);
  }
  const int64_t chunks = config_.column_slices();
  const std::string prefix = "layers." + std::to_string(layer_number_) + ".";
  // With several micro-batches, backward hides each input-gradient reduction behind the other
  // micro-batches' backward; with one, it waits right after its weight GEMM (Megatron).
  const bool defer = inputs.size() > 1;
  // Column parts: each block's norm and first GEMM take part k as soon as it is summed. With
  // one rank nothing is summed, and the plain norm then linear is cheaper. With several
  // micro-batches the others' compute covers the wait for the whole row, and the part-wise
  // norm's extra compute would cost more than it hides (README, Overlap bench).
  const bool partwise = chunks > 1 && group_->size() > 1 && !defer;
  auto residual_after = [&](MicroBatch& input, PendingSum delta, const std::string& site) {
    MicroBatch next;
    if (partwise) {
      std::vector<at::Tensor> parts;
      for (int64_t k = 0; k < input.parts(); ++k) parts.push_back(input.part(k));
      next = MicroBatch::ready(std::move(parts), input.batch_offset());
    } else {
      next = MicroBatch::ready(input.resolve(), input.batch_offset());
    }
    // The mask's shape comes from the whole micro-batch, built only where a mask is drawn.
    const auto mask = config_.hidden_dropout > 0.0
                          ? dropout.mask(prefix + site, input.like_whole(), config_.hidden_dropout,
                                         1, input.batch_offset(), DropoutStream::kReplicated)
                          : DropMask();
    next.add(std::move(delta), mask);
    return next;
  };
  std::vector<MicroBatch> attended;
  for (auto& input : inputs) {
    at::Tensor context;
    if (partwise) {
      input.cut_columns(chunks);
      context =
          attention->attend(partwise_norm_linear(input, *input_norm, *attention->qkv), dropout,
                            input.batch_offset(), prefix + "attention.probs", rotary_angles);
    } else {
      context =
          attention->context(input_norm->forward(input.resolve()), dropout, input.batch_offset(),
                             prefix + "attention.probs", defer, rotary_angles);
    }
    attended.push_back(
        residual_after(input, attention->project(context, chunks, !defer), "attention.out"));
  }
  std::vector<MicroBatch> outputs;
  for (auto& input : attended) {
    const auto activated =
        partwise ? mlp->activate(partwise_norm_linear(input, *post_attention_norm, *mlp->fc1))
                 : mlp->activated(post_attention_norm->forward(input.resolve()), defer);
    outputs.push_back(residual_after(input, mlp->project(activated, chunks, !defer), "mlp.out"));
  }
  if (config_.overlap_scope() == OverlapScope::kIntra) {
    for (auto& output : outputs) output.settle();
  }
  return outputs;
}

std::vector<MicroBatch> TransformerLayerImpl::forward_sequence_parallel(
    std::vector<MicroBatch> inputs, BatchDropout& dropout, const at::Tensor& rotary_angles) {
  const std::string prefix = "layers." + std::to_string(layer_number_) + ".";
  const bool defer = inputs.size() > 1;
  // One micro-batch: the gather is cut in column_chunks pieces, each GEMM chunk running while
  // the next lands; the reduce-scatter is cut in as many column chunks.
  const int64_t chunks = inputs.size() > 1 ? 1 : std::max<int64_t>(1, config_.column_slices());
  auto residual_after = [&](MicroBatch& input, PendingSum delta, const std::string& site) {
    MicroBatch next = MicroBatch::ready(input.resolve(), input.batch_offset());
    const auto mask = config_.hidden_dropout > 0.0
                          ? dropout.mask(prefix + site, input.like_whole(), config_.hidden_dropout,
                                         1, input.batch_offset(), DropoutStream::kReplicated)
                          : DropMask();
    next.add(std::move(delta), mask);
    return next;
  };
  // Each block gathers micro-batch i+1's rows while micro-batch i computes: the gather of the
  // next is started before this one's GEMMs, its reduce-scatter runs under the next one's.
  auto block = [&](std::vector<MicroBatch>& in, Norm& norm, ColumnParallelLinear& first,
                   const char* site,
                   const std::function<PendingSum(at::Tensor, MicroBatch&)>& rest) {
    std::vector<MicroBatch> out;
    auto gather = [&](MicroBatch& mb) {
      return first->start_gather(norm->forward(mb.resolve()), chunks);
    };
    std::optional<SequenceGather> next = gather(in[0]);
    for (size_t i = 0; i < in.size(); ++i) {
      SequenceGather current = std::move(*next);
      next.reset();
      if (i + 1 < in.size()) next = gather(in[i + 1]);
      auto delta = rest(first->forward_gathered(std::move(current), defer), in[i]);
      out.push_back(residual_after(in[i], std::move(delta), site));
    }
    return out;
  };
  auto attended = block(
      inputs, input_norm, attention->qkv, "attention.out", [&](at::Tensor fused, MicroBatch& mb) {
        const auto context = attention->attend(fused, dropout, mb.batch_offset(),
                                               prefix + "attention.probs", rotary_angles);
        return attention->project(context, chunks, !defer);
      });
  auto outputs = block(
      attended, post_attention_norm, mlp->fc1, "mlp.out",
      [&](at::Tensor up, MicroBatch&) { return mlp->project(mlp->activate(up), chunks, !defer); });
  if (config_.overlap_scope() == OverlapScope::kIntra) {
    for (auto& output : outputs) output.settle();
  }
  return outputs;
}

at::Tensor TransformerLayerImpl::forward(const at::Tensor& hidden,
                                         const at::Tensor& rotary_angles) {
  DeferredWaitScope pass;
  check_hidden(hidden, config_, *group_, "DominoTransformerLayer");
  BatchDropout dropout = begin_dropout(is_training(), config_.hidden_dropout,
                                       config_.attention_dropout, hidden, rng_, *group_);
  shard_dropout(dropout, config_, *group_);
  auto outputs =
      forward_micro_batches(split_batch(hidden, config_.batch_slices()), dropout, rotary_angles);
  return join_batch(outputs);
}

}  // namespace domino::overlap
