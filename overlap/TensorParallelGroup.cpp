#include "TensorParallelGroup.h"

#include <domino/PriorityGuard.h>
#include <torch/version.h>

#include <exception>

namespace domino::overlap {

TensorParallelGroup::TensorParallelGroup(c10::intrusive_ptr<c10d::ProcessGroup> group)
    : group_(std::move(group)), rank_(group_->getRank()), size_(group_->getSize()) {}

c10::intrusive_ptr<TensorParallelGroup> TensorParallelGroup::over_backend(
    c10::intrusive_ptr<c10d::Backend> backend) {
  auto group = c10::make_intrusive<TensorParallelGroup>();
  group->rank_ = backend->getRank();
  group->size_ = backend->getSize();
  group->backend_ = std::move(backend);
  return group;
}

TensorParallelGroup::TensorParallelGroup() = default;

bool TensorParallelGroup::reduces_host_memory() const {
  if (!group_) return true;  // a bare backend: a domino one, which takes both
  try {
    return group_->getBackend(c10::DeviceType::CPU) != nullptr;
  } catch (const std::exception&) {
    return false;
  }
}

std::string TensorParallelGroup::describe() const {
  std::string name = group_ ? group_->getBackendName() : backend_ ? backend_->getBackendName() : "";
  return "tensor-parallel group (" + (name.empty() ? std::string("single rank") : name) +
         ", rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ")";
}

c10::intrusive_ptr<c10d::Work> TensorParallelGroup::all_reduce_async(at::Tensor& tensor) const {
  if (size_ == 1 || drop_communication_) return {};
  // Tensor-parallel all-reduces sit on the critical path; other backends ignore the guard.
  PriorityGuard lane(Priority::kHigh);
  // A detached alias: the reduction writes the same storage, and autograd (which already treats
  // the sum's backward as the identity) is kept out of the dispatcher's c10d op.
  std::vector<at::Tensor> tensors{tensor.detach()};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::SUM;
  return group_ ? group_->allreduce(tensors, options) : backend_->allreduce(tensors, options);
}

c10::intrusive_ptr<c10d::Work> TensorParallelGroup::all_gather_async(
    at::Tensor& output, const at::Tensor& input) const {
  if (size_ == 1 || drop_communication_) {
    output.narrow(0, rank_ * input.size(0), input.size(0)).copy_(input);
    return {};
  }
  PriorityGuard lane(Priority::kHigh);
  at::Tensor out = output.detach(), in = input.detach();
  c10d::AllgatherOptions options;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 14)
  return group_ ? group_->all_gather_single(out, in, options)
                : backend_->all_gather_single(out, in, options);
#else
  return group_ ? group_->_allgather_base(out, in, options)
                : backend_->_allgather_base(out, in, options);
#endif
}

c10::intrusive_ptr<c10d::Work> TensorParallelGroup::reduce_scatter_async(
    at::Tensor& output, const at::Tensor& input) const {
  if (size_ == 1 || drop_communication_) {
    output.copy_(input.narrow(0, rank_ * output.size(0), output.size(0)));
    return {};
  }
  PriorityGuard lane(Priority::kHigh);
  at::Tensor out = output.detach(), in = input.detach();
  c10d::ReduceScatterOptions options;
  options.reduceOp = c10d::ReduceOp::SUM;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 14)
  return group_ ? group_->reduce_scatter_single(out, in, options)
                : backend_->reduce_scatter_single(out, in, options);
#else
  return group_ ? group_->_reduce_scatter_base(out, in, options)
                : backend_->_reduce_scatter_base(out, in, options);
#endif
}

void wait_for(const c10::intrusive_ptr<c10d::Work>& work) {
  if (work) work->wait();
}

}  // namespace domino::overlap
