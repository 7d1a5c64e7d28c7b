#include "RowParallelLinear.h"

#include <ATen/Functions.h>
#include <torch/csrc/autograd/custom_function.h>

#include <stdexcept>

#include "SequenceParallel.h"

namespace domino::overlap {

namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// input W^T in `chunks` column chunks, each chunk's all-reduce started as soon as it exists.
std::vector<at::Tensor> multiply_and_start(const at::Tensor& input, const at::Tensor& weight,
                                           int64_t chunks, TensorParallelGroup& group,
                                           std::vector<c10::intrusive_ptr<c10d::Work>>& works) {
  const int64_t width = weight.size(0) / chunks;
  std::vector<at::Tensor> outputs;
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    // A fresh GEMM output that autograd does not save, so reducing it in place is safe; the
    // backward of the sum is the identity on every rank.
    auto partial = at::matmul(input, weight.narrow(0, chunk * width, width).t());
    works.push_back(group.all_reduce_async(partial));
    outputs.push_back(std::move(partial));
  }
  return outputs;
}

// The reductions the forward below started, for the caller to wait on.
struct StartedReductions : torch::CustomClassHolder {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
};

// multiply_and_start as one autograd node for all chunks, so backward runs one GEMM each for the
// input and the weight gradient, as a whole product would, instead of a thin GEMM per chunk and a
// pass summing their input gradients.
struct ChunkedProductFunction : public torch::autograd::Function<ChunkedProductFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const at::Tensor& weight, int64_t chunks,
                               const TensorParallelGroupPtr& group,
                               const c10::intrusive_ptr<StartedReductions>& started) {
    ctx->save_for_backward({input, weight});
    return multiply_and_start(input, weight, chunks, *group, started->works);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& input = saved[0];
    const auto& weight = saved[1];
    const int64_t width = weight.size(0) / static_cast<int64_t>(grads.size());
    c10::ScalarType dtype = input.scalar_type();
    for (const auto& grad : grads) {
      if (grad.defined()) dtype = grad.scalar_type();  // the forward's (autocast's) dtype
    }
    std::vector<at::Tensor> parts;
    for (const auto& grad : grads) {
      auto shape = input.sizes().vec();
      shape.back() = width;
      parts.push_back(grad.defined() ? grad : at::zeros(shape, input.options().dtype(dtype)));
    }
    const auto grad_out = at::cat(parts, -1);
    at::Tensor grad_input, grad_weight;
    if (ctx->needs_input_grad(0)) grad_input = at::matmul(grad_out, weight.to(dtype));
    if (ctx->needs_input_grad(1)) {
      grad_weight = at::matmul(grad_out.reshape({-1, grad_out.size(-1)}).t(),
                               input.to(dtype).reshape({-1, input.size(-1)}));
    }
    return {grad_input, grad_weight, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// Sequence parallelism: input W^T in `chunks` column chunks, each reduce-scattered along the
// sequence as soon as it exists. Backward gathers the chunks' gradients along the sequence (all
// started at once) and takes each chunk's GEMMs as it lands.
struct ScatteredProductFunction : public torch::autograd::Function<ScatteredProductFunction> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const at::Tensor& weight, int64_t chunks,
                               const TensorParallelGroupPtr& group,
                               const c10::intrusive_ptr<StartedReductions>& started) {
    ctx->save_for_backward({input, weight});
    ctx->saved_data["group"] = c10::IValue::make_capsule(group);
    const int64_t width = weight.size(0) / chunks;
    std::vector<at::Tensor> outputs;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      auto partial = at::matmul(input, weight.narrow(0, chunk * width, width).t()).contiguous();
      auto shape = partial.sizes().vec();
      shape[0] /= group->size();
      auto rows = at::empty(shape, partial.options());
      // The group's work keeps `partial` alive until it is read (c10d's contract).
      started->works.push_back(group->reduce_scatter_async(rows, partial));
      outputs.push_back(std::move(rows));
    }
    return outputs;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& input = saved[0];
    const auto& weight = saved[1];
    auto group = c10::static_intrusive_pointer_cast<TensorParallelGroup>(
        ctx->saved_data["group"].toCapsule());
    const int64_t width = weight.size(0) / static_cast<int64_t>(grads.size());
    c10::ScalarType dtype = input.scalar_type();
    for (const auto& grad : grads) {
      if (grad.defined()) dtype = grad.scalar_type();
    }
    std::vector<SequenceGather> gathered;
    for (const auto& grad : grads) {
      auto shape = input.sizes().vec();
      shape[0] /= group->size();
      shape.back() = width;
      gathered.push_back(start_sequence_gather(
          grad.defined() ? grad : at::zeros(shape, input.options().dtype(dtype)), *group, 1));
    }
    const auto w = weight.to(dtype);
    const auto x = input.to(dtype);
    at::Tensor grad_input;
    at::Tensor grad_weight =
        ctx->needs_input_grad(1) ? at::empty(weight.sizes(), w.options()) : at::Tensor();
    for (size_t k = 0; k < gathered.size(); ++k) {
      const auto& grad = gathered[k].chunk(0);
      const auto rows = static_cast<int64_t>(k) * width;
      if (ctx->needs_input_grad(0)) {
        auto part = at::matmul(grad, w.narrow(0, rows, width));
        grad_input = grad_input.defined() ? grad_input.add_(part) : part;
      }
      if (grad_weight.defined()) {
        grad_weight.narrow(0, rows, width)
            .copy_(at::matmul(grad.reshape({-1, width}).t(), x.reshape({-1, x.size(-1)})));
      }
    }
    return {grad_input, grad_weight, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};
}  // namespace

