#include "Work.h"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <optional>
#include <thread>

namespace domino {

Work::Work(int rank, c10d::OpType op, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, op), outputs_(std::move(outputs)) {}

void Work::set_device(c10::Device device, bool blocking_wait, std::chrono::milliseconds timeout,
                      std::shared_ptr<const DeviceHealth> health) {
  device_ = device;
  blocking_wait_ = blocking_wait;
  device_timeout_ = timeout;
  health_ = std::move(health);
}

void Work::set_device_done(std::shared_ptr<c10::Event> done) {
  std::lock_guard<std::mutex> lock(future_mutex_);
  done_ = std::move(done);
}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() {
  c10::intrusive_ptr<c10::ivalue::Future> future;
  bool finished;
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    if (future_) return future_;
    future_ = make_future();
    future = future_;
    finished = finished_;
    error = error_;
  }
  // Completed outside the lock: completion runs then-callbacks, which may need the GIL held by
  // a thread waiting for this lock. (A finished CUDA work always has its future already.)
  if (finished && error) future->setError(error);
  if (finished && !error) future->markCompleted(c10::IValue(outputs_));
  return future;
}

c10::intrusive_ptr<c10::ivalue::Future> Work::make_future() const {
  auto type = c10::ListType::create(c10::TensorType::get());
  // A CUDA-aware future: whoever uses its value (then-callbacks, wait) has their stream wait on
  // events recorded on the comm stream at completion, so no host blocks on the device.
  return device_ ? c10::make_intrusive<c10::ivalue::Future>(type, std::vector{*device_})
                 : c10::make_intrusive<c10::ivalue::Future>(type);
}

bool Work::isCompleted() {
  if (!c10d::Work::isCompleted()) return false;
  std::lock_guard<std::mutex> lock(future_mutex_);
  return !done_ || done_->query();
}

bool Work::wait(std::chrono::milliseconds timeout) {
  // A host work that ran at issue (a blocking op, see OpIssue.h): the outcome alone is left.
  if (waits_for_nothing()) {
    if (exception_) std::rethrow_exception(exception_);
    return true;
  }
  // A profiler shows where a thread waits for communication: the time a step is exposed to it.
  std::optional<at::RecordFunction> waiting;
  if (at::hasCallbacks() && !c10d::Work::isCompleted()) {
    waiting.emplace(at::RecordScope::USER_SCOPE);
    if (waiting->isActive()) waiting->before("domino:wait");
  }
  if (!c10d::Work::isCompleted()) {
    // Running the job here would ignore a timeout: a bounded wait has the lane run it.
    if (timeout == kNoTimeout) {
      if (run_now_) run_now_();
    } else if (wake_) {
      wake_();
    }
  }
  {
    // The host side, as c10d::Work::wait does it, but without its synchronize() under the lock:
    // the device part below honours this call's timeout and holds no lock.
    std::unique_lock<std::mutex> lock(mutex_);
    auto finished = [this] { return completed_; };
    if (timeout == kNoTimeout) {
      cv_.wait(lock, finished);
    } else if (!cv_.wait_for(lock, timeout, finished)) {
      C10_THROW_ERROR(DistBackendError, "domino: " + std::string(c10d::opTypeToString(opType_)) +
                                            " did not finish within wait()'s timeout of " +
                                            std::to_string(timeout.count()) + " ms");
    }
    if (exception_) std::rethrow_exception(exception_);
  }
  wait_on_device(timeout);
  return true;
}

void Work::synchronize() {
  // Ordering the caller's stream needs the work to have been enqueued first.
  wait(kNoTimeout);
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
    raise_if_aborted();
    return;
  }
  const auto limit = timeout == kNoTimeout ? device_timeout_ : timeout;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done->query()) {
    raise_if_aborted();
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
  raise_if_aborted();
}

void Work::raise_if_aborted() const {
  // Aborted communicators end their kernels early: the event completes, the data is not right.
  if (health_ && !health_->ok()) C10_THROW_ERROR(DistBackendError, health_->failure());
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
    // A CUDA work's future is made now, on the comm stream (the lane's current stream), so its
    // events mark exactly this work's end even if asked for much later.
    if (!future_ && device_) future_ = make_future();
    future = future_;
  }
  if (future) future->markCompleted(c10::IValue(outputs_));
  finish();
  host_done_.store(true, std::memory_order_release);
}

void Work::complete_at_issue() {
  finished_ = true;
  completed_ = true;  // c10d::Work's own flag, as finish() sets it
  host_done_.store(true, std::memory_order_release);
}

void Work::reuse_at_issue(c10d::OpType op, std::vector<at::Tensor> outputs) {
  opType_ = op;
  outputs_ = std::move(outputs);
  source_rank_.store(-1, std::memory_order_relaxed);
  finished_ = false;
  completed_ = false;
  host_done_.store(false, std::memory_order_relaxed);
}

void Work::retire_at_issue() {
  outputs_.clear();
  future_.reset();  // the body may have asked for one
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
  host_done_.store(true, std::memory_order_release);
}

}  // namespace domino
