// monitored_barrier with Gloo's semantics, over the group's c10d store: rank 0 waits for every
// other rank's arrival key and names those that did not arrive in time; the others wait for rank
// 0's verdict. The store, not the lanes, carries it, so a rank stuck in a collective on a lane
// cannot hold it up, and a missing rank is told apart from a slow transport.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace domino {

struct MonitoredBarrierCall {
  int rank;
  int size;
  uint64_t sequence;                       // this group's count of monitored barriers so far
  std::chrono::milliseconds timeout;       // rank 0's budget for the whole barrier
  std::chrono::milliseconds verdict_wait;  // how long other ranks wait for rank 0
  bool wait_all_ranks;
  std::string label;  // "group 'x' (rank r of n)", for messages
};

// Returns when every rank arrived; throws c10::DistBackendError otherwise, worded as Gloo's.
void monitored_barrier(c10d::Store& store, const MonitoredBarrierCall& call);

}  // namespace domino
