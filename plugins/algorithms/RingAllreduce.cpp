#include <vector>

#include "Algorithms.h"
#include "Blocks.h"
#include "Registration.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"

namespace domino::algorithms {

void allreduce_ring(PeerLinks& links, void* buffer, size_t count, domino_dtype_t dtype,
                    domino_redop_t op) {
  char* data = static_cast<char*>(buffer);
  const int rank = links.rank(), size = links.size();
  const size_t element = dtype_size(dtype);
  const Blocks blocks(count, size);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  auto at = [&](int b) { return data + blocks.offset(b) * element; };
  std::vector<char> theirs(blocks.size(0) * element);
  for (int step = 0; step < size - 1; ++step) {
    const int out = ring_index(rank - step, size), in = ring_index(rank - step - 1, size);
    links.exchange(next, at(out), blocks.size(out) * element, prev, theirs.data(),
                   blocks.size(in) * element);
    combine(at(in), theirs.data(), blocks.size(in), dtype, op);
  }
  for (int step = 0; step < size - 1; ++step) {
    const int out = ring_index(rank + 1 - step, size), in = ring_index(rank - step, size);
    links.exchange(next, at(out), blocks.size(out) * element, prev, at(in),
                   blocks.size(in) * element);
  }
  if (op == DOMINO_AVG) divide_buffer(data, count, dtype, size);
}

namespace {
double ring_seconds(int ranks, double bytes, int flows, const topology::TransportCost& c) {
  return 2.0 * (ranks - 1) *
         (topology::alpha_seconds(c) + bytes / ranks * topology::seconds_per_byte(c) * flows);
}
const bool registered = register_algorithm(
    {"ring",
     "2(p-1) rounds of n/p: reduce-scatter then all-gather around the ranks",
     {"all_reduce"},
     topology::AlgorithmHome::kLinks,
     ring_seconds},
    [](PeerLinks& links, const domino_call_t& call) {
      allreduce_ring(links, call.recv->ptr, call.recv->count, call.recv->dtype, call.redop);
    });
}  // namespace

}  // namespace domino::algorithms
