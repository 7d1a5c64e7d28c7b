// The c10d entry points of the one-tensor-per-call collectives and of point-to-point: each checks
// its arguments, stages its tensors and issues a job that runs the op over the lane's
// RoutedComm.
#include "DeviceCollectives.h"
#include "MonitoredBarrier.h"
#include "OpChecks.h"
#include "OpIssue.h"
#include "ProcessGroupDominoImpl.h"
#include "SparseAllreduce.h"
#include "TensorBuffer.h"
#include "Work.h"
#include "engine/RoutedComm.h"

namespace domino {

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  const OpSite at = impl_->where("allreduce");
  require_one("allreduce", tensors, at);
  if (tensors[0].is_sparse()) return allreduce_sparse(tensors, opts);
  const Reduction reduction = checked_reduction(opts.reduceOp, tensors[0], at);
  const auto device = device_of(at, {&tensors});
  const domino_redop_t op = reduction.op;
  if (reduction.premultiply) {
    // The scaled copy is made on the lane (on CUDA, on its comm stream), reduced, written back.
    at::Tensor user = tensors[0];
    return impl_->enqueue(
        {.op = "all_reduce",
         .type = c10d::OpType::ALLREDUCE,
         .tensors = tensors,
         .device = device,
         .blocking = is_blocking(opts)},
        [user, reduction](Work&, RoutedComm& comm) {
          reduce_premultiplied(reduction, {user}, /*write_back=*/true, [&](domino_buffer_t& b) {
            comm.collective(make_call(topology::Collective::kAllReduce, b, b, reduction.op));
          });
        });
  }
  StagedTensor staged(tensors[0]);
  return impl_->enqueue(
      {.op = "all_reduce",
       .type = c10d::OpType::ALLREDUCE,
       .tensors = tensors,
       .device = device,
       .blocking = is_blocking(opts),
       .host_only = needs_host(op, tensors[0])},
      [staged = std::move(staged), op](Work&, RoutedComm& comm) mutable {
        domino_buffer_t buffer = staged.buffer();
        comm.collective(make_call(topology::Collective::kAllReduce, buffer, buffer, op));
        staged.publish();
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  const OpSite at = impl_->where("broadcast");
  require_one("broadcast", tensors, at);
  const bool root = opts.rootRank == rank_;
  StagedTensor staged(tensors[0], /*copy_in=*/root);
  const int root_rank = static_cast<int>(opts.rootRank);
  const auto device = device_of(at, {&tensors});
  return impl_->enqueue({.op = "broadcast",
                         .type = c10d::OpType::BROADCAST,
                         .tensors = tensors,
                         .device = device,
                         .blocking = is_blocking(opts)},
                        [staged = std::move(staged), root_rank](Work&, RoutedComm& comm) mutable {
                          domino_buffer_t buffer = staged.buffer();
                          comm.collective(make_call(topology::Collective::kBroadcast, buffer,
                                                    buffer, DOMINO_SUM, root_rank));
                          staged.publish();
                        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  const OpSite at = impl_->where("reduce");
  require_one("reduce", tensors, at);
  const Reduction reduction = checked_reduction(opts.reduceOp, tensors[0], at);
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = root == rank_;
  const auto device = device_of(at, {&tensors});
  if (reduction.premultiply) {
    // Only the root's tensor changes; the others' inputs stay as they were.
    at::Tensor user = tensors[0];
    return impl_->enqueue(
        {.op = "reduce",
         .type = c10d::OpType::REDUCE,
         .tensors = tensors,
         .device = device,
         .blocking = is_blocking(opts)},
        [user, reduction, root, is_root](Work&, RoutedComm& comm) {
          reduce_premultiplied(reduction, {user}, /*write_back=*/is_root, [&](domino_buffer_t& b) {
            comm.collective(make_call(topology::Collective::kReduce, b, b, reduction.op, root));
          });
        });
  }
  StagedTensor staged(tensors[0]);
  const domino_redop_t op = reduction.op;
  return impl_->enqueue(
      {.op = "reduce",
       .type = c10d::OpType::REDUCE,
       .tensors = tensors,
       .device = device,
       .blocking = is_blocking(opts),
       .host_only = needs_host(op, tensors[0])},
      [staged = std::move(staged), op, root, is_root](Work&, RoutedComm& comm) mutable {
        domino_buffer_t buffer = staged.buffer();
        comm.collective(make_call(topology::Collective::kReduce, buffer, buffer, op, root));
        if (is_root) staged.publish();
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const OpSite at = impl_->where("allgather");
  require_one("allgather", inputs, at);
  TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_), at,
              ": expected one list of ", size_, " output tensors");
  require_same(inputs[0], outputs[0], inputs[0].numel(), at, "output");
  auto in = std::make_shared<StagedTensor>(inputs[0]);
  auto out = std::make_shared<StagedList>(outputs[0], /*copy_in=*/false);
  const auto device = device_of(at, {&inputs, &outputs[0]});
  return impl_->enqueue(
      {.op = "all_gather",
       .type = c10d::OpType::ALLGATHER,
       .tensors = Impl::OpTensors(outputs[0], inputs),
       .device = device,
       .blocking = is_blocking(opts)},
      [in, out](Work&, RoutedComm& comm) {
        domino_buffer_t recv = out->buffer();
        comm.collective(make_call(topology::Collective::kAllGather, in->buffer(), recv));
        out->publish();
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  const OpSite at = impl_->where("all_gather_into_tensor");
  TORCH_CHECK(output.numel() == input.numel() * size_, at, ": output has ", output.numel(),
              " elements, expected input (", input.numel(), ") x ", size_, " ranks");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), at, ": output dtype ",
              output.scalar_type(), " differs from input dtype ", input.scalar_type());
  auto in = std::make_shared<StagedTensor>(input);
  auto out = std::make_shared<StagedTensor>(output, /*copy_in=*/false);
  const std::vector<at::Tensor> tensors_of_op{input, output};
  const auto device = device_of(at, {&tensors_of_op});
  return impl_->enqueue(
      {.op = "all_gather_into_tensor",
       .type = c10d::OpType::_ALLGATHER_BASE,
       .tensors = Impl::OpTensors({output}, {input}),
       .device = device,
       .blocking = is_blocking(opts)},
      [in, out](Work&, RoutedComm& comm) {
        domino_buffer_t recv = out->buffer();
        comm.collective(make_call(topology::Collective::kAllGather, in->buffer(), recv));
        out->publish();
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const OpSite at = impl_->where("gather");
  require_one("gather", inputs, at);
  const int root = static_cast<int>(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < size_, at, ": root ", root, " is not a rank of this group");
  std::shared_ptr<StagedList> out;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_), at,
                ": the root needs one list of ", size_, " output tensors");
    require_same(inputs[0], outputs[0], inputs[0].numel(), at, "output");
    out = std::make_shared<StagedList>(outputs[0], /*copy_in=*/false);
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(), at, ": only the root (rank ", root,
                ") may pass output tensors");
  }
  auto in = std::make_shared<StagedTensor>(inputs[0]);
  std::vector<at::Tensor> held = rank_ == root ? outputs[0] : std::vector<at::Tensor>{};
  const auto device = device_of(at, {&inputs, &held});
  return impl_->enqueue({.op = "gather",
                         .type = c10d::OpType::GATHER,
                         .tensors = Impl::OpTensors(held, inputs),
                         .device = device,
                         .blocking = is_blocking(opts)},
                        [in, out, root](Work&, RoutedComm& comm) {
                          domino_buffer_t recv =
                              out ? out->buffer()
                                  : domino_buffer_t{nullptr, 0, in->buffer().dtype, -1};
                          comm.collective(make_call(topology::Collective::kGather, in->buffer(),
                                                    recv, DOMINO_SUM, root));
                          if (out) out->publish();
                        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const OpSite at = impl_->where("scatter");
  require_one("scatter", outputs, at);
  const int root = static_cast<int>(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < size_, at, ": root ", root, " is not a rank of this group");
  std::shared_ptr<StagedList> in;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_), at,
                ": the root needs one list of ", size_, " input tensors");
    require_same(outputs[0], inputs[0], outputs[0].numel(), at, "input");
    in = std::make_shared<StagedList>(inputs[0], /*copy_in=*/true);
  } else {
    TORCH_CHECK(inputs.empty() || inputs[0].empty(), at, ": only the root (rank ", root,
                ") may pass input tensors");
  }
  auto out = std::make_shared<StagedTensor>(outputs[0], /*copy_in=*/false);
  const std::vector<at::Tensor> scattered = in ? inputs[0] : std::vector<at::Tensor>{};
  const auto device = device_of(at, {&outputs, &scattered});
  return impl_->enqueue(
      {.op = "scatter",
       .type = c10d::OpType::SCATTER,
       .tensors = outputs,
       .device = device,
       .blocking = is_blocking(opts)},
      [in, out, root](Work&, RoutedComm& comm) {
        domino_buffer_t recv = out->buffer();
        const domino_buffer_t send =
            in ? in->buffer() : domino_buffer_t{nullptr, 0, recv.dtype, -1};
        comm.collective(make_call(topology::Collective::kScatter, send, recv, DOMINO_SUM, root));
        out->publish();
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const OpSite at = impl_->where("reduce_scatter");
  require_one("reduce_scatter", outputs, at);
  TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_), at,
              ": expected one list of ", size_, " input tensors");
  require_same(outputs[0], inputs[0], outputs[0].numel(), at, "input");
  const Reduction reduction = checked_reduction(opts.reduceOp, outputs[0], at);
  // A premultiplied list is staged on the lane, where its scaled copies are made.
  auto in = reduction.premultiply ? nullptr : std::make_shared<StagedList>(inputs[0], true);
  auto out = std::make_shared<StagedTensor>(outputs[0], /*copy_in=*/false);
  const auto device = device_of(at, {&outputs, &inputs[0]});
  const std::vector<at::Tensor> list = inputs[0];
  return impl_->enqueue({.op = "reduce_scatter",
                         .type = c10d::OpType::REDUCE_SCATTER,
                         .tensors = Impl::OpTensors(outputs, list),
                         .device = device,
                         .blocking = is_blocking(opts),
                         .host_only = needs_host(reduction.op, outputs[0])},
                        [in, out, list, reduction](Work&, RoutedComm& comm) {
                          std::shared_ptr<StagedList> source = in;
                          if (!source) {
                            source = std::make_shared<StagedList>(reduction.premultiplied(list),
                                                                  /*copy_in=*/true);
                          }
                          domino_buffer_t recv = out->buffer();
                          comm.collective(make_call(topology::Collective::kReduceScatter,
                                                    source->buffer(), recv, reduction.op));
                          out->publish();
                        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  const OpSite at = impl_->where("reduce_scatter_tensor");
  TORCH_CHECK(input.numel() == output.numel() * size_, at, ": input has ", input.numel(),
              " elements, expected output (", output.numel(), ") x ", size_, " ranks");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), at, ": output dtype ",
              output.scalar_type(), " differs from input dtype ", input.scalar_type());
  const Reduction reduction = checked_reduction(opts.reduceOp, input, at);
  auto out = std::make_shared<StagedTensor>(output, /*copy_in=*/false);
  const std::vector<at::Tensor> tensors_of_op{input, output};
  const auto device = device_of(at, {&tensors_of_op});
  return impl_->enqueue(
      {.op = "reduce_scatter_tensor",
       .type = c10d::OpType::_REDUCE_SCATTER_BASE,
       .tensors = Impl::OpTensors({output}, {input}),
       .device = device,
       .blocking = is_blocking(opts),
       .host_only = needs_host(reduction.op, input)},
      [input, out, reduction](Work&, RoutedComm& comm) {
        StagedTensor in(reduction.premultiply ? reduction.premultiplied(input) : input);
        domino_buffer_t recv = out->buffer();
        comm.collective(
            make_call(topology::Collective::kReduceScatter, in.buffer(), recv, reduction.op));
        out->publish();
      });
}

namespace {
// Per-peer counts and offsets of an all-to-all, in the transport's units.
struct AlltoallLayout {
  std::vector<uint64_t> send_counts, send_offsets, recv_counts, recv_offsets;

