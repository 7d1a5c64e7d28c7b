#include "PartwiseNormLinear.h"

#include "DeferredReduction.h"
#include "TensorParallelGroup.h"

#include <ATen/Functions.h>
#include <ATen/autocast_mode.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/custom_function.h>

#include <tuple>
#include <utility>
#include <vector>

namespace domino::overlap {

namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What the part-by-part forward leaves for backward, and where backward's sums go.
struct PartwiseState : torch::CustomClassHolder {
  at::Tensor rstd;  // rmsnorm; layernorm's are recomputed with the normalized input
  double epsilon = 0;
  at::Tensor out;
  TensorParallelGroupPtr group;
  // Per part, then the norm's parameters: the slot its gradient's sum goes to (none at TP 1).
  std::vector<c10::intrusive_ptr<DeferredReduction>> slots;
};

// What the part-by-part forward derives from the weights alone: each part's gain and slice of
// the weight, layernorm's g_k W_k^T rows under the last part's, and the shift b W^T + bias.
struct PartwiseWeights {
  std::vector<at::Tensor> gains;      // per part, float
  std::vector<at::Tensor> weights_t;  // per part, [width (+ parts on layernorm's last), out]
  at::Tensor shift;                   // undefined when there is none
};

// The whole input's norm-then-linear backward: one GEMM each for the weight and the input
// gradient, as the plain pair would run. The forward value was computed part by part before.
// The parts' and the norm parameters' gradients are this rank's partial sums: their all-reduces
// start here, before the weight GEMM, and each is waited for only where its producer needs it.
struct NormLinearFunction : public torch::autograd::Function<NormLinearFunction> {
  static at::Tensor forward(AutogradContext* ctx, at::TensorList parts, const at::Tensor& affine,
                            const at::Tensor& weight, const at::Tensor& bias,
                            const c10::intrusive_ptr<PartwiseState>& state,
                            c10::ScalarType compute) {
    std::vector<at::Tensor> saved(parts.begin(), parts.end());
    saved.push_back(affine);
    saved.push_back(weight);
    ctx->save_for_backward(saved);
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    ctx->saved_data["has_bias"] = bias.numel() > 0;
    ctx->saved_data["compute"] = static_cast<int64_t>(compute);
    // Handed over, not kept: the state outlives forward in ctx, the output must not.
    return std::exchange(state->out, at::Tensor());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto weight = saved.back();
    saved.pop_back();
    const auto affine = saved.back();
    saved.pop_back();
    const auto count = static_cast<int64_t>(saved.size());
    auto state =
        c10::static_intrusive_pointer_cast<PartwiseState>(ctx->saved_data["state"].toCapsule());
    const auto compute = static_cast<c10::ScalarType>(ctx->saved_data["compute"].toInt());
    const bool layer_norm = !state->rstd.defined();
    const int64_t width = saved[0].size(-1);
    const int64_t hidden = width * count;
    const auto input = at::cat(saved, -1).reshape({-1, hidden});
    const auto grad_out = grads[0].to(compute).reshape({-1, grads[0].size(-1)});
    const auto gain = affine.narrow(0, 0, hidden).to(input.scalar_type());
    const auto shift =
        layer_norm ? affine.narrow(0, hidden, hidden).to(input.scalar_type()) : at::Tensor();
    // The normalized input again, in one fused pass (layernorm also gives its statistics).
    at::Tensor normalized, mean, rstd;
    if (layer_norm) {
      std::tie(normalized, mean, rstd) =
          at::native_layer_norm(input, {hidden}, gain, shift, state->epsilon);
    } else {
      rstd = state->rstd;
      normalized = input.to(at::kFloat) * rstd;
    }
    bool want_parts = false;
    for (int64_t k = 0; k < count; ++k) want_parts = want_parts || ctx->needs_input_grad(k);
    const bool want_affine = ctx->needs_input_grad(count);
    variable_list result(static_cast<size_t>(count) + 5);
    if (want_parts || want_affine) {
      const auto grad_norm = at::matmul(grad_out, weight.to(compute));
      at::Tensor grad_input, grad_affine;
      if (layer_norm) {
        auto [grad_x, grad_gain, grad_shift] = at::native_layer_norm_backward(
            grad_norm.to(input.scalar_type()), input, {hidden}, mean, rstd, gain, shift,
            {want_parts, want_affine, want_affine});
        grad_input = grad_x;
        if (want_affine) grad_affine = at::cat({grad_gain, grad_shift});
      } else {
        const auto wide = grad_norm.to(at::kFloat);
        if (want_affine) grad_affine = (wide * normalized).sum(0);
        if (want_parts) {
          const auto grad_normalized = wide * gain.to(at::kFloat);
          grad_input =
              (grad_normalized - normalized * (grad_normalized * normalized).mean(-1, true)) * rstd;
        }
      }
      // Each part's sum starts as soon as it is cut out, the weight GEMM below runs under them.
      // The last part and the norm's parameters share one message: a small all-reduce of its
      // own would pay a whole message's latency for a few kilobytes.
      const auto slot = [&](size_t index) { return state->slots[index]; };
      const auto part_dtype = saved[0].scalar_type();
      const auto last = static_cast<size_t>(count - 1);
      const auto affine_slot = static_cast<size_t>(count);
      const bool shared = want_affine && slot(affine_slot) && affine.scalar_type() == part_dtype &&
                          ctx->needs_input_grad(count - 1) && slot(last);
      if (shared) {
        const int64_t part_size = saved[last].numel();
        auto message =
            at::empty({part_size + grad_affine.numel()}, grad_input.options().dtype(part_dtype));
        result[last] = message.narrow(0, 0, part_size).view(saved[last].sizes());
        result[last].copy_(
            grad_input.narrow(-1, (count - 1) * width, width).view(saved[last].sizes()));
        result[affine_slot] = message.narrow(0, part_size, grad_affine.numel());
        result[affine_slot].copy_(grad_affine);
        const auto work = state->group->all_reduce_async(message);
        slot(last)->issued(work);
        slot(affine_slot)->issued(work);
      }
      for (int64_t k = 0; k < (shared ? count - 1 : count) && want_parts; ++k) {
        const auto index = static_cast<size_t>(k);
        // A part nobody asked for is neither computed out nor reduced (every rank asks alike).
        if (!ctx->needs_input_grad(k)) continue;
        const auto columns = grad_input.narrow(-1, k * width, width);
        result[index] = columns.contiguous().view(saved[index].sizes()).to(part_dtype);
        if (slot(index)) slot(index)->issued(state->group->all_reduce_async(result[index]));
      }
      if (want_affine && !shared) {
        result[affine_slot] = grad_affine.to(affine.scalar_type());
        if (slot(affine_slot)) {
          slot(affine_slot)->issued(state->group->all_reduce_async(result[affine_slot]));
        }
      }
    }
    if (ctx->needs_input_grad(count + 1)) {
      const auto scaled = layer_norm ? normalized : normalized * gain.to(at::kFloat);
      result[static_cast<size_t>(count) + 1] = at::matmul(grad_out.t(), scaled.to(compute));
    }
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(count + 2)) {
      result[static_cast<size_t>(count) + 2] = grad_out.sum(0);
    }
    return result;
  }
};

