#include "ColumnParallelLinear.h"

#include <ATen/Functions.h>
#include <torch/csrc/autograd/custom_function.h>

#include <numeric>

namespace domino::overlap {

namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct ColumnParallelLinearFunction
    : public torch::autograd::Function<ColumnParallelLinearFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias, const TensorParallelGroupPtr& group) {
    ctx->save_for_backward({input, weight});
    ctx->saved_data["group"] = c10::IValue::make_capsule(group);
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
      grad_input = at::matmul(grad_output, weight);
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
    wait_for(reduction);
    return {grad_input, grad_weight, grad_bias, at::Tensor()};
  }
};
}  // namespace

ColumnParallelLinearImpl::ColumnParallelLinearImpl(int64_t in_features,
                                                   std::vector<int64_t> out_segments, bool bias,
                                                   TensorParallelGroupPtr group, WeightInit& init)
    : ShardedModule(std::move(group)), in_features_(in_features) {
  const int64_t out_features =
      std::accumulate(out_segments.begin(), out_segments.end(), static_cast<int64_t>(0));
  weight = register_sharded("weight", init.normal({out_features, in_features}),
                            ShardLayout{0, out_segments});
  if (bias) {
    this->bias = register_sharded("bias", init.constant({out_features}, 0.0),
                                  ShardLayout{0, std::move(out_segments)});
  }
}

at::Tensor ColumnParallelLinearImpl::forward(const at::Tensor& input) {
  // Custom autograd functions take no undefined tensors: no bias travels as an empty one.
  const auto bias_or_empty = bias.defined() ? bias : at::empty({0}, weight.options());
  return ColumnParallelLinearFunction::apply(input, weight, bias_or_empty, group_);
}

}  // namespace domino::overlap
