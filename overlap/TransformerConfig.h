// The shape and schedule of a Domino tensor-parallel transformer, checked against the
// tensor-parallel size before any weight is allocated. This is the one definition: the Python
// TransformerConfig is this struct, its fields, defaults and documentation read from
// visit_fields, so a field is added here and nowhere else.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace domino::overlap {

// kGeluTanh: gelu by its tanh approximation (GPT-2's "gelu_new").
enum class Activation { kGelu, kSwiglu, kGeluTanh };
enum class Normalization { kLayerNorm, kRmsNorm };
// kNone: the Megatron-style baseline, nothing cut and every all-reduce waited at once.
enum class Split { kRow, kColumn, k2d, kNone };
enum class OverlapScope { kIntra, kInter };
// How the fused q/k/v projection's rows are ordered. kBlocks: [q; k; v], each block cut over the
// ranks. kGroups: Megatron-Core's, per query group [its query heads; its key; its value], the
// groups cut over the ranks, so a rank's rows are one slice of the whole.
enum class QkvLayout { kBlocks, kGroups };

// Each enum's names, as configs spell them.
template <class Enum>
struct EnumNames;
template <>
struct EnumNames<Activation> {
  static constexpr std::array<std::pair<std::string_view, Activation>, 3> values{
      {{"gelu", Activation::kGelu},
       {"gelu_tanh", Activation::kGeluTanh},
       {"swiglu", Activation::kSwiglu}}};
};
template <>
struct EnumNames<Normalization> {
  static constexpr std::array<std::pair<std::string_view, Normalization>, 2> values{
      {{"layernorm", Normalization::kLayerNorm}, {"rmsnorm", Normalization::kRmsNorm}}};
};
template <>
struct EnumNames<Split> {
  static constexpr std::array<std::pair<std::string_view, Split>, 4> values{
      {{"row", Split::kRow},
       {"column", Split::kColumn},
       {"2d", Split::k2d},
       {"none", Split::kNone}}};
};
template <>
struct EnumNames<OverlapScope> {
  static constexpr std::array<std::pair<std::string_view, OverlapScope>, 2> values{
      {{"intra", OverlapScope::kIntra}, {"inter", OverlapScope::kInter}}};
};
template <>
struct EnumNames<QkvLayout> {
  static constexpr std::array<std::pair<std::string_view, QkvLayout>, 2> values{
      {{"blocks", QkvLayout::kBlocks}, {"groups", QkvLayout::kGroups}}};
};

// The enum value a name stands for; throws std::invalid_argument naming the field and every
// accepted name.
template <class Enum>
Enum parse_enum(std::string_view field, std::string_view name);
template <class Enum>
std::string_view enum_name(Enum value);

struct TransformerConfig {
  int64_t hidden_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_layers = 1;
  int64_t num_query_groups = 0;
  int64_t ffn_hidden_size = 0;
  Activation activation = Activation::kGelu;
  Normalization normalization = Normalization::kLayerNorm;
  bool rotary = false;
  double rotary_base = 10000.0;
  bool bias = true;
  std::optional<bool> qkv_bias;
  double hidden_dropout = 0.0;
  double attention_dropout = 0.0;
  std::string params_dtype = "float32";
  Split split = Split::kRow;
  std::optional<int64_t> micro_batches;
  int64_t column_chunks = 1;
  std::optional<OverlapScope> overlap;
  double norm_epsilon = 1e-5;
  double init_std = 0.02;
  uint64_t seed = 1234;
  bool recompute = false;
  bool sequence_parallel = false;
  QkvLayout qkv_layout = QkvLayout::kBlocks;
  std::optional<double> softmax_scale;

