#include "Work.h"

#include <ATen/core/ivalue.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <thread>

namespace domino {

Work::Work(int rank, c10d::OpType op, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, op), outputs_(std::move(outputs)) {}

void Work::set_device(c10::Device device, bool blocking_wait, std::chrono::milliseconds timeout) {
  device_ = device;
  blocking_wait_ = blocking_wait;
  device_timeout_ = timeout;
}

void Work::set_device_done(c10::Stream stream, std::shared_ptr<c10::Event> done) {
  std::lock_guard<std::mutex> lock(future_mutex_);
  stream_ = stream;
  done_ = std::move(done);
}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() {
  std::lock_guard<std::mutex> lock(future_mutex_);
  if (!future_) {
    auto type = c10::ListType::create(c10::TensorType::get());
    // A CUDA-aware future: whoever uses its value (then-callbacks, wait) has their stream wait on
    // events recorded on the comm stream at completion, so no host blocks on the device.
    future_ = device_ ? c10::make_intrusive<c10::ivalue::Future>(type, std::vector{*device_})
                      : c10::make_intrusive<c10::ivalue::Future>(type);
    if (finished_ && error_) future_->setError(error_);
    if (finished_ && !error_) {
      std::optional<c10::StreamGuard> on_comm_stream;
      if (stream_) on_comm_stream.emplace(*stream_);
      future_->markCompleted(c10::IValue(outputs_));
    }
  }
  return future_;
}

bool Work::isCompleted() {
  if (!c10d::Work::isCompleted()) return false;
  std::lock_guard<std::mutex> lock(future_mutex_);
  return !done_ || done_->query();
}

bool Work::wait(std::chrono::milliseconds timeout) {
  if (run_now_ && !c10d::Work::isCompleted()) run_now_();
  c10d::Work::wait(timeout);  // host side: raises the work's error
  std::shared_ptr<c10::Event> done;
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    done = done_;
  }
  if (!done || !device_) return true;
  if (!blocking_wait_) {
    // The caller's stream waits for the comm stream; the host goes on at once.
    done->block(c10::impl::VirtualGuardImpl(device_->type()).getStream(*device_));
    return true;
  }
  const auto limit = timeout == kNoTimeout ? device_timeout_ : timeout;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done->query()) {
    if (std::chrono::steady_clock::now() > deadline) {
      C10_THROW_ERROR(DistBackendError,
                      "domino: " + std::string(c10d::opTypeToString(opType_)) + " on " +
                          device_->str() +
                          " was enqueued but did not finish on the device within " +
                          std::to_string(limit.count()) +
                          " ms (DOMINO_BLOCKING_WAIT=1); a peer may have died or issued other "
                          "collectives");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
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
    if (future_) {
      std::optional<c10::StreamGuard> on_comm_stream;
      if (stream_) on_comm_stream.emplace(*stream_);
      future_->markCompleted(c10::IValue(outputs_));
    }
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
