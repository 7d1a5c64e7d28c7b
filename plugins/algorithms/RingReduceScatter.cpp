#include <cstring>
#include <vector>

#include "Algorithms.h"
#include "Blocks.h"
#include "Registration.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"

namespace domino::algorithms {

void reduce_scatter_ring(PeerLinks& links, const void* send, void* recv, size_t block_count,
                         domino_dtype_t dtype, domino_redop_t op) {
  const int rank = links.rank(), size = links.size();
  const size_t block_bytes = block_count * dtype_size(dtype);
  const char* in_data = static_cast<const char*>(send);
  std::vector<char> work(in_data, in_data + block_bytes * static_cast<size_t>(size));
  std::vector<char> theirs(block_bytes);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  auto at = [&](int b) {
    return work.data() + static_cast<size_t>(ring_index(b, size)) * block_bytes;
  };
  for (int step = 0; step < size - 1; ++step) {
    links.exchange(next, at(rank - step - 1), block_bytes, prev, theirs.data(), block_bytes);
    combine(at(rank - step - 2), theirs.data(), block_count, dtype, op);
  }
  if (block_bytes > 0) std::memcpy(recv, at(rank), block_bytes);
  if (op == DOMINO_AVG) divide_buffer(recv, block_count, dtype, size);
}

namespace {
// p-1 rounds of one block, `flows` ring edges sharing a host's NIC.
double reduce_scatter_seconds(int ranks, double bytes, int flows,
                              const topology::TransportCost& c) {
  return (ranks - 1.0) *
         (topology::alpha_seconds(c) + bytes * topology::seconds_per_byte(c) * flows);
}

const bool registered =
    register_algorithm({"ring",
                        "p-1 rounds of one block around the ranks, reduced on the way",
                        {"reduce_scatter"},
                        topology::AlgorithmHome::kLinks,
                        reduce_scatter_seconds},
                       [](PeerLinks& links, const domino_call_t& call) {
                         reduce_scatter_ring(links, call.send->ptr, call.recv->ptr,
                                             call.recv->count, call.recv->dtype, call.redop);
                       });
}  // namespace

}  // namespace domino::algorithms
