#include "ColumnParallelLinear.h"

#include "DeferredReduction.h"

#include <ATen/Functions.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace domino::overlap {

namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct ColumnParallelLinearFunction
    : public torch::autograd::Function<ColumnParallelLinearFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias, const TensorParallelGroupPtr& group,
                            const c10::intrusive_ptr<DeferredReduction>& deferred) {
    // The input gradient is reduced in the input's own dtype: autograd would cast it back on its
    // way out of backward, reading the buffer before a deferred reduction filled it.
    ctx->saved_data["input_dtype"] = static_cast<int64_t>(input.scalar_type());
    // Under autocast, compute (and save for backward) in the autocast dtype, as aten::linear would.
    const auto device_type = input.device().type();
    if (at::autocast::is_autocast_enabled(device_type)) {
      const auto dtype = at::autocast::get_autocast_dtype(device_type);
      return compute(ctx, at::autocast::cached_cast(dtype, input, device_type),
                     at::autocast::cached_cast(dtype, weight, device_type),
                     bias.numel() > 0 ? at::autocast::cached_cast(dtype, bias, device_type) : bias,
                     group, deferred);
    }
    return compute(ctx, input, weight, bias, group, deferred);
  }

  static at::Tensor compute(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias, const TensorParallelGroupPtr& group,
                            const c10::intrusive_ptr<DeferredReduction>& deferred) {
    ctx->save_for_backward({input, weight});
    ctx->saved_data["group"] = c10::IValue::make_capsule(group);
    if (deferred) ctx->saved_data["deferred"] = c10::IValue::make_capsule(deferred);
    const bool has_bias = bias.numel() > 0;
    ctx->saved_data["has_bias"] = has_bias;
    return at::linear(input, weight, has_bias ? std::optional<at::Tensor>(bias) : std::nullopt);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& input = saved[0];
    const auto& weight = saved[1];
    auto group = c10::static_intrusive_pointer_cast<TensorParallelGroup>(
        ctx->saved_data["group"].toCapsule());
    const auto grad_output = grads[0];

    at::Tensor grad_input;
    c10::intrusive_ptr<c10d::Work> reduction;
    if (ctx->needs_input_grad(0)) {
      const auto input_dtype = static_cast<c10::ScalarType>(ctx->saved_data["input_dtype"].toInt());
      grad_input = at::matmul(grad_output, weight).to(input_dtype);
      reduction = group->all_reduce_async(grad_input);
    }
    // Runs while the input gradient is on the wire.
    const auto flat_grad = grad_output.reshape({-1, grad_output.size(-1)});
    at::Tensor grad_weight;
    if (ctx->needs_input_grad(1)) {
      grad_weight = at::matmul(flat_grad.t(), input.reshape({-1, input.size(-1)}));
    }
    at::Tensor grad_bias;
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2)) {
      grad_bias = flat_grad.sum(0);
    }
    if (reduction && ctx->saved_data.count("deferred")) {
      c10::static_intrusive_pointer_cast<DeferredReduction>(ctx->saved_data["deferred"].toCapsule())
          ->issued(std::move(reduction));
    }
    wait_for(reduction);
    return {grad_input, grad_weight, grad_bias, at::Tensor(), at::Tensor()};
  }
};

// A gather in flight, handed to the autograd function below.
struct GatherHolder : torch::CustomClassHolder {
  explicit GatherHolder(SequenceGather g) : gather(std::move(g)) {}
  SequenceGather gather;
};

