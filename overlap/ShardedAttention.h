// Causal self-attention over this rank's heads: a fused QKV column-parallel projection (grouped
// query attention: each key/value group serves num_heads / num_query_groups query heads, and
// groups are cut over ranks with their heads), optional rotary embeddings, and a row-parallel
// output projection whose all-reduce the caller may leave in flight.
#pragma once

#include <torch/nn/pimpl.h>

#include <memory>

#include "ColumnParallelLinear.h"
#include "LayerTypes.h"
#include "RotaryEmbedding.h"
#include "RowParallelLinear.h"
#include "TensorParallelRng.h"
#include "TransformerConfig.h"

namespace domino::overlap {

class ShardedAttentionImpl : public ConfiguredLayerImpl {
 public:
  ShardedAttentionImpl(const TransformerConfig& config, TensorParallelGroupPtr group,
                       WeightInit& init, std::shared_ptr<TensorParallelRng> rng);
  // Standalone: its own weights and dropout streams, from config.seed.
  ShardedAttentionImpl(const TransformerConfig& config, TensorParallelGroupPtr group);

  // hidden [s, b, h] (rows [batch_offset, ...) of the pass's batch) -> this rank's context
  // vectors [s, b, local_heads * head_dim], before the output projection.
  // `dropout_site` names the probabilities' mask within the pass (unique per layer);
  // defer_input_gradient as in ColumnParallelLinear::forward.
  // rotary_angles: Megatron-Core's rotary_pos_emb ([s, 1, 1, r]) to rotate q and k by, in place
  // of the config's own rotary embeddings. Under sequence parallelism hidden is this rank's
  // rows and the context covers the whole sequence.
  at::Tensor context(const at::Tensor& hidden, BatchDropout& dropout, int64_t batch_offset,
                     const std::string& dropout_site = "attention.probs",
                     bool defer_input_gradient = false, const at::Tensor& rotary_angles = {});
  // The same from the qkv projection's output [s, b, (local q, k, v columns)].
  at::Tensor attend(const at::Tensor& fused, BatchDropout& dropout, int64_t batch_offset,
                    const std::string& dropout_site = "attention.probs",
                    const at::Tensor& rotary_angles = {});
  // Output projection, reduction started: column_chunks as in RowParallelLinear::issue.
  PendingSum project(const at::Tensor& context, int64_t column_chunks,
                     bool backward_per_chunk = false);

  at::Tensor forward(const at::Tensor& hidden) override;

  ColumnParallelLinear qkv{nullptr};
  RowParallelLinear proj{nullptr};

 private:
  TransformerConfig config_;
  std::shared_ptr<TensorParallelRng> rng_;
  std::unique_ptr<RotaryEmbedding> rotary_;
  int64_t local_heads_;
  int64_t local_groups_;
};
TORCH_MODULE(ShardedAttention);

}  // namespace domino::overlap
