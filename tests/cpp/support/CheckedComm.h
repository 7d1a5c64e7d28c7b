// The registry's Communicator as the shared collective checks (CollectiveChecks.h) call it.
#pragma once

#include "plugins/registry/Communicator.h"

namespace domino::testing {

// The registry's Communicator takes outputs by reference; the shared checks pass temporaries.
struct CheckedComm {
  Communicator& comm;
  void allreduce(domino_buffer_t s, domino_buffer_t r, domino_redop_t op) {
    comm.allreduce(s, r, op);
  }
  void reduce(domino_buffer_t s, domino_buffer_t r, domino_redop_t op, int root) {
    comm.reduce(s, r, op, root);
  }
  void broadcast(domino_buffer_t b, int root) { comm.broadcast(b, root); }
  void allgather(domino_buffer_t s, domino_buffer_t r) { comm.allgather(s, r); }
  void gather(domino_buffer_t s, domino_buffer_t r, int root) { comm.gather(s, r, root); }
  void scatter(domino_buffer_t s, domino_buffer_t r, int root) { comm.scatter(s, r, root); }
  void reduce_scatter(domino_buffer_t s, domino_buffer_t r, domino_redop_t op) {
    comm.reduce_scatter(s, r, op);
  }
  void alltoall(domino_buffer_t s, const uint64_t* sc, const uint64_t* so, domino_buffer_t r,
                const uint64_t* rc, const uint64_t* ro) {
    comm.alltoall(s, sc, so, r, rc, ro);
  }
  void barrier() { comm.barrier(); }
};

}  // namespace domino::testing