// Y = gather(X) A^T + b over the sequence. Forward: the GEMM takes the gathered chunks as they
// land, each written to its rows of the whole. Only this rank's rows are saved: backward gathers
// them again (under the input-gradient GEMM) for the weight gradient, and reduce-scatters the
// input gradient, under the weight GEMM (Megatron's order).
struct SequenceParallelColumnFunction
    : public torch::autograd::Function<SequenceParallelColumnFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& local, const at::Tensor& weight,
                            const at::Tensor& bias, const TensorParallelGroupPtr& group,
                            const c10::intrusive_ptr<DeferredReduction>& deferred,
                            const c10::intrusive_ptr<GatherHolder>& holder) {
    const auto device_type = local.device().type();
    at::Tensor w = weight, b = bias;
    if (at::autocast::is_autocast_enabled(device_type)) {
      const auto dtype = at::autocast::get_autocast_dtype(device_type);
      w = at::autocast::cached_cast(dtype, weight, device_type);
      if (bias.numel() > 0) b = at::autocast::cached_cast(dtype, bias, device_type);
    }
    SequenceGather& gather = holder->gather;
    const bool has_bias = b.numel() > 0;
    auto whole_shape = local.sizes().vec();
    whole_shape[0] = local.size(0) * group->size();
    whole_shape.back() = w.size(0);
    at::Tensor out = at::empty(whole_shape, local.options().dtype(w.scalar_type()));
    for (size_t k = 0; k < gather.chunks.size(); ++k) {
      const auto chunk = gather.chunk(k).to(w.scalar_type());
      auto part = at::linear(chunk, w, has_bias ? std::optional<at::Tensor>(b) : std::nullopt);
      auto shape = part.sizes().vec();
      shape[0] /= group->size();
      shape.insert(shape.begin(), group->size());
      gather.place_of(out, k).copy_(part.view(shape));
    }
    ctx->save_for_backward({local, w});
    ctx->saved_data["group"] = c10::IValue::make_capsule(group);
    if (deferred) ctx->saved_data["deferred"] = c10::IValue::make_capsule(deferred);
    ctx->saved_data["has_bias"] = has_bias;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& local = saved[0];
    const auto& weight = saved[1];
    auto group = c10::static_intrusive_pointer_cast<TensorParallelGroup>(
        ctx->saved_data["group"].toCapsule());
    const auto grad_output = grads[0].contiguous();
    // The input again, for the weight gradient: on the wire while the input gradient computes.
    SequenceGather again;
    if (ctx->needs_input_grad(1)) again = start_sequence_gather(local, *group, 1);
    at::Tensor grad_input;
    c10::intrusive_ptr<c10d::Work> reduction;
    if (ctx->needs_input_grad(0)) {
      // In the input's own dtype: autograd would cast it on its way out of backward, reading the
      // buffer before a deferred reduce-scatter filled it.
      const auto whole = at::matmul(grad_output, weight).to(local.scalar_type());
      grad_input = at::empty(local.sizes(), whole.options());
      reduction = group->reduce_scatter_async(grad_input, whole.contiguous());
    }
    const auto flat_grad = grad_output.reshape({-1, grad_output.size(-1)});
    at::Tensor grad_weight;
    if (ctx->needs_input_grad(1)) {
      const auto input = again.chunk(0).to(flat_grad.scalar_type());
      grad_weight = at::matmul(flat_grad.t(), input.reshape({-1, input.size(-1)}));
    }
    at::Tensor grad_bias;
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2)) {
      grad_bias = flat_grad.sum(0);
    }
    if (reduction && ctx->saved_data.count("deferred")) {
      c10::static_intrusive_pointer_cast<DeferredReduction>(ctx->saved_data["deferred"].toCapsule())
          ->issued(std::move(reduction));
    }
    wait_for(reduction);
    return {grad_input, grad_weight, grad_bias, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};
}  // namespace

ColumnParallelLinearImpl::ColumnParallelLinearImpl(int64_t in_features,
                                                   std::vector<int64_t> out_segments, bool bias,
                                                   TensorParallelGroupPtr group, WeightInit& init,
                                                   std::vector<std::string> segment_names,
                                                   bool sequence_parallel)
    : ShardedModule(std::move(group)), sequence_parallel_(sequence_parallel) {
  const int64_t out_features =
      std::accumulate(out_segments.begin(), out_segments.end(), static_cast<int64_t>(0));
  if (!segment_names.empty() && segment_names.size() != out_segments.size()) {
    throw std::invalid_argument("ColumnParallelLinear: " + std::to_string(segment_names.size()) +
                                " segment names for " + std::to_string(out_segments.size()) +
                                " segments");
  }
  weight = register_sharded("weight", init.normal({out_features, in_features}),
                            ShardLayout{0, out_segments, segment_names});
  if (bias) {
    this->bias =
        register_sharded("bias", init.constant({out_features}, 0.0),
                         ShardLayout{0, std::move(out_segments), std::move(segment_names)});
  }
}

SequenceGather ColumnParallelLinearImpl::start_gather(const at::Tensor& local_rows,
                                                      int64_t chunks) const {
  return start_sequence_gather(local_rows, *group_, chunks);
}

at::Tensor ColumnParallelLinearImpl::forward_gathered(SequenceGather gather,
                                                      bool defer_input_gradient) {
  const auto bias_or_empty = bias.defined() ? bias : at::empty({0}, weight.options());
  c10::intrusive_ptr<DeferredReduction> deferred;
  auto routed = gather.local;
  if (defer_input_gradient && routed.requires_grad() && group_->size() > 1) {
    deferred = DeferredReduction::on_path_of(gather.local, routed);
  }
  return SequenceParallelColumnFunction::apply(
      routed, weight, bias_or_empty, group_, deferred,
      c10::make_intrusive<GatherHolder>(std::move(gather)));
}

at::Tensor ColumnParallelLinearImpl::forward(const at::Tensor& input, bool defer_input_gradient) {
  if (sequence_parallel_) return forward_gathered(start_gather(input), defer_input_gradient);
  // Custom autograd functions take no undefined tensors: no bias travels as an empty one.
  const auto bias_or_empty = bias.defined() ? bias : at::empty({0}, weight.options());
  c10::intrusive_ptr<DeferredReduction> deferred;
  auto routed = input;
  if (defer_input_gradient && input.requires_grad() && group_->size() > 1) {
    deferred = DeferredReduction::on_path_of(input, routed);
  }
  return ColumnParallelLinearFunction::apply(routed, weight, bias_or_empty, group_, deferred);
}

}  // namespace domino::overlap