  void scale(size_t units_per_element) {
    for (auto* v : {&send_counts, &send_offsets, &recv_counts, &recv_offsets}) {
      for (auto& x : *v) x *= units_per_element;
    }
  }
  void run(RoutedComm& comm, const domino_buffer_t& send, domino_buffer_t& recv) const {
    domino_call_t call = make_call(topology::Collective::kAllToAll, send, recv);
    call.send_counts = send_counts.data();
    call.send_offsets = send_offsets.data();
    call.recv_counts = recv_counts.data();
    call.recv_offsets = recv_offsets.data();
    comm.collective(call);
  }
};

// One peer per tensor of the list, laid end to end.
void list_layout(const std::vector<at::Tensor>& tensors, std::vector<uint64_t>* counts,
                 std::vector<uint64_t>* offsets) {
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    counts->push_back(static_cast<uint64_t>(t.numel()));
    offsets->push_back(offset);
    offset += static_cast<uint64_t>(t.numel());
  }
}

// Element counts and offsets per peer for a tensor split along dim 0 (equal splits when empty).
void split_layout(const at::Tensor& t, const std::vector<int64_t>& splits, int size,
                  const std::string& where, const char* what, std::vector<uint64_t>* counts,
                  std::vector<uint64_t>* offsets) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const int64_t row_elements = rows == 0 ? 0 : t.numel() / rows;
  std::vector<int64_t> rows_per_peer = splits;
  if (rows_per_peer.empty()) {
    TORCH_CHECK(rows % size == 0, where, ": ", what, " has ", rows, " rows, not divisible by ",
                size, " ranks; pass explicit split sizes");
    rows_per_peer.assign(static_cast<size_t>(size), rows / size);
  }
  TORCH_CHECK(rows_per_peer.size() == static_cast<size_t>(size), where, ": ", rows_per_peer.size(),
              " ", what, " split sizes for ", size, " ranks");
  int64_t sum = 0;
  for (int64_t r : rows_per_peer) {
    TORCH_CHECK(r >= 0, where, ": negative ", what, " split size ", r);
    counts->push_back(static_cast<uint64_t>(r * row_elements));
    offsets->push_back(static_cast<uint64_t>(sum * row_elements));
    sum += r;
  }
  TORCH_CHECK(sum == rows, where, ": ", what, " split sizes add up to ", sum,
              " rows but the tensor has ", rows);
}
}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
    std::vector<int64_t>& input_splits, const c10d::AllToAllOptions& opts) {
  const OpSite at = impl_->where("all_to_all_single");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), at, ": output dtype ",
              output.scalar_type(), " differs from input dtype ", input.scalar_type());
  auto layout = std::make_shared<AlltoallLayout>();
  split_layout(input, input_splits, size_, at, "input", &layout->send_counts,
               &layout->send_offsets);
  split_layout(output, output_splits, size_, at, "output", &layout->recv_counts,
               &layout->recv_offsets);
  layout->scale(transport_units_per_element(input));
  // A separate input buffer even when the caller aliases them: peers read it while we write.
  auto in = std::make_shared<StagedTensor>(input.is_same(output) ? input.clone() : input);
  auto out = std::make_shared<StagedTensor>(output, /*copy_in=*/false);
  const std::vector<at::Tensor> tensors_of_op{input, output};
  const auto device = device_of(at, {&tensors_of_op});
  return impl_->enqueue({.op = "all_to_all_single",
                         .type = c10d::OpType::ALLTOALL_BASE,
                         .tensors = Impl::OpTensors({output}, {input}),
                         .device = device,
                         .blocking = is_blocking(opts)},
                        [in, out, layout](Work&, RoutedComm& comm) {
                          domino_buffer_t recv = out->buffer();
                          layout->run(comm, in->buffer(), recv);
                          out->publish();
                        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions& opts) {
  const OpSite at = impl_->where("all_to_all");
  TORCH_CHECK(
      outputs.size() == static_cast<size_t>(size_) && inputs.size() == static_cast<size_t>(size_),
      at, ": expected ", size_, " input and output tensors, got ", inputs.size(), " and ",
      outputs.size());
  require_same(inputs[0], inputs, -1, at, "input");
  require_same(inputs[0], outputs, -1, at, "output");
  auto layout = std::make_shared<AlltoallLayout>();
  list_layout(inputs, &layout->send_counts, &layout->send_offsets);
  list_layout(outputs, &layout->recv_counts, &layout->recv_offsets);
  layout->scale(transport_units_per_element(inputs[0]));
  auto in = std::make_shared<StagedList>(inputs, /*copy_in=*/true);
  auto out = std::make_shared<StagedList>(outputs, /*copy_in=*/false);
  const auto device = device_of(at, {&inputs, &outputs});
  return impl_->enqueue({.op = "all_to_all",
                         .type = c10d::OpType::ALLTOALL,
                         .tensors = Impl::OpTensors(outputs, inputs),
                         .device = device,
                         .blocking = is_blocking(opts)},
                        [in, out, layout](Work&, RoutedComm& comm) {
                          domino_buffer_t recv = out->buffer();
                          layout->run(comm, in->buffer(), recv);
                          out->publish();
                        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::send(std::vector<at::Tensor>& tensors,
                                                        int dst_rank, int tag) {
  const OpSite at = impl_->where("send");
  require_one("send", tensors, at);
  TORCH_CHECK(dst_rank >= 0 && dst_rank < size_ && dst_rank != rank_, at, ": destination ",
              dst_rank, " is not another rank of this group of ", size_);
  StagedTensor staged(tensors[0]);
  const auto device = device_of(at, {&tensors});
  return impl_->enqueue({.op = "send",
                         .type = c10d::OpType::SEND,
                         .tensors = tensors,
                         .device = device,
                         .route = Route::kSend,
                         .peer = dst_rank},
                        [impl = impl_.get(), rank = rank_, staged, dst_rank, tag, device](
                            Work&, RoutedComm& comm) mutable {
                          const DeviceSession* session = DeviceSession::current();
                          if (session != nullptr && !session->staged) {
                            std::unique_lock<std::mutex> hold;
                            impl->device_
                                ->peer_communicator(dst_rank, /*sending=*/true, *device,
                                                    session->stream, &hold)
                                .send(staged.buffer(), rank < dst_rank ? 1 : 0, tag);
                            return;
                          }
                          comm.send(staged.buffer(), dst_rank, tag);
                        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::recv(std::vector<at::Tensor>& tensors,
                                                        int src_rank, int tag) {
  const OpSite at = impl_->where("recv");
  require_one("recv", tensors, at);
  TORCH_CHECK(src_rank >= 0 && src_rank < size_ && src_rank != rank_, at, ": source ", src_rank,
              " is not another rank of this group of ", size_);
  StagedTensor staged(tensors[0], /*copy_in=*/false);
  const auto device = device_of(at, {&tensors});
  return impl_->enqueue({.op = "recv",
                         .type = c10d::OpType::RECV,
                         .tensors = tensors,
                         .device = device,
                         .route = Route::kRecv,
                         .peer = src_rank},
                        [impl = impl_.get(), rank = rank_, staged, src_rank, tag, device](
                            Work& work, RoutedComm& comm) mutable {
                          domino_buffer_t buffer = staged.buffer();
                          const DeviceSession* session = DeviceSession::current();
                          if (session != nullptr && !session->staged) {
                            std::unique_lock<std::mutex> hold;
                            impl->device_
                                ->peer_communicator(src_rank, /*sending=*/false, *device,
                                                    session->stream, &hold)
                                .recv(buffer, rank < src_rank ? 1 : 0, tag);
                            work.set_source_rank(src_rank);
                          } else {
                            work.set_source_rank(comm.recv(buffer, src_rank, tag));
                          }
                          staged.publish();
                        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                 int tag) {
  const OpSite at = impl_->where("recv from any source");
  require_one("recv", tensors, at);
  TORCH_CHECK(size_ > 1, at, ": a group of one rank has nobody to receive from");
  StagedTensor staged(tensors[0], /*copy_in=*/false);
  const auto device = device_of(at, {&tensors});
  // The sender cannot know whom NCCL would pair it with: CUDA any-source receives need every
  // CUDA send of the group to go through host memory.
  TORCH_CHECK(!device || !impl_->has_device_transport() ||
                  impl_->settings_.gpu_transport == GpuTransport::kStaged,
              at, ": receiving from any source into a ", tensors[0].device(),
              " tensor is not possible over NCCL; name the source rank, receive into a CPU "
              "tensor, or set DOMINO_GPU_TRANSPORT=staged");
  return impl_->enqueue({.op = "recv",
                         .type = c10d::OpType::RECVANYSOURCE,
                         .tensors = tensors,
                         .device = device,
                         .host_only = true,
                         .route = Route::kRecv},
                        [staged = std::move(staged), tag](Work& work, RoutedComm& comm) mutable {
                          domino_buffer_t buffer = staged.buffer();
                          work.set_source_rank(comm.recv(buffer, -1, tag));
                          staged.publish();
                        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::barrier(const c10d::BarrierOptions& opts) {
  return impl_->enqueue({.op = "barrier",
                         .type = c10d::OpType::BARRIER,
                         .tensors = {},
                         .blocking = is_blocking(opts)},
                        [](Work&, RoutedComm& comm) {
                          domino_buffer_t none{nullptr, 0, DOMINO_UINT8, -1};
                          comm.collective(make_call(topology::Collective::kBarrier, none, none));
                        });
}

// Gloo's semantics: rank 0 names the ranks that did not arrive within opts.timeout (all of them
// with waitAllRanks), the others raise once rank 0 reports a failure.
void ProcessGroupDomino::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  Impl& group = *impl_;
  if (group.aborted_.load()) {
    C10_THROW_ERROR(DistBackendError, group.aborted_message("monitored_barrier"));
  }
  const std::chrono::milliseconds budget =
      opts.timeout == c10d::kUnsetTimeout ? group.timeout() : opts.timeout;
  // The others wait for rank 0's verdict as long as rank 0 may take, and the group timeout at
  // least, as Gloo's do.
  monitored_barrier(*group.store_, MonitoredBarrierCall{rank_, size_, group.monitored_barriers_++,
                                                        budget, std::max(budget, group.timeout()),
                                                        waitAllRanks, group.label()});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::allreduce_sparse(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  const OpSite at = impl_->where("all_reduce (sparse)");
  require_one("allreduce", tensors, at);
  TORCH_CHECK(tensors[0].is_sparse(), at, ": the tensor has layout ", tensors[0].layout(),
              "; allreduce_sparse takes sparse COO tensors");
  TORCH_CHECK(opts.reduceOp == c10d::ReduceOp::SUM, at, ": sparse tensors reduce with SUM only, ",
              "not reduce op ", static_cast<int>(opts.reduceOp.op_), " (as with Gloo)");
  TORCH_CHECK(tensors[0].is_cpu(), at, ": sparse tensors on ", tensors[0].device(),
              " are not supported; all-reduce a CPU copy (tensor.cpu()) and move the result back");
  at::Tensor tensor = tensors[0];
  return impl_->enqueue({.op = "all_reduce_sparse",
                         .type = c10d::OpType::ALLREDUCE,
                         .tensors = tensors,
                         .blocking = is_blocking(opts)},
                        [rank = rank_, size = size_, tensor, at](Work&, RoutedComm& comm) mutable {
                          allreduce_sparse_sum(comm, tensor, rank, size, at);
                        });
}

}  // namespace domino
