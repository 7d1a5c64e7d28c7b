#include "Work.h"

#include <ATen/core/ivalue.h>

namespace domino {

Work::Work(int rank, c10d::OpType op, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, op), outputs_(std::move(outputs)) {}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() {
  std::lock_guard<std::mutex> lock(future_mutex_);
  if (!future_) {
    future_ =
        c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
    if (finished_ && error_) future_->setError(error_);
    if (finished_ && !error_) future_->markCompleted(c10::IValue(outputs_));
  }
  return future_;
}

bool Work::wait(std::chrono::milliseconds timeout) {
  if (run_now_ && !isCompleted()) run_now_();
  return c10d::Work::wait(timeout);
}

std::vector<at::Tensor> Work::result() {
  return outputs_;
}

int Work::sourceRank() const {
  TORCH_CHECK(source_rank_ >= 0,
              "domino: sourceRank() is only defined for a completed recv from any source");
  return source_rank_;
}

void Work::complete() {
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    finished_ = true;
    if (future_) future_->markCompleted(c10::IValue(outputs_));
  }
  finish();
}

void Work::fail(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    finished_ = true;
    error_ = error;
    if (future_) future_->setError(error);
  }
  finish(error);
}

}  // namespace domino
