#include "ReferenceTransformer.h"

#include <cmath>

namespace domino::testing {

namespace {
using overlap::Activation;
using overlap::Normalization;

at::Tensor get(const State& state, const std::string& name) {
  auto found = state.find(name);
  return found == state.end() ? at::Tensor() : found->second;
}

at::Tensor norm(const overlap::TransformerConfig& c, const State& s, const std::string& name,
                const at::Tensor& x) {
  if (c.normalization == Normalization::kRmsNorm) {
    return x * at::rsqrt(x.pow(2).mean(-1, true) + c.norm_epsilon) * get(s, name + ".weight");
  }
  return at::layer_norm(x, {c.hidden_size}, get(s, name + ".weight"), get(s, name + ".bias"),
                        c.norm_epsilon);
}

at::Tensor rotary(const at::Tensor& x, double base) {
  const int64_t seq = x.size(0), dim = x.size(-1);
  auto inv =
      at::pow(base, at::arange(0, dim, 2, at::kFloat) / static_cast<double>(dim)).reciprocal();
  auto angles = at::outer(at::arange(seq, at::kFloat), inv);
  angles = at::cat({angles, angles}, -1).view({seq, 1, 1, dim});
  auto rotated = at::cat({-x.narrow(-1, dim / 2, dim / 2), x.narrow(-1, 0, dim / 2)}, -1);
  return x * angles.cos() + rotated * angles.sin();
}

at::Tensor attention(const overlap::TransformerConfig& c, const State& s, const std::string& p,
                     const at::Tensor& x) {
  const int64_t seq = x.size(0), batch = x.size(1), heads = c.num_attention_heads;
  const int64_t groups = c.query_groups(), d = c.head_dim();
  auto qkv = at::linear(x, get(s, p + "qkv.weight"), get(s, p + "qkv.bias"));
  auto q = qkv.narrow(-1, 0, heads * d).reshape({seq, batch, heads, d});
  auto k = qkv.narrow(-1, heads * d, groups * d).reshape({seq, batch, groups, d});
  auto v = qkv.narrow(-1, (heads + groups) * d, groups * d).reshape({seq, batch, groups, d});
  if (c.rotary) {
    q = rotary(q, c.rotary_base);
    k = rotary(k, c.rotary_base);
  }
  q = q.permute({1, 2, 0, 3});
  k = k.permute({1, 2, 0, 3}).repeat_interleave(heads / groups, 1);
  v = v.permute({1, 2, 0, 3}).repeat_interleave(heads / groups, 1);
  auto scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
  auto causal = at::ones({seq, seq}, at::kBool).triu(1);
  auto probs = scores.masked_fill(causal, -INFINITY).softmax(-1);
  auto context = at::matmul(probs, v).permute({2, 0, 1, 3}).reshape({seq, batch, heads * d});
  return at::linear(context, get(s, p + "proj.weight"), get(s, p + "proj.bias"));
}

at::Tensor mlp(const overlap::TransformerConfig& c, const State& s, const std::string& p,
               const at::Tensor& x) {
  auto up = at::linear(x, get(s, p + "fc1.weight"), get(s, p + "fc1.bias"));
  at::Tensor act;
  if (c.activation == Activation::kSwiglu) {
    const int64_t f = up.size(-1) / 2;
    act = at::silu(up.narrow(-1, 0, f)) * up.narrow(-1, f, f);
  } else {
    act = at::gelu(up);
  }
  return at::linear(act, get(s, p + "fc2.weight"), get(s, p + "fc2.bias"));
}
}  // namespace

State random_state(const overlap::TransformerConfig& c, int64_t layers, const std::string& prefix,
                   bool final_norm, uint64_t seed) {
  at::manual_seed(seed);
  State s;
  const int64_t h = c.hidden_size, d = c.head_dim(), f = c.ffn_size();
  const int64_t qkv = (c.num_attention_heads + 2 * c.query_groups()) * d;
  const int64_t up = c.activation == Activation::kSwiglu ? 2 * f : f;
  auto rand = [](std::vector<int64_t> shape, double scale) { return at::randn(shape) * scale; };
  auto add_norm = [&](const std::string& name) {
    s[name + ".weight"] = 1 + rand({h}, 0.1);
    if (c.normalization == Normalization::kLayerNorm) s[name + ".bias"] = rand({h}, 0.1);
  };
  for (int64_t i = 0; i < layers; ++i) {
    const std::string p = prefix.empty() ? "" : prefix + std::to_string(i) + ".";
    add_norm(p + "input_norm");
    s[p + "attention.qkv.weight"] = rand({qkv, h}, 0.2);
    s[p + "attention.proj.weight"] = rand({h, c.num_attention_heads * d}, 0.2);
    add_norm(p + "post_attention_norm");
    s[p + "mlp.fc1.weight"] = rand({up, h}, 0.2);
    s[p + "mlp.fc2.weight"] = rand({h, f}, 0.2);
    if (c.bias) {
      s[p + "attention.qkv.bias"] = rand({qkv}, 0.2);
      s[p + "attention.proj.bias"] = rand({h}, 0.2);
      s[p + "mlp.fc1.bias"] = rand({up}, 0.2);
      s[p + "mlp.fc2.bias"] = rand({h}, 0.2);
    }
  }
  if (final_norm) add_norm("final_norm");
  return s;
}

at::Tensor reference_layer(const overlap::TransformerConfig& c, const State& s,
                           const std::string& p, const at::Tensor& x) {
  auto y = x + attention(c, s, p + "attention.", norm(c, s, p + "input_norm", x));
  return y + mlp(c, s, p + "mlp.", norm(c, s, p + "post_attention_norm", y));
}

at::Tensor reference_transformer(const overlap::TransformerConfig& c, const State& s,
                                 const at::Tensor& x) {
  auto y = x;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    y = reference_layer(c, s, "layers." + std::to_string(i) + ".", y);
  }
  return norm(c, s, "final_norm", y);
}

}  // namespace domino::testing
