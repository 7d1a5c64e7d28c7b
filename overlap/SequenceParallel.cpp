#include "SequenceParallel.h"

#include <ATen/Functions.h>

#include <algorithm>

namespace domino::overlap {

const at::Tensor& SequenceGather::chunk(size_t k) {
  if (works[k]) {
    works[k]->wait();
    works[k].reset();
  }
  return chunks[k];
}

at::Tensor SequenceGather::place_of(const at::Tensor& whole, size_t k) const {
  int64_t offset = 0;
  for (size_t i = 0; i < k; ++i) offset += rows[i];
  auto shape = whole.sizes().vec();
  const int64_t tp = shape[0] / local_rows();
  shape[0] = local_rows();
  shape.insert(shape.begin(), tp);
  return whole.view(shape).narrow(1, offset, rows[k]);
}

SequenceGather start_sequence_gather(const at::Tensor& local, const TensorParallelGroup& group,
                                     int64_t chunks) {
  SequenceGather gather;
  gather.local = local;
  const auto input = local.detach();
  const int64_t count = std::max<int64_t>(1, std::min<int64_t>(chunks, input.size(0)));
  for (const auto& part : at::tensor_split(input, count, 0)) {
    auto shape = part.sizes().vec();
    shape[0] *= group.size();
    auto whole = at::empty(shape, part.options());
    gather.rows.push_back(part.size(0));
    gather.sent.push_back(part.contiguous());
    gather.works.push_back(group.all_gather_async(whole, gather.sent.back()));
    gather.chunks.push_back(std::move(whole));
  }
  return gather;
}

at::Tensor gather_sequence(const at::Tensor& local, const TensorParallelGroup& group) {
  auto shape = local.sizes().vec();
  shape[0] *= group.size();
  auto whole = at::empty(shape, local.options());
  wait_for(group.all_gather_async(whole, local.detach().contiguous()));
  return whole;
}

void shard_dropout(BatchDropout& dropout, const TransformerConfig& config,
                   const TensorParallelGroup& group) {
  if (config.sequence_parallel && group.size() > 1) {
    dropout.set_sequence_shard(group.rank(), group.size());
  }
}

void sum_gradients_over_group(const std::vector<at::Tensor>& parameters,
                              const TensorParallelGroupPtr& group) {
  if (group->size() == 1) return;
  for (const auto& parameter : parameters) {
    if (!parameter.defined()) continue;
    // A leaf's hook sees the gradient this backward produced for it, all uses summed.
    at::Tensor(parameter).register_hook([group](const at::Tensor& grad) {
      auto summed = grad.contiguous().clone();
      wait_for(group->all_reduce_async(summed));
      return summed;
    });
  }
}

}  // namespace domino::overlap
