// Shared memory's "segment" path, for every op: the data goes through the slots, pipelined in
// chunks of one slot. A reduce to one root splits its rounds as the all-reduce paths do: whole
// in direct's regime (topology/ShmCosts.h), by slices above it.
#include "ShmAlgorithms.h"
#include "ShmCommunicator.h"
#include "topology/ShmCosts.h"

namespace domino::shm {

namespace {
using topology::Collective;
template <Collective>
struct Segment;
}  // namespace

template <>
void run_path<Segment<Collective::kAllGather>>(ShmCommunicator& comm, const domino_call_t& call) {
  const OpDescriptor mine = comm.start_allgather(call);
  comm.collect(Collective::kAllGather, mine, *call.send, *call.recv, -1);
}

template <>
void run_path<Segment<Collective::kReduceScatter>>(ShmCommunicator& comm,
                                                   const domino_call_t& call) {
  comm.reduce_scatter_rounds(comm.start_reduce_scatter(call), call);
}

template <>
void run_path<Segment<Collective::kBroadcast>>(ShmCommunicator& comm, const domino_call_t& call) {
  comm.broadcast(*call.recv, call.root);
}

template <>
void run_path<Segment<Collective::kReduce>>(ShmCommunicator& comm, const domino_call_t& call) {
  comm.check_root("reduce", call.root);
  const OpDescriptor mine = comm.start_reduce(Collective::kReduce, call, call.root);
  comm.reduce_rounds(Collective::kReduce, mine, call, call.root, topology::kShmDirectMaxBytes);
}

template <>
void run_path<Segment<Collective::kGather>>(ShmCommunicator& comm, const domino_call_t& call) {
  comm.gather(*call.send, *call.recv, call.root);
}

template <>
void run_path<Segment<Collective::kScatter>>(ShmCommunicator& comm, const domino_call_t& call) {
  comm.scatter(*call.send, *call.recv, call.root);
}

template <>
void run_path<Segment<Collective::kAllToAll>>(ShmCommunicator& comm, const domino_call_t& call) {
  comm.alltoall(call);
}

template <>
void run_path<Segment<Collective::kBarrier>>(ShmCommunicator& comm, const domino_call_t&) {
  comm.barrier();
}

namespace {
template <Collective op>
bool add(topology::Seconds seconds) {
  return register_shm_algorithm({"segment",
                                 "through the shared segment's slots, pipelined in chunks",
                                 {topology::collective_name(op)},
                                 topology::AlgorithmHome::kShm,
                                 seconds},
                                run_path<Segment<op>>);
}
const bool registered = add<Collective::kAllGather>(topology::shm_segment_blocks_seconds) &&
                        add<Collective::kReduceScatter>(topology::shm_segment_blocks_seconds) &&
                        add<Collective::kBroadcast>(topology::shm_segment_whole_seconds) &&
                        add<Collective::kReduce>(topology::shm_segment_whole_seconds) &&
                        add<Collective::kGather>(topology::shm_segment_gather_seconds) &&
                        add<Collective::kScatter>(topology::shm_segment_gather_seconds) &&
                        add<Collective::kAllToAll>(topology::shm_segment_whole_seconds) &&
                        add<Collective::kBarrier>(topology::shm_segment_barrier_seconds);
}  // namespace

}  // namespace domino::shm