PartwiseWeights make_partwise_weights(const NormImpl& norm, const ColumnParallelLinearImpl& linear,
                                      int64_t parts, c10::ScalarType compute) {
  at::NoGradGuard no_grad;
  // In float where it says float, autocast or not.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  const bool layer_norm = norm.kind() == Normalization::kLayerNorm;
  const int64_t width = norm.weight.size(0) / parts;
  PartwiseWeights made;
  std::vector<at::Tensor> gained_weight;
  for (int64_t k = 0; k < parts; ++k) {
    made.gains.push_back(norm.weight.narrow(0, k * width, width).to(at::kFloat));
    const auto weight = linear.weight.narrow(1, k * width, width);
    made.weights_t.push_back(weight.to(compute).t());
    if (layer_norm) {
      gained_weight.push_back(at::matmul(weight.to(at::kFloat), made.gains.back()).unsqueeze(0));
    }
  }
  if (layer_norm) {
    // The parts' offsets from the row mean ride along as extra inner columns of the last GEMM,
    // times these rows (see partwise_norm_linear).
    made.weights_t.back() = at::cat({made.weights_t.back(), at::cat(gained_weight).to(compute)}, 0);
    made.shift = at::matmul(linear.weight.to(compute), norm.bias.to(compute));
  }
  if (linear.bias.defined()) {
    made.shift =
        made.shift.defined() ? made.shift + linear.bias.to(compute) : linear.bias.to(compute);
  }
  return made;
}
}  // namespace

