#include "PendingSum.h"

#include <ATen/Functions.h>

#include "TensorParallelGroup.h"

namespace domino::overlap {

PendingSum::PendingSum(std::vector<at::Tensor> chunks,
                       std::vector<c10::intrusive_ptr<c10d::Work>> works, at::Tensor bias)
    : chunks_(std::move(chunks)), works_(std::move(works)), bias_(std::move(bias)) {}

at::Tensor PendingSum::resolve() {
  if (resolved_.defined()) return resolved_;
  for (auto& work : works_) wait_for(work);
  works_.clear();
  auto sum = chunks_.size() == 1 ? chunks_[0] : at::cat(chunks_, -1);
  resolved_ = bias_.defined() ? sum + bias_ : sum;
  return resolved_;
}

}  // namespace domino::overlap
