// The entry points that take many tensors in one call (coalesced forms) and the single-tensor
// names torch 2.14 made canonical. Lists of one dtype travel end to end in one flat buffer.
#include <torch/version.h>

#include "OpChecks.h"
#include "OpIssue.h"
#include "ProcessGroupDominoImpl.h"
#include "TensorBuffer.h"
#include "Work.h"
#include "engine/RoutedComm.h"

namespace domino {

namespace {
// c10d named these op types in torch 2.12 (reduce-scatter) and 2.14 (all-gather); before, the
// coalesced tensor ops reported COALESCED.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 14)
constexpr auto kAllgatherIntoTensorCoalesced = c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED;
#else
constexpr auto kAllgatherIntoTensorCoalesced = c10d::OpType::COALESCED;
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 12)
constexpr auto kReduceScatterTensorCoalesced = c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED;
#else
constexpr auto kReduceScatterTensorCoalesced = c10d::OpType::COALESCED;
#endif
}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  const OpSite at = impl_->where("allreduce_coalesced");
  TORCH_CHECK(!tensors.empty(), at, ": no tensors given");
  require_same(tensors[0], tensors, -1, at, "tensors");
  const Reduction reduction = checked_reduction(opts.reduceOp, tensors[0], at);
  const auto device = device_of(at, {&tensors});
  const std::vector<at::Tensor> users = tensors;
  // Premultiplied lists are scaled and staged on the lane, then written back.
  auto staged =
      reduction.premultiply ? nullptr : std::make_shared<StagedList>(tensors, /*copy_in=*/true);
  return impl_->enqueue(
      {.op = "all_reduce_coalesced",
       .type = c10d::OpType::ALLREDUCE_COALESCED,
       .tensors = tensors,
       .device = device,
       .blocking = is_blocking(opts),
       .host_only = needs_host(reduction.op, tensors[0])},
      [staged, users, reduction](Work&, RoutedComm& comm) {
        auto run = [&](domino_buffer_t& b) {
          comm.collective(make_call(topology::Collective::kAllReduce, b, b, reduction.op));
        };
        if (!staged) return reduce_premultiplied(reduction, users, /*write_back=*/true, run);
        domino_buffer_t buffer = staged->buffer();
        run(buffer);
        staged->publish();
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputTensorLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const OpSite at = impl_->where("allgather_coalesced");
  TORCH_CHECK(!inputs.empty(), at, ": no input tensors given");
  require_same(inputs[0], inputs, -1, at, "input");
  TORCH_CHECK(outputTensorLists.size() == static_cast<size_t>(size_), at, ": expected ", size_,
              " output lists (one per rank), got ", outputTensorLists.size());
  // Rank-major: rank r's inputs, end to end, are block r of the gathered flat buffer.
  std::vector<at::Tensor> outputs;
  for (size_t r = 0; r < outputTensorLists.size(); ++r) {
    const auto& list = outputTensorLists[r];
    TORCH_CHECK(list.size() == inputs.size(), at, ": output list ", r, " has ", list.size(),
                " tensors for ", inputs.size(), " inputs");
    for (size_t i = 0; i < list.size(); ++i) {
      TORCH_CHECK(
          list[i].numel() == inputs[i].numel() && list[i].scalar_type() == inputs[i].scalar_type(),
          at, ": output [", r, "][", i, "] (", list[i].numel(), " x ", list[i].scalar_type(),
          ") must match input ", i, " (", inputs[i].numel(), " x ", inputs[i].scalar_type(), ")");
      outputs.push_back(list[i]);
    }
  }
  auto in = std::make_shared<StagedList>(inputs, /*copy_in=*/true);
  auto out = std::make_shared<StagedList>(outputs, /*copy_in=*/false);
  const auto device = device_of(at, {&inputs, &outputs});
  return impl_->enqueue(
      {.op = "all_gather_coalesced",
       .type = c10d::OpType::ALLGATHER_COALESCED,
       .tensors = Impl::OpTensors(outputs, inputs),
       .device = device,
       .blocking = is_blocking(opts)},
      [in, out](Work&, RoutedComm& comm) {
        domino_buffer_t recv = out->buffer();
        comm.collective(make_call(topology::Collective::kAllGather, in->buffer(), recv));
        out->publish();
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const OpSite at = impl_->where("allgather_into_tensor_coalesced");
  TORCH_CHECK(outputs.size() == inputs.size(), at, ": ", outputs.size(), " outputs for ",
              inputs.size(), " inputs");
  std::vector<std::pair<std::shared_ptr<StagedTensor>, std::shared_ptr<StagedTensor>>> pairs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK(outputs[i].numel() == inputs[i].numel() * size_ &&
                    outputs[i].scalar_type() == inputs[i].scalar_type(),
                at, ": output ", i, " must hold input ", i, " from all ", size_, " ranks");
    pairs.emplace_back(std::make_shared<StagedTensor>(inputs[i]),
                       std::make_shared<StagedTensor>(outputs[i], /*copy_in=*/false));
  }
  const auto device = device_of(at, {&inputs, &outputs});
  return impl_->enqueue(
      {.op = "all_gather_into_tensor_coalesced",
       .type = kAllgatherIntoTensorCoalesced,
       .tensors = Impl::OpTensors(outputs, inputs),
       .device = device,
       .blocking = is_blocking(opts)},
      [pairs](Work&, RoutedComm& comm) {
        for (const auto& [in, out] : pairs) {
          domino_buffer_t recv = out->buffer();
          comm.collective(make_call(topology::Collective::kAllGather, in->buffer(), recv));
          out->publish();
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const OpSite at = impl_->where("reduce_scatter_tensor_coalesced");
  TORCH_CHECK(outputs.size() == inputs.size(), at, ": ", outputs.size(), " outputs for ",
              inputs.size(), " inputs");
  TORCH_CHECK(!inputs.empty(), at, ": no tensors given");
  std::vector<std::pair<at::Tensor, std::shared_ptr<StagedTensor>>> pairs;
  Reduction reduction;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK(inputs[i].numel() == outputs[i].numel() * size_ &&
                    outputs[i].scalar_type() == inputs[i].scalar_type(),
                at, ": input ", i, " must hold output ", i, " for all ", size_, " ranks");
    reduction = checked_reduction(opts.reduceOp, inputs[i], at);
    pairs.emplace_back(inputs[i], std::make_shared<StagedTensor>(outputs[i], /*copy_in=*/false));
  }
  const auto device = device_of(at, {&inputs, &outputs});
  return impl_->enqueue(
      {.op = "reduce_scatter_tensor_coalesced",
       .type = kReduceScatterTensorCoalesced,
       .tensors = Impl::OpTensors(outputs, inputs),
       .device = device,
       .blocking = is_blocking(opts),
       .host_only = needs_host(reduction.op, inputs[0])},
      [pairs, reduction](Work&, RoutedComm& comm) {
        for (const auto& [input, out] : pairs) {
          StagedTensor in(reduction.premultiply ? reduction.premultiplied(input) : input);
          domino_buffer_t recv = out->buffer();
          comm.collective(
              make_call(topology::Collective::kReduceScatter, in.buffer(), recv, reduction.op));
          out->publish();
        }
      });
}

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 14)
c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::all_gather_single(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  return _allgather_base(output, input, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::all_gather_single_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  return allgather_into_tensor_coalesced(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::reduce_scatter_single(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  return _reduce_scatter_base(output, input, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::reduce_scatter_single_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  return reduce_scatter_tensor_coalesced(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::all_to_all_single(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
    std::vector<int64_t>& input_splits, const c10d::AllToAllOptions& opts) {
  return alltoall_base(output, input, output_splits, input_splits, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::gather_into_tensor(
    at::Tensor& output, at::Tensor& input, const c10d::GatherOptions& opts) {
  return gather_single(output, input, opts);
}

// Gathers every rank's input into the root's flat output.
c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::gather_single(at::Tensor& output,
                                                                 at::Tensor& input,
                                                                 const c10d::GatherOptions& opts) {
  const OpSite at = impl_->where("gather_single");
  const int root = static_cast<int>(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < size_, at, ": root ", root, " is not a rank of this group");
  const bool is_root = rank_ == root;
  if (is_root) {
    TORCH_CHECK(output.numel() == input.numel() * size_, at, ": the root's output has ",
                output.numel(), " elements, expected input (", input.numel(), ") x ", size_,
                " ranks");
    TORCH_CHECK(output.scalar_type() == input.scalar_type(), at, ": output dtype ",
                output.scalar_type(), " differs from input dtype ", input.scalar_type());
  }
  auto in = std::make_shared<StagedTensor>(input);
  auto out = is_root ? std::make_shared<StagedTensor>(output, /*copy_in=*/false) : nullptr;
  const std::vector<at::Tensor> tensors_of_op =
      is_root ? std::vector<at::Tensor>{input, output} : std::vector<at::Tensor>{input};
  const auto device = device_of(at, {&tensors_of_op});
  return impl_->enqueue(
      {.op = "gather_single",
       .type = c10d::OpType::GATHER,
       .tensors = is_root ? std::vector<at::Tensor>{output} : std::vector<at::Tensor>{},
       .device = device,
       .blocking = is_blocking(opts)},
      [in, out, root](Work&, RoutedComm& comm) {
        const domino_buffer_t send = in->buffer();
        domino_buffer_t recv = out ? out->buffer() : domino_buffer_t{nullptr, 0, send.dtype, -1};
        comm.collective(make_call(topology::Collective::kGather, send, recv, DOMINO_SUM, root));
        if (out) out->publish();
      });
}
#endif

}  // namespace domino
