#include "ShardedAttention.h"

#include <ATen/Functions.h>

#include <cmath>

#include "HiddenStates.h"
#include "SequenceParallel.h"

namespace domino::overlap {

namespace {
const bool sharded_attention_registered = register_layer_type<ShardedAttentionImpl>(
    "ShardedAttention",
    "Causal self-attention over this rank's heads (GQA, optional RoPE), output all-reduced.");
}  // namespace

ShardedAttentionImpl::ShardedAttentionImpl(const TransformerConfig& config,
                                           TensorParallelGroupPtr group, WeightInit& init,
                                           std::shared_ptr<TensorParallelRng> rng)
    : ConfiguredLayerImpl(group), config_(config), rng_(std::move(rng)) {
  config_.validate(group_->size());
  const int64_t head_dim = config_.head_dim();
  local_heads_ = config_.num_attention_heads / group_->size();
  local_groups_ = config_.query_groups() / group_->size();
  const int64_t q_rows = config_.num_attention_heads * head_dim;
  const int64_t kv_rows = config_.query_groups() * head_dim;
  const bool sequence_parallel = config_.sequence_parallel && group_->size() > 1;
  // Megatron-Core's layout is one block whose rank slices are whole query groups.
  const bool grouped = config_.qkv_layout == QkvLayout::kGroups;
  qkv = register_module(
      "qkv", ColumnParallelLinear(
                 config_.hidden_size,
                 grouped ? std::vector<int64_t>{q_rows + 2 * kv_rows}
                         : std::vector<int64_t>{q_rows, kv_rows, kv_rows},
                 config_.has_qkv_bias(), group_, init,
                 grouped ? std::vector<std::string>{} : std::vector<std::string>{"q", "k", "v"},
                 sequence_parallel));
  proj = register_module(
      "proj", RowParallelLinear(q_rows, config_.hidden_size, config_.bias, group_, init,
                                1.0 / std::sqrt(2.0 * config_.num_layers), sequence_parallel));
  if (config_.rotary) rotary_ = std::make_unique<RotaryEmbedding>(head_dim, config_.rotary_base);
}

ShardedAttentionImpl::ShardedAttentionImpl(const TransformerConfig& config,
                                           TensorParallelGroupPtr group)
    : ShardedAttentionImpl(config, group,
                           *std::make_unique<WeightInit>(config.seed, config.init_std,
                                                         parse_params_dtype(config.params_dtype)),
                           std::make_shared<TensorParallelRng>(config.seed, group->rank())) {}

at::Tensor ShardedAttentionImpl::context(const at::Tensor& hidden, BatchDropout& dropout,
                                         int64_t batch_offset, const std::string& dropout_site,
                                         bool defer_input_gradient,
                                         const at::Tensor& rotary_angles) {
  return attend(qkv->forward(hidden, defer_input_gradient), dropout, batch_offset, dropout_site,
                rotary_angles);
}

at::Tensor ShardedAttentionImpl::attend(const at::Tensor& fused, BatchDropout& dropout,
                                        int64_t batch_offset, const std::string& dropout_site,
                                        const at::Tensor& rotary_angles) {
  const int64_t seq = fused.size(0);
  const int64_t batch = fused.size(1);
  const int64_t head_dim = config_.head_dim();
  at::Tensor q, k, v;
  if (config_.qkv_layout == QkvLayout::kGroups) {
    // Per query group: its query heads, its key, its value.
    const int64_t per_group = local_heads_ / local_groups_;
    const auto grouped = fused.view({seq, batch, local_groups_, (per_group + 2) * head_dim});
    q = grouped.narrow(-1, 0, per_group * head_dim).reshape({seq, batch, local_heads_, head_dim});
    k = grouped.narrow(-1, per_group * head_dim, head_dim);
    v = grouped.narrow(-1, (per_group + 1) * head_dim, head_dim);
  } else {
    q = fused.narrow(-1, 0, local_heads_ * head_dim).view({seq, batch, local_heads_, head_dim});
    k = fused.narrow(-1, local_heads_ * head_dim, local_groups_ * head_dim)
            .view({seq, batch, local_groups_, head_dim});
    v = fused.narrow(-1, (local_heads_ + local_groups_) * head_dim, local_groups_ * head_dim)
            .view({seq, batch, local_groups_, head_dim});
  }
  if (rotary_angles.defined()) {
    q = RotaryEmbedding::apply_angles(q, rotary_angles);
    k = RotaryEmbedding::apply_angles(k, rotary_angles);
  } else if (rotary_) {
    q = rotary_->apply(q);
    k = rotary_->apply(k);
  }
  // [b, heads, s, d]; each key/value group serves the consecutive query heads that share it.
  q = q.permute({1, 2, 0, 3});
  k = k.permute({1, 2, 0, 3});
  v = v.permute({1, 2, 0, 3});
  const int64_t heads_per_group = local_heads_ / local_groups_;
  if (heads_per_group > 1) {
    k = k.repeat_interleave(heads_per_group, 1);
    v = v.repeat_interleave(heads_per_group, 1);
  }
  at::Tensor out;
  if (is_training() && config_.attention_dropout > 0.0) {
    // Explicit form so the probabilities' mask comes from this rank's own stream.
    auto scores = at::matmul(q, k.transpose(-2, -1));
    scores = config_.softmax_scale ? scores * *config_.softmax_scale
                                   : scores / std::sqrt(static_cast<double>(head_dim));
    auto causal = at::ones({seq, seq}, fused.options().dtype(at::kBool)).triu(1);
    auto probs = at::softmax(scores.masked_fill(causal, -std::numeric_limits<double>::infinity()),
                             -1, at::kFloat)
                     .to(q.scalar_type());
    probs = dropout.apply(dropout_site, probs, config_.attention_dropout, 0, batch_offset,
                          DropoutStream::kSharded);
    out = at::matmul(probs, v);
  } else {
    out = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true,
                                           config_.softmax_scale);
  }
  return out.permute({2, 0, 1, 3}).reshape({seq, batch, local_heads_ * head_dim});
}

PendingSum ShardedAttentionImpl::project(const at::Tensor& context, int64_t column_chunks,
                                         bool backward_per_chunk) {
  return proj->issue(context, column_chunks, backward_per_chunk);
}

at::Tensor ShardedAttentionImpl::forward(const at::Tensor& hidden) {
  check_hidden_shape(hidden, config_.hidden_size, *group_, "ShardedAttention");
  BatchDropout dropout =
      begin_dropout(is_training(), 0.0, config_.attention_dropout, hidden, rng_, *group_);
  return project(context(hidden, dropout, 0), 1).resolve();
}

}  // namespace domino::overlap
