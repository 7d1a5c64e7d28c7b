// The shape of a Domino tensor-parallel transformer, checked against the tensor-parallel size
// before any weight is allocated.
#pragma once

#include <cstdint>
#include <string>

namespace domino::overlap {

// kGeluTanh: gelu by its tanh approximation (GPT-2's "gelu_new").
enum class Activation { kGelu, kSwiglu, kGeluTanh };
enum class Normalization { kLayerNorm, kRmsNorm };
// kNone: the Megatron-style baseline, nothing cut and every all-reduce waited at once.
enum class Split { kRow, kColumn, k2d, kNone };
enum class OverlapScope { kIntra, kInter };

struct TransformerConfig {
  int64_t hidden_size = 0;
  int64_t num_layers = 1;
  int64_t num_attention_heads = 0;
  int64_t num_query_groups = 0;  // 0: same as heads (no GQA)
  int64_t ffn_hidden_size = 0;   // 0: 4 * hidden (gelu) or 8/3 * hidden rounded (swiglu)
  Activation activation = Activation::kGelu;
  Normalization normalization = Normalization::kLayerNorm;
  bool rotary = false;
  double rotary_base = 10000.0;
  bool bias = true;
  int qkv_bias = -1;  // the q/k/v projection's bias: 1 on, 0 off, -1 as `bias` (Qwen2: on alone)
  double hidden_dropout = 0.0;
  double attention_dropout = 0.0;
  std::string params_dtype = "float32";
  Split split = Split::kRow;
  int64_t micro_batches = 2;
  int64_t column_chunks = 1;
  OverlapScope overlap = OverlapScope::kInter;
  double norm_epsilon = 1e-5;
  double init_std = 0.02;  // weights ~ N(0, init_std); output projections scaled by 1/sqrt(2L)
  uint64_t seed = 1234;    // weights and dropout; equal on every tensor-parallel rank

  int64_t query_groups() const {
    return num_query_groups > 0 ? num_query_groups : num_attention_heads;
  }
  int64_t ffn_size() const;
  bool has_qkv_bias() const { return qkv_bias < 0 ? bias : qkv_bias != 0; }
  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // Cuts of the batch and of the output columns that the schedule overlaps.
  int64_t batch_slices() const {
    return split == Split::kColumn || split == Split::kNone ? 1 : micro_batches;
  }
  int64_t column_slices() const {
    return split == Split::kRow || split == Split::kNone ? 1 : column_chunks;
  }

  // Throws std::invalid_argument naming the field, its value and what would shard, for a shape
  // that cannot be split over tensor_parallel ranks or a batch of batch_size sequences
  // (batch_size 0 skips the batch checks).
  void validate(int64_t tensor_parallel, int64_t batch_size = 0) const;
};

Activation parse_activation(const std::string& name);
Normalization parse_normalization(const std::string& name);
Split parse_split(const std::string& name);
OverlapScope parse_overlap(const std::string& name);

}  // namespace domino::overlap
