#include <cstring>

#include "Algorithms.h"
#include "Blocks.h"
#include "Registration.h"
#include "plugins/common/Dtype.h"

namespace domino::algorithms {

void allgather_ring(PeerLinks& links, const void* send, void* recv, size_t block_bytes) {
  const int rank = links.rank(), size = links.size();
  char* out = static_cast<char*>(recv);
  auto at = [&](int b) { return out + static_cast<size_t>(ring_index(b, size)) * block_bytes; };
  if (block_bytes > 0 && at(rank) != send) std::memmove(at(rank), send, block_bytes);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (int step = 0; step < size - 1; ++step) {
    links.exchange(next, at(rank - step), block_bytes, prev, at(rank - step - 1), block_bytes);
  }
}

namespace {
// p-1 rounds of one block, `flows` ring edges sharing a host's NIC.
double allgather_seconds(int ranks, double bytes, int flows, const topology::TransportCost& c) {
  return (ranks - 1.0) *
         (topology::alpha_seconds(c) + bytes * topology::seconds_per_byte(c) * flows);
}

const bool registered =
    register_algorithm({"ring",
                        "p-1 rounds of one block around the ranks",
                        {"all_gather"},
                        topology::AlgorithmHome::kLinks,
                        allgather_seconds},
                       [](PeerLinks& links, const domino_call_t& call) {
                         allgather_ring(links, call.send->ptr, call.recv->ptr,
                                        call.send->count * dtype_size(call.send->dtype));
                       });
}  // namespace

}  // namespace domino::algorithms
