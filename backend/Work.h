// The handle every domino collective returns at once. Waiting, completion, exceptions and the
// future behave as ProcessGroupGloo's do, so DDP comm hooks and async_op code work unchanged.
#pragma once

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace domino {

// Whether a group's device communicators are still usable; shared by its CUDA works.
class DeviceHealth {
 public:
  void fail(std::string why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_.empty()) failure_ = std::move(why);
    failed_ = true;
  }
  // Checked by every CUDA op: a flag, not a locked string copy.
  bool ok() const { return !failed_.load(); }
  std::string failure() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }

 private:
  mutable std::mutex mutex_;
  std::string failure_;
  std::atomic<bool> failed_{false};
};

class Work : public c10d::Work {
 public:
  Work(int rank, c10d::OpType op, std::vector<at::Tensor> outputs);

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;
  int sourceRank() const override;
  // Runs the job on the waiting thread when the lane has not started it (see ProgressLane).
  bool wait(std::chrono::milliseconds timeout) override;

  // Set once at issue: run_now tries to run this work's job on the calling thread; wake makes
  // its lane start it (for a wait with a timeout, which must not run the job itself).
  void set_run_now(std::function<bool()> run_now, std::function<void()> wake) {
    run_now_ = std::move(run_now);
    wake_ = std::move(wake);
  }

  // CUDA works, at issue: the device the outputs live on. Its future is then CUDA-aware, and
  // blocking_wait makes wait() block the host until the device is done (within timeout).
  // health: the group's; a wait on a work whose communicators were aborted raises its reason.
  void set_device(c10::Device device, bool blocking_wait, std::chrono::milliseconds timeout,
                  std::shared_ptr<const DeviceHealth> health);
  // By the lane once the work is enqueued on its comm stream, before complete() (which the lane
  // calls with that stream current): done marks the work's end there.
  void set_device_done(std::shared_ptr<c10::Event> done);
  // Host side finished and, for CUDA works, the device too.
  bool isCompleted() override;
  // wait() would return or raise at once: a host work whose job has ended. Python's binding
  // then keeps the GIL instead of giving it up and taking it back.
  bool waits_for_nothing() const { return !device_ && host_done_.load(std::memory_order_acquire); }
  // Waits like wait(): for CUDA works the caller's current stream waits for this work (the host
  // only with DOMINO_BLOCKING_WAIT=1).
  void synchronize() override;

  // Called once by the progress lane.
  void complete();
  // complete() for a work that ran at issue, before any other thread could hold it: no future
  // to mark and nobody waiting, so no lock and no notification.
  void complete_at_issue();
  // Whether a work that ran at issue ended without error; read by the issuing thread alone.
  bool succeeded_at_issue() const { return !device_ && finished_ && !error_; }
  // A work that succeeded at issue and that nobody else holds, made ready for the next op of the
  // same group that runs at issue: as new, for op over outputs. Spares an op the allocation and
  // c10d::Work's construction, a tenth of a small op's time in libdomino.
  void reuse_at_issue(c10d::OpType op, std::vector<at::Tensor> outputs);
  // Drops what a work that succeeded at issue holds (the caller's tensors) before it waits as a
  // spare.
  void retire_at_issue();
  int rank() const { return rank_; }
  void fail(std::exception_ptr error);
  void set_source_rank(int rank) { source_rank_ = rank; }

 private:
  void wait_on_device(std::chrono::milliseconds timeout);
  void raise_if_aborted() const;
  c10::intrusive_ptr<c10::ivalue::Future> make_future() const;

  std::vector<at::Tensor> outputs_;
  std::atomic<int> source_rank_{-1};
  std::function<bool()> run_now_;
  std::function<void()> wake_;
  // Made on first request: blocking collectives never pay for one.
  std::mutex future_mutex_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  bool finished_ = false;
  std::exception_ptr error_;
  std::optional<c10::Device> device_;
  bool blocking_wait_ = false;
  std::chrono::milliseconds device_timeout_{0};
  std::shared_ptr<c10::Event> done_;
  std::shared_ptr<const DeviceHealth> health_;
  // complete() or fail() has returned: a wait() after it has nothing to run or wait for.
  std::atomic<bool> host_done_{false};
};

}  // namespace domino
