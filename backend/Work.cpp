#include "Work.h"

#include <ATen/core/ivalue.h>

namespace domino {

Work::Work(int rank, c10d::OpType op, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, op),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()))) {}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() { return future_; }

std::vector<at::Tensor> Work::result() { return outputs_; }

int Work::sourceRank() const {
  TORCH_CHECK(source_rank_ >= 0, "domino: sourceRank() is only defined for a completed recv from any source");
  return source_rank_;
}

void Work::complete() {
  future_->markCompleted(c10::IValue(outputs_));
  finish();
}

void Work::fail(std::exception_ptr error) {
  future_->setError(error);
  finish(error);
}

}  // namespace domino
