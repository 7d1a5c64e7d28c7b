// The split-rail all-reduce in a pipeline (host memory): the message goes in chunks, each through
// the three steps (reduce-scatter inside the host, all-reduce of this rank's slice along the
// rail, all-gather inside the host). The rail's steps run in order on a thread of their own, so
// while the link carries chunk c, the calling thread reduce-scatters chunk c+1 and all-gathers
// chunk c-1 through shared memory, and the link never waits for the host steps. Every rank
// issues the same steps in the same order on each communicator. Torch-free.
#pragma once

#include <atomic>
#include <cstddef>
#include <future>
#include <memory>

#include "ProgressLane.h"
#include "plugins/registry/Communicator.h"

namespace domino {

class RailPipeline {
 public:
  // rail_thread: where the rail's thread runs (the lane's own placement).
  RailPipeline(Communicator& local, Communicator& rail, int local_size,
               const ThreadPlacement& rail_thread);

  // In place over data (host memory, count a multiple of local_size, op already a sum for AVG)
  // in `chunks` chunks of whole slices, the last one shorter where they do not divide; slices:
  // scratch of count / local_size elements.
  void allreduce(const domino_buffer_t& data, void* slices, size_t chunks, domino_redop_t op);

 private:
  std::future<void> post_rail(const domino_buffer_t& slice, domino_redop_t op);

  Communicator& local_;
  Communicator& rail_;
  int local_size_;
  // Set once a rail step failed or the caller gave up: later rail steps are skipped, not run.
  std::shared_ptr<std::atomic<bool>> failed_ = std::make_shared<std::atomic<bool>>(false);
  ProgressLane rail_thread_;
};

}  // namespace domino
