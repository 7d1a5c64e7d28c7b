// The tensor-parallel ranks a layer shards over, and how the layer talks to them: every
// all-reduce is issued asynchronously and, on a domino group, on the high-priority lane so that
// it never queues behind data-parallel bulk traffic.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/custom_class_detail.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <cstdint>
#include <string>

namespace domino::overlap {

class TensorParallelGroup : public torch::CustomClassHolder {
 public:
  // Any c10d group works (gloo, nccl, domino, ...).
  explicit TensorParallelGroup(c10::intrusive_ptr<c10d::ProcessGroup> group);
  // A bare backend, as a C++ program builds it (for example a domino::ProcessGroupDomino).
  static c10::intrusive_ptr<TensorParallelGroup> over_backend(
      c10::intrusive_ptr<c10d::Backend> backend);
  // Single rank: no communication at all.
  TensorParallelGroup();

  int64_t rank() const { return rank_; }
  int64_t size() const { return size_; }
  std::string describe() const;

  // Starts a sum all-reduce of `tensor` in place; undefined when there is nothing to do. The
  // caller waits on the handle before reading `tensor`.
  c10::intrusive_ptr<c10d::Work> all_reduce_async(at::Tensor& tensor) const;

  // Sequence parallelism's collectives, started on the high lane like all_reduce_async:
  // all-gathers input ([n, ...], contiguous) from every rank into output ([size n, ...]) in rank
  // order; reduce-scatters input ([size n, ...]): output ([n, ...]) gets the sum of this rank's
  // rows. Benchmark mode (communication dropped) copies this rank's part only.
  c10::intrusive_ptr<c10d::Work> all_gather_async(at::Tensor& output,
                                                  const at::Tensor& input) const;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_async(at::Tensor& output,
                                                      const at::Tensor& input) const;

  // Whether the group reduces host tensors too (domino, gloo, a cpu:...,cuda:... group; not a
  // NCCL-only one), so small agreements need not touch the device.
  bool reduces_host_memory() const;

  // Benchmark only: the same compute with every all-reduce dropped (results are wrong).
  void drop_communication_for_benchmark(bool drop) { drop_communication_ = drop; }
  bool communication_dropped() const { return drop_communication_; }

 private:
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  int64_t rank_ = 0;
  int64_t size_ = 1;
  bool drop_communication_ = false;
};

using TensorParallelGroupPtr = c10::intrusive_ptr<TensorParallelGroup>;

// Waits for a handle returned by all_reduce_async, if any.
void wait_for(const c10::intrusive_ptr<c10d::Work>& work);

}  // namespace domino::overlap
