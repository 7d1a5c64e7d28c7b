// Shared memory's "rsag" all-reduce: in chunks of one slot, each rank reduces its own slice of
// every rank's chunk (reduce-scatter), then all copy every slice out (all-gather).
#include "ShmAlgorithms.h"
#include "ShmCommunicator.h"
#include "topology/ShmCosts.h"

namespace domino::shm {

namespace {
struct Rsag;
}  // namespace

template <>
void run_path<Rsag>(ShmCommunicator& comm, const domino_call_t& call) {
  const OpDescriptor mine = comm.start_reduce(topology::Collective::kAllReduce, call, -1);
  comm.reduce_rounds(topology::Collective::kAllReduce, mine, call, -1, 0);
}

namespace {
const bool registered = register_shm_algorithm(
    {"rsag",
     "each rank reduces its slice of every chunk, then all copy the slices out",
     {"all_reduce"},
     topology::AlgorithmHome::kShm,
     topology::shm_rsag_seconds},
    run_path<Rsag>);
}  // namespace

}  // namespace domino::shm
