// Rotary position embeddings (rotate-half form, over the whole head dimension), applied to
// [s, b, heads, head_dim] queries and keys. Positions are sequence indices, so micro-batches
// cut along the batch see the same angles.
#pragma once

#include <ATen/core/Tensor.h>

#include <mutex>

namespace domino::overlap {

class RotaryEmbedding {
 public:
  RotaryEmbedding(int64_t head_dim, double base) : head_dim_(head_dim), base_(base) {}
  at::Tensor apply(const at::Tensor& x);
  // With angles someone else computed, [s, 1, 1, r] (Megatron-Core's rotary_pos_emb, r <= the
  // head dimension): the first r dimensions of each head are rotated, the rest pass through.
  static at::Tensor apply_angles(const at::Tensor& x, const at::Tensor& angles);

 private:
  int64_t head_dim_;
  double base_;
  std::mutex mutex_;
  at::Tensor cos_;  // [s, 1, 1, head_dim], cached for the longest sequence seen
  at::Tensor sin_;
};

}  // namespace domino::overlap
