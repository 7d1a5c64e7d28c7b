// The split-rail plans in a pipeline (host memory): the message goes in chunks, each through a
// step inside the host, a step along the rail, and another inside the host (either host step may
// be empty). The rail's steps run in order on a thread of their own, so while the link carries
// chunk c, the calling thread does chunk c+1's first host step and chunk c-1's last through
// shared memory, and the link never waits for the host. Every rank issues the same steps in the
// same order on each communicator, whatever the timing. Torch-free.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <future>

#include "ProgressLane.h"
#include "plugins/registry/Communicator.h"

namespace domino {

class RailPipeline {
 public:
  // rail_thread: where the rail's thread runs (the lane's own placement).
  RailPipeline(Communicator& rail, const ThreadPlacement& rail_thread);

  using HostStep = std::function<void(size_t chunk)>;
  using RailStep = std::function<void(size_t chunk, Communicator& rail)>;
  // Runs before(c), rail(c), after(c) for every chunk c < chunks, overlapped as above. Returns
  // once every step has run; the first error thrown by any step is rethrown, after every rail
  // step already started has finished (the steps' buffers outlive them) and the rest skipped.
  void run(size_t chunks, const HostStep& before, const RailStep& rail, const HostStep& after);

 private:
  std::future<void> post(size_t chunk, const RailStep& rail);

  Communicator& rail_;
  // Set once a rail step failed or the caller gave up: later rail steps are skipped, not run.
  std::atomic<bool> failed_{false};
  ProgressLane rail_thread_;
};

}  // namespace domino
