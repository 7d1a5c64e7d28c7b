#include "Transformer.h"

#include "SequenceParallel.h"

namespace domino::overlap {

TransformerImpl::TransformerImpl(const TransformerConfig& config, TensorParallelGroupPtr group)
    : ShardedModule(std::move(group)), config_(config) {
  config_.validate(group_->size());
  WeightInit init(config_.seed, config_.init_std, parse_params_dtype(config_.params_dtype));
  rng_ = std::make_shared<TensorParallelRng>(config_.seed, group_->rank());
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t index = 0; index < config_.num_layers; ++index) {
    layers->push_back(TransformerLayer(config_, index, group_, init, rng_));
  }
  final_norm = register_module("final_norm", Norm(config_.hidden_size, config_.normalization,
                                                  config_.norm_epsilon, group_, init));
  if (config_.sequence_parallel) {
    sum_gradients_over_group({final_norm->weight, final_norm->bias}, group_);
  }
}

at::Tensor TransformerImpl::forward(const at::Tensor& hidden) {
  DeferredWaitScope pass;
  check_hidden(hidden, config_, *group_, "DominoTransformer");
  BatchDropout dropout = begin_dropout(is_training(), config_.hidden_dropout,
                                       config_.attention_dropout, hidden, rng_, *group_);
  shard_dropout(dropout, config_, *group_);
  auto micro_batches = split_batch(hidden, config_.batch_slices());
  for (const auto& layer : *layers) {
    micro_batches =
        layer->as<TransformerLayerImpl>()->forward_micro_batches(std::move(micro_batches), dropout);
  }
  return final_norm->forward(join_batch(micro_batches));
}

uint64_t TransformerImpl::dropout_seed(const at::Tensor& hidden) {
  if (!is_training() || (config_.hidden_dropout <= 0.0 && config_.attention_dropout <= 0.0)) {
    return 0;
  }
  return rng_->pass_seed(*group_, hidden.device());
}

at::Tensor TransformerImpl::forward_layer(int64_t index, const at::Tensor& hidden,
                                          uint64_t dropout_seed) {
  TORCH_CHECK_INDEX(index >= 0 && index < config_.num_layers, "DominoTransformer: layer ", index,
                    " of ", config_.num_layers);
  DeferredWaitScope pass;
  check_hidden(hidden, config_, *group_, "DominoTransformer");
  BatchDropout dropout =
      is_training() && (config_.hidden_dropout > 0.0 || config_.attention_dropout > 0.0)
          ? BatchDropout(hidden.size(1), rng_, dropout_seed)
          : BatchDropout(false, hidden.size(1));
  shard_dropout(dropout, config_, *group_);
  auto outputs =
      layers[static_cast<size_t>(index)]->as<TransformerLayerImpl>()->forward_micro_batches(
          split_batch(hidden, config_.batch_slices()), dropout);
  return join_batch(outputs);
}

at::Tensor TransformerImpl::forward_final_norm(const at::Tensor& hidden) {
  return final_norm->forward(hidden);
}

}  // namespace domino::overlap