at::Tensor partwise_norm_linear(MicroBatch& input, const NormImpl& norm,
                                const ColumnParallelLinearImpl& linear) {
  const bool layer_norm = norm.kind() == Normalization::kLayerNorm;
  const int64_t count = input.parts();
  const int64_t full = norm.weight.size(0);
  const int64_t width = full / count;
  TORCH_CHECK(width * count == full && linear.in_features() == full,
              "partwise_norm_linear: a hidden size of ", full, " (norm) and ", linear.in_features(),
              " (linear) does not cut into ", count, " equal column parts");
  auto state = c10::make_intrusive<PartwiseState>();
  std::vector<at::Tensor> parts;
  c10::ScalarType compute = c10::ScalarType::Undefined;
  PartwiseWeights weights;
  // The value part by part, outside autograd: each part's product accumulates in place as the
  // part lands. Its gradient comes from NormLinearFunction below.
  at::Tensor products;
  // Per part: layernorm's rstd and mean, or rmsnorm's sum of squares.
  std::vector<at::Tensor> part_stats, means;
  // Part 0's rstd scales every part's operand: the products stay near a normalized input's
  // size (a reduced dtype neither overflows nor loses digits on large hidden states), and the
  // row's own rstd corrects by a factor near one at the end.
  at::Tensor first_rstd, offsets;
  for (int64_t k = 0; k < count; ++k) {
    // Recorded: the part's residual sum belongs to the graph.
    parts.push_back(input.part(k));
    at::NoGradGuard no_grad;
    const auto& x = parts.back();
    if (k == 0) {
      const auto device_type = x.device().type();
      compute = at::autocast::is_autocast_enabled(device_type)
                    ? at::autocast::get_autocast_dtype(device_type)
                    : x.scalar_type();
      weights = make_partwise_weights(norm, linear, count, compute);
    }
    // Statistics in float, as layer_norm and rms_norm keep them for reduced dtypes, and in as
    // few passes over the part as the fused kernels take.
    auto wide = x.reshape({-1, width});
    if (wide.scalar_type() != at::kFloat) wide = wide.to(at::kFloat);
    const auto& gain = weights.gains[static_cast<size_t>(k)];
    at::Tensor scaled;
    if (layer_norm) {
      // (x_k - m_k) g_k is the part's own layer norm times its deviation; 1 / rstd_k^2 is its
      // variance plus eps.
      auto [normed, mean, rstd] =
          at::native_layer_norm(wide, {width}, gain, std::nullopt, norm.epsilon());
      if (k == 0) first_rstd = rstd;
      scaled = k == 0 ? normed : normed.mul_(first_rstd / rstd);
      part_stats.push_back(std::move(rstd));
      means.push_back(std::move(mean));
    } else {
      part_stats.push_back(at::linalg_vector_norm(wide, 2, {-1}, true).square());
      if (k == 0)
        first_rstd = at::rsqrt(part_stats.back() / static_cast<double>(width) + norm.epsilon());
      scaled = (wide * first_rstd).mul_(gain);
    }
    if (layer_norm && k + 1 == count) {
      // The row means are known now: the parts' offsets from them, times each part's g_k W_k^T,
      // ride along as extra inner columns of the last GEMM instead of another pass.
      const auto part_means = at::cat(means, -1);
      offsets = part_means - part_means.mean(-1, true);
      scaled = at::cat({scaled, offsets * first_rstd}, -1);
    }
    if (scaled.scalar_type() != compute) scaled = scaled.to(compute);
    const auto& weight_t = weights.weights_t[static_cast<size_t>(k)];
    if (k == 0) {
      products = at::mm(scaled, weight_t);
    } else {
      products.addmm_(scaled, weight_t);
    }
  }
  {
    at::NoGradGuard no_grad;
    // layernorm: the row's variance is the mean over equal parts of var_k + (m_k - m)^2, and
    // var_k + eps = 1 / rstd_k^2; rmsnorm: the parts' sums of squares add up.
    const auto row_rstd =
        layer_norm ? at::rsqrt((at::cat(part_stats, -1).pow(-2) + offsets.square()).mean(-1, true))
                   : at::rsqrt(at::cat(part_stats, -1).sum(-1, true) / static_cast<double>(full) +
                               norm.epsilon());
    if (!layer_norm) state->rstd = row_rstd;
    state->epsilon = norm.epsilon();
    // One pass over the product: rescaled from part 0's rstd to the row's, shifted.
    auto rstd = row_rstd / first_rstd;
    if (rstd.scalar_type() != compute) rstd = rstd.to(compute);
    state->out =
        weights.shift.defined() ? at::addcmul(weights.shift, products, rstd) : products.mul_(rstd);
  }
  auto shape = parts[0].sizes().vec();
  shape.back() = linear.weight.size(0);
  bool tracked = norm.weight.requires_grad() || linear.weight.requires_grad() ||
                 (norm.bias.defined() && norm.bias.requires_grad()) ||
                 (linear.bias.defined() && linear.bias.requires_grad());
  for (const auto& part : parts) tracked = tracked || part.requires_grad();
  tracked = tracked && at::GradMode::is_enabled();
  if (!tracked) return state->out.view(shape);
  // Each part's input gradient is summed over the group on its own, waited for only where that
  // part's producer needs it; the norm's gain and bias meet only this rank's rows of the weight,
  // so their gradients are partial sums too: one reduction for both.
  state->group = linear.group();
  const bool summed = state->group->size() > 1;
  auto route = [&](const at::Tensor& tensor, bool own_copy) {
    if (!summed || !tensor.requires_grad()) {
      state->slots.emplace_back();
      return tensor;
    }
    at::Tensor routed;
    state->slots.push_back(DeferredReduction::on_path_of(tensor, routed, own_copy));
    return routed;
  };
  std::vector<at::Tensor> routed;
  for (const auto& part : parts) routed.push_back(route(part, false));
  // Its sum arrives in the last part's message; the parameters' .grad must not keep that alive.
  const auto affine = route(layer_norm ? at::cat({norm.weight, norm.bias}) : norm.weight, true);
  const auto bias_or_empty =
      linear.bias.defined() ? linear.bias : at::empty({0}, linear.weight.options());
  return NormLinearFunction::apply(at::TensorList(routed), affine, linear.weight, bias_or_empty,
                                   state, compute)
      .view(shape);
}

}  // namespace domino::overlap
