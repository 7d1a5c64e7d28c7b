// A communicator that takes one call descriptor (the registry's Communicator, RoutedComm, a
// transport's communicator) as the shared collective checks (CollectiveChecks.h) call it: one
// method per op, test-side only.
#pragma once

#include "plugins/registry/Communicator.h"

namespace domino::testing {

// The descriptor points at the buffers; the shared checks pass temporaries.
template <class Comm>
struct CheckedComm {
  Comm& comm;
  void run(topology::Collective op, const domino_buffer_t& s, domino_buffer_t r,
           domino_redop_t redop = DOMINO_SUM, int root = -1) {
    issue(make_call(op, s, r, redop, root));
  }
  // A transport's communicator (TransportSurface.h) takes the algorithm too: none, its own.
  void issue(const domino_call_t& k) {
    if constexpr (requires { comm.collective(k); }) {
      comm.collective(k);
    } else {
      comm.collective(k, nullptr);
    }
  }
  void allreduce(domino_buffer_t s, domino_buffer_t r, domino_redop_t op) {
    run(topology::Collective::kAllReduce, s, r, op);
  }
  void reduce(domino_buffer_t s, domino_buffer_t r, domino_redop_t op, int root) {
    run(topology::Collective::kReduce, s, r, op, root);
  }
  void broadcast(domino_buffer_t b, int root) {
    run(topology::Collective::kBroadcast, b, b, DOMINO_SUM, root);
  }
  void allgather(domino_buffer_t s, domino_buffer_t r) {
    run(topology::Collective::kAllGather, s, r);
  }
  void gather(domino_buffer_t s, domino_buffer_t r, int root) {
    run(topology::Collective::kGather, s, r, DOMINO_SUM, root);
  }
  void scatter(domino_buffer_t s, domino_buffer_t r, int root) {
    run(topology::Collective::kScatter, s, r, DOMINO_SUM, root);
  }
  void reduce_scatter(domino_buffer_t s, domino_buffer_t r, domino_redop_t op) {
    run(topology::Collective::kReduceScatter, s, r, op);
  }
  void alltoall(domino_buffer_t s, const uint64_t* sc, const uint64_t* so, domino_buffer_t r,
                const uint64_t* rc, const uint64_t* ro) {
    domino_call_t call = make_call(topology::Collective::kAllToAll, s, r);
    call.send_counts = sc;
    call.send_offsets = so;
    call.recv_counts = rc;
    call.recv_offsets = ro;
    issue(call);
  }
  void barrier() {
    domino_buffer_t none{nullptr, 0, DOMINO_UINT8, -1};
    run(topology::Collective::kBarrier, none, none);
  }
};
template <class Comm>
CheckedComm(Comm&) -> CheckedComm<Comm>;

}  // namespace domino::testing
