#include "TransformerConfig.h"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace domino::overlap {

namespace {
[[noreturn]] void reject(const std::string& message) {
  throw std::invalid_argument("TransformerConfig: " + message);
}

// 0.1 as "0.1", not std::to_string's "0.100000".
std::string shortest_text(double value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

void require_divisible(const char* field, int64_t value, const char* by_name, int64_t by) {
  if (by <= 0 || value % by != 0) {
    reject(std::string(field) + "=" + std::to_string(value) + " is not divisible by " + by_name +
           "=" + std::to_string(by) + "; pick a " + field + " that is a multiple of " +
           std::to_string(by));
  }
}
}  // namespace

template <class Enum>
Enum parse_enum(std::string_view field, std::string_view name) {
  std::string accepted;
  for (const auto& [spelled, value] : EnumNames<Enum>::values) {
    if (spelled == name) return value;
    accepted += (accepted.empty() ? "" : ", ") + std::string(spelled);
  }
  reject(std::string(field) + "='" + std::string(name) + "' is not one of " + accepted);
}

template <class Enum>
std::string_view enum_name(Enum value) {
  for (const auto& [spelled, known] : EnumNames<Enum>::values) {
    if (known == value) return spelled;
  }
  return "?";
}

#define DOMINO_CONFIG_ENUM(Enum)                                      \
  template Enum parse_enum<Enum>(std::string_view, std::string_view); \
  template std::string_view enum_name<Enum>(Enum);
DOMINO_CONFIG_ENUM(Activation)
DOMINO_CONFIG_ENUM(Normalization)
DOMINO_CONFIG_ENUM(Split)
DOMINO_CONFIG_ENUM(OverlapScope)
DOMINO_CONFIG_ENUM(QkvLayout)
#undef DOMINO_CONFIG_ENUM

int64_t TransformerConfig::micro_batch_count() const {
  return micro_batches.value_or(split == Split::kColumn || split == Split::kNone ? 1 : 2);
}

OverlapScope TransformerConfig::overlap_scope() const {
  return overlap.value_or(split == Split::kNone ? OverlapScope::kIntra : OverlapScope::kInter);
}

int64_t TransformerConfig::ffn_size() const {
  if (ffn_hidden_size > 0) return ffn_hidden_size;
  if (activation == Activation::kSwiglu) return (8 * hidden_size / 3 + 63) / 64 * 64;
  return 4 * hidden_size;
}

void TransformerConfig::validate(int64_t tensor_parallel, int64_t batch_size) const {
  if (tensor_parallel < 1)
    reject("tensor-parallel size must be at least 1, got " + std::to_string(tensor_parallel));
  if (hidden_size <= 0) reject("hidden_size must be positive, got " + std::to_string(hidden_size));
  if (num_layers <= 0) reject("num_layers must be positive, got " + std::to_string(num_layers));
  if (num_attention_heads <= 0) {
    reject("num_attention_heads must be positive, got " + std::to_string(num_attention_heads));
  }
  require_divisible("hidden_size", hidden_size, "num_attention_heads", num_attention_heads);
  require_divisible("num_attention_heads", num_attention_heads, "num_query_groups", query_groups());
  require_divisible("num_attention_heads", num_attention_heads, "tensor-parallel size",
                    tensor_parallel);
  require_divisible("num_query_groups", query_groups(), "tensor-parallel size", tensor_parallel);
  require_divisible("ffn_hidden_size", ffn_size(), "tensor-parallel size", tensor_parallel);
  if (rotary && head_dim() % 2 != 0) {
    reject("rotary embeddings need an even head dimension, got " + std::to_string(head_dim()));
  }
  if (hidden_dropout < 0 || hidden_dropout >= 1 || attention_dropout < 0 ||
      attention_dropout >= 1) {
    reject("dropout rates must lie in [0, 1)");
  }
  const int64_t micro_batches = micro_batch_count();
  const OverlapScope overlap = overlap_scope();
  if (micro_batches < 1)
    reject("micro_batches must be at least 1, got " + std::to_string(micro_batches));
  if (column_chunks < 1)
    reject("column_chunks must be at least 1, got " + std::to_string(column_chunks));
  if (split == Split::kRow && column_chunks != 1) {
    reject("split=row uses no column chunks; set column_chunks=1 or split=column/2d");
  }
  if (split == Split::kColumn && micro_batches != 1) {
    reject("split=column cuts weights only; set micro_batches=1 or split=row/2d");
  }
  if (split == Split::kNone &&
      (micro_batches != 1 || column_chunks != 1 || overlap != OverlapScope::kIntra)) {
    reject(
        "split=none cuts nothing and waits every all-reduce at once; it needs micro_batches=1, "
        "column_chunks=1 and overlap=intra (got " +
        std::to_string(micro_batches) + ", " + std::to_string(column_chunks) + ", " +
        (overlap == OverlapScope::kIntra ? "intra" : "inter") + ")");
  }
  if (split == Split::kColumn || split == Split::k2d) {
    // Column chunks cut the output columns of the row-parallel GEMMs (hidden_size wide).
    require_divisible("hidden_size", hidden_size, "column_chunks", column_chunks);
  }
  if (norm_epsilon <= 0)
    reject("norm_epsilon must be positive, got " + std::to_string(norm_epsilon));
  if (init_std <= 0) reject("init_std must be positive, got " + std::to_string(init_std));
  if (softmax_scale && !(std::isfinite(*softmax_scale) && *softmax_scale > 0)) {
    reject("softmax_scale=" + shortest_text(*softmax_scale) +
           " must be a positive number; leave it None for 1/sqrt(head dimension)");
  }
  if (batch_size > 0 && micro_batches > batch_size) {
    reject("micro_batches=" + std::to_string(micro_batches) + " exceeds the batch of " +
           std::to_string(batch_size) + " sequences; use at most " + std::to_string(batch_size));
  }
  if (params_dtype != "float32" && params_dtype != "float64" && params_dtype != "bfloat16" &&
      params_dtype != "float16") {
    reject("params_dtype='" + params_dtype + "' is not one of float32, float64, bfloat16, float16");
  }
}

Activation parse_activation(const std::string& name) {
  return parse_enum<Activation>("activation", name);
}

Normalization parse_normalization(const std::string& name) {
  return parse_enum<Normalization>("normalization", name);
}

Split parse_split(const std::string& name) {
  return parse_enum<Split>("split", name);
}

OverlapScope parse_overlap(const std::string& name) {
  return parse_enum<OverlapScope>("overlap", name);
}

}  // namespace domino::overlap
