#include "PendingSum.h"

#include <ATen/Functions.h>

#include "TensorParallelGroup.h"

namespace domino::overlap {

PendingSum::PendingSum(std::vector<at::Tensor> chunks,
                       std::vector<c10::intrusive_ptr<c10d::Work>> works, at::Tensor bias)
    : chunks_(std::move(chunks)), works_(std::move(works)), bias_(std::move(bias)) {}

at::Tensor PendingSum::chunk(int64_t k) {
  TORCH_CHECK_INDEX(k >= 0 && k < chunks(), "PendingSum: chunk ", k, " of ", chunks());
  const auto index = static_cast<size_t>(k);
  if (works_.size() > index && works_[index]) {
    wait_for(works_[index]);
    works_[index].reset();
  }
  if (!bias_.defined()) return chunks_[index];
  const int64_t width = chunks_[index].size(-1);
  return chunks_[index] + bias_.narrow(0, k * width, width);
}

at::Tensor PendingSum::resolve() {
  if (resolved_.defined()) return resolved_;
  for (auto& work : works_) {
    if (work) wait_for(work);
  }
  works_.clear();
  auto sum = chunks_.size() == 1 ? chunks_[0] : at::cat(chunks_, -1);
  resolved_ = bias_.defined() ? sum + bias_ : sum;
  return resolved_;
}

}  // namespace domino::overlap