RowParallelLinearImpl::RowParallelLinearImpl(int64_t in_features, int64_t out_features, bool bias,
                                             TensorParallelGroupPtr group, WeightInit& init,
                                             double init_scale, bool sequence_parallel)
    : ShardedModule(std::move(group)), sequence_parallel_(sequence_parallel) {
  weight = register_sharded("weight", init.normal({out_features, in_features}, init_scale),
                            ShardLayout{1, {in_features}});
  if (bias) this->bias = register_sharded("bias", init.constant({out_features}, 0.0), {});
  // Added to this rank's rows only: its gradient is a partial sum.
  if (sequence_parallel_) sum_gradients_over_group({this->bias}, group_);
}

PendingSum RowParallelLinearImpl::issue(const at::Tensor& local_input, int64_t column_chunks,
                                        bool backward_per_chunk) {
  if (local_input.size(-1) != local_in_features()) {
    throw std::invalid_argument(
        "RowParallelLinear: input has " + std::to_string(local_input.size(-1)) +
        " features, this rank's "
        "shard of the weight takes " +
        std::to_string(local_in_features()) + " (" + group_->describe() + ")");
  }
  if (column_chunks < 1 || out_features() % column_chunks != 0) {
    throw std::invalid_argument(
        "RowParallelLinear: column_chunks=" + std::to_string(column_chunks) +
        " does not divide out_features=" + std::to_string(out_features()));
  }
  if (sequence_parallel_) {
    auto started = c10::make_intrusive<StartedReductions>();
    auto chunks =
        ScatteredProductFunction::apply(local_input, weight, column_chunks, group_, started);
    return PendingSum(std::move(chunks), std::move(started->works), bias);
  }
  if (column_chunks > 1 && !backward_per_chunk) {
    auto started = c10::make_intrusive<StartedReductions>();
    auto chunks =
        ChunkedProductFunction::apply(local_input, weight, column_chunks, group_, started);
    return PendingSum(std::move(chunks), std::move(started->works), bias);
  }
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  auto chunks = multiply_and_start(local_input, weight, column_chunks, *group_, works);
  return PendingSum(std::move(chunks), std::move(works), bias);
}

}  // namespace domino::overlap
