// Shared memory's "direct" all-reduce: every rank reduces the whole message from the slots, in
// one round (latency-optimal). A message larger than a slot goes by slices, as rsag.
#include "ShmAlgorithms.h"
#include "ShmCommunicator.h"
#include "topology/ShmCosts.h"

namespace domino::shm {

namespace {
struct Direct;
}  // namespace

template <>
void run_path<Direct>(ShmCommunicator& comm, const domino_call_t& call) {
  const OpDescriptor mine = comm.start_reduce(topology::Collective::kAllReduce, call, -1);
  comm.reduce_rounds(topology::Collective::kAllReduce, mine, call, -1, comm.slot_bytes_);
}

namespace {
const bool registered = register_shm_algorithm(
    {"direct",
     "every rank reduces the whole message from the segment (latency-optimal)",
     {"all_reduce"},
     topology::AlgorithmHome::kShm,
     topology::shm_direct_seconds},
    run_path<Direct>);
}  // namespace

}  // namespace domino::shm
