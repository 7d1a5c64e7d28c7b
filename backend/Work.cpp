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
  c10::intrusive_ptr<c10::ivalue::Future> future;
  bool finished;
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    if (future_) return future_;
    auto type = c10::ListType::create(c10::TensorType::get());
    // A CUDA-aware future: whoever uses its value (then-callbacks, wait) has their stream wait on
    // events recorded where the work ended, so no host blocks on the device.
    future_ = device_ ? c10::make_intrusive<c10::ivalue::Future>(type, std::vector{*device_})
                      : c10::make_intrusive<c10::ivalue::Future>(type);
    future = future_;
    finished = finished_;
    error = error_;
  }
  // Completed outside the lock: completion runs then-callbacks, which may need the GIL held by
  // a thread waiting for this lock.
  if (finished && error) future->setError(error);
  if (finished && !error) complete_future(*future, /*late=*/true);
  return future;
}

void Work::complete_future(c10::ivalue::Future& future, bool late) {
  if (!stream_ || !done_) {
    future.markCompleted(c10::IValue(outputs_));
    return;
  }
  // The future records its events on the current stream. At completion that is the comm stream
  // itself; later, a side stream that waits for exactly this work's end, not for whatever the
  // comm stream has queued since.
  c10::Stream on = *stream_;
  if (late) {
    on = c10::impl::VirtualGuardImpl(stream_->device_type())
             .getStreamFromGlobalPool(stream_->device(), /*isHighPriority=*/false);
    done_->block(on);
  }
  c10::StreamGuard guard(on);
  future.markCompleted(c10::IValue(outputs_));
}

bool Work::isCompleted() {
  if (!c10d::Work::isCompleted()) return false;
  std::lock_guard<std::mutex> lock(future_mutex_);
  return !done_ || done_->query();
}

bool Work::wait(std::chrono::milliseconds timeout) {
  if (run_now_ && !c10d::Work::isCompleted()) run_now_();
  c10d::Work::wait(timeout);  // host side: raises the work's error
  wait_on_device(timeout);
  return true;
}

void Work::synchronize() {
  wait_on_device(kNoTimeout);
}

void Work::wait_on_device(std::chrono::milliseconds timeout) {
  std::shared_ptr<c10::Event> done;
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    done = done_;
  }
  if (!done || !device_) return;
  if (!blocking_wait_) {
    // The caller's stream waits for the comm stream; the host goes on at once.
    done->block(c10::impl::VirtualGuardImpl(device_->type()).getStream(*device_));
    return;
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
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    finished_ = true;
    future = future_;
  }
  if (future) complete_future(*future, /*late=*/false);
  finish();
}

void Work::fail(std::exception_ptr error) {
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    finished_ = true;
    error_ = error;
    future = future_;
  }
  if (future) future->setError(error);
  finish(error);
}

}  // namespace domino
