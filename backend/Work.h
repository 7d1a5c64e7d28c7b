// The handle every domino collective returns at once. Waiting, completion, exceptions and the
// future behave as ProcessGroupGloo's do, so DDP comm hooks and async_op code work unchanged.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

namespace domino {

class Work : public c10d::Work {
 public:
  Work(int rank, c10d::OpType op, std::vector<at::Tensor> outputs);

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;
  int sourceRank() const override;
  // Runs the job on the waiting thread when the lane has not started it (see ProgressLane).
  bool wait(std::chrono::milliseconds timeout) override;

  // Set once at issue: tries to run this work's job on the calling thread.
  void set_run_now(std::function<bool()> run_now) { run_now_ = std::move(run_now); }

  // Called once by the progress lane.
  void complete();
  void fail(std::exception_ptr error);
  void set_source_rank(int rank) { source_rank_ = rank; }

 private:
  std::vector<at::Tensor> outputs_;
  std::atomic<int> source_rank_{-1};
  std::function<bool()> run_now_;
  // Made on first request: blocking collectives never pay for one.
  std::mutex future_mutex_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  bool finished_ = false;
  std::exception_ptr error_;
};

}  // namespace domino