  int64_t query_groups() const {
    return num_query_groups > 0 ? num_query_groups : num_attention_heads;
  }
  int64_t ffn_size() const;
  bool has_qkv_bias() const { return qkv_bias.value_or(bias); }
  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // micro_batches and overlap as the split takes them when unset.
  int64_t micro_batch_count() const;
  OverlapScope overlap_scope() const;
  // Cuts of the batch and of the output columns that the schedule overlaps.
  int64_t batch_slices() const {
    return split == Split::kColumn || split == Split::kNone ? 1 : micro_batch_count();
  }
  int64_t column_slices() const {
    return split == Split::kRow || split == Split::kNone ? 1 : column_chunks;
  }

  // Throws std::invalid_argument naming the field, its value and what would shard, for a shape
  // that cannot be split over tensor_parallel ranks or a batch of batch_size sequences
  // (batch_size 0 skips the batch checks).
  void validate(int64_t tensor_parallel, int64_t batch_size = 0) const;

  bool operator==(const TransformerConfig&) const = default;
};

// Every field of TransformerConfig in order (the order Python's positional arguments take),
// with its name and what it means. visitor(name, member, doc) is called once per field.
template <class Config, class Visitor>
void visit_fields(Config& c, Visitor&& visit) {
  visit("hidden_size", c.hidden_size, "hidden dimension h (required)");
  visit("num_attention_heads", c.num_attention_heads, "query heads (required)");
  visit("num_layers", c.num_layers, "transformer layers of a DominoTransformer");
  visit("num_query_groups", c.num_query_groups, "key/value groups (GQA); 0: one per head");
  visit("ffn_hidden_size", c.ffn_hidden_size,
        "MLP width; 0: 4h for gelu, 8h/3 rounded up to 64 for swiglu");
  visit("activation", c.activation,
        "gelu (exact), gelu_tanh (GPT-2's) or swiglu (silu(gate) * up)");
  visit("normalization", c.normalization, "layernorm or rmsnorm");
  visit("rotary", c.rotary, "rotary embeddings (rotate-half, whole head dimension)");
  visit("rotary_base", c.rotary_base, "rotary embeddings' base (theta)");
  visit("bias", c.bias, "biases on every linear");
  visit("qkv_bias", c.qkv_bias, "the q/k/v projection's bias alone (Qwen2); None: as bias");
  visit("hidden_dropout", c.hidden_dropout, "dropout on each block's output");
  visit("attention_dropout", c.attention_dropout, "dropout on the attention probabilities");
  visit("params_dtype", c.params_dtype, "float32, float64, bfloat16 or float16");
  visit("split", c.split,
        "row (micro-batches), column (column chunks), 2d (both) or none (Megatron's baseline)");
  visit("micro_batches", c.micro_batches,
        "micro-batches of a row or 2d split; None: 2 for row and 2d, 1 for column and none");
  visit("column_chunks", c.column_chunks, "column chunks of a column or 2d split");
  visit("overlap", c.overlap,
        "intra (each layer finishes its reductions) or inter (the last ones run under the next "
        "layer); None: inter, intra for split none");
  visit("norm_epsilon", c.norm_epsilon, "the norms' epsilon");
  visit("init_std", c.init_std,
        "weights ~ N(0, init_std); output projections scaled by 1/sqrt(2 num_layers)");
  visit("seed", c.seed, "weights and dropout; equal on every tensor-parallel rank");
  visit("recompute", c.recompute,
        "DominoTransformer in training keeps each layer's input only and recomputes the layer "
        "in backward");
  visit("sequence_parallel", c.sequence_parallel,
        "hidden states between blocks cut along the sequence over the tensor-parallel ranks "
        "([s/tp, b, h]): all-gather before the column-parallel GEMMs, reduce-scatter after the "
        "row-parallel ones");
  visit("qkv_layout", c.qkv_layout,
        "blocks ([q; k; v]) or groups (Megatron-Core's rows per query group)");
  visit("softmax_scale", c.softmax_scale,
        "what attention scores are multiplied by before the softmax; None: 1/sqrt(head dimension)");
}

Activation parse_activation(const std::string& name);
Normalization parse_normalization(const std::string& name);
Split parse_split(const std::string& name);
OverlapScope parse_overlap(const std::string& name);

}  // namespace domino::overlap
