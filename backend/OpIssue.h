// How an op goes from its c10d entry point to the lane that runs it, for the files that issue
// ops: a blocking op on host memory whose lane is idle runs at once on the caller's thread, with
// no job allocated and no thread woken; any other op is queued as a job on its lane.
#pragma once

#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "DeviceCollectives.h"
#include "HandleScope.h"
#include "ProcessGroupDominoImpl.h"
#include "Work.h"
#include "engine/ProgressLane.h"

namespace domino {

// What a profiler on the caller's thread needs to see an op on the lane: its RecordFunction
// callbacks and its debug info (where the profiler keeps its state); nothing else of the
// caller's thread-local state reaches the lane.
struct ProfilerContext {
  at::RecordFunctionTLS callbacks;
  std::shared_ptr<c10::ThreadLocalDebugInfo> debug_info;
};

struct ProcessGroupDomino::Impl::IssuedOp {
  const char* op;
  c10::intrusive_ptr<Work> work;
  ProgressLane* lane;
  int lane_index;
  bool counted;       // a collective (numbered and counted per lane), not a send or receive
  bool blocking;      // the caller waits at once
  uint64_t number;    // collective_seq or p2p_seq, as the Flight Recorder numbers it
  uint64_t recorded;  // its Flight Recorder entry (0: none)
  std::chrono::milliseconds timeout;
  std::optional<DeviceCollectives::Issue> on_device;
  std::optional<ProfilerContext> profiler;
  std::vector<at::Tensor> inputs;  // for the profiler's event only
  bool at_issue = false;           // runs inside enqueue: its Work is nobody else's yet
  // A blocking op on host memory, not profiled (a profiled op runs on the lane, where its events
  // say it runs): it runs at issue when its lane is idle, on the thread's spare Work.
  bool may_run_here = false;
};

template <class Body>
c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::Impl::enqueue(OpSpec spec, Body body) {
  IssuedOp issued = issue(spec);
  const bool ran_here = issued.may_run_here && issued.lane->run_if_idle([&] {
    issued.at_issue = true;
    run_issued(issued, body);
  });
  c10::intrusive_ptr<Work> work = issued.work;
  if (ran_here) {
    issued.work.reset();
  } else {
    submit_issued(std::move(issued), std::move(body));
  }
  HandleScope::record(work);
  // A blocking op that ended here without error leaves nothing to wait for, and c10d's callers
  // skip wait() when handed no handle ("the backend has sync'ed at CPP level",
  // distributed_c10d.py): the handle's trip through Python took 0.45 us of a small op's 6.5.
  // torch.compile's in-flight tracking (register_work) takes a handle for every op.
  if (ran_here && work->succeeded_at_issue() && !c10d::allow_inflight_collective_as_graph_input()) {
    keep_spare(std::move(work));
    return {};
  }
  return work;
}

}  // namespace domino
