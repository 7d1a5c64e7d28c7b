#include <cstring>
#include <string>

#include "Algorithms.h"
#include "Registration.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/TransportError.h"

namespace domino::algorithms {

void alltoall_direct(PeerLinks& links, const void* send, const uint64_t* send_counts,
                     const uint64_t* send_offsets, void* recv, const uint64_t* recv_counts,
                     const uint64_t* recv_offsets, size_t element_bytes) {
  const int rank = links.rank(), size = links.size();
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  const size_t self = static_cast<size_t>(rank);
  if (recv_counts[self] != send_counts[self]) {  // before anything is posted
    throw TransportError(DOMINO_ERR_INVALID,
                         links.where() + ": rank " + std::to_string(rank) + " sends itself " +
                             std::to_string(send_counts[self]) + " elements but expects " +
                             std::to_string(recv_counts[self]));
  }
  if (send_counts[self] > 0) {
    std::memmove(out + recv_offsets[self] * element_bytes, in + send_offsets[self] * element_bytes,
                 send_counts[self] * element_bytes);
  }
  for (int r = 0; r < size; ++r) {
    const size_t i = static_cast<size_t>(r);
    if (r != rank)
      links.post_recv(r, out + recv_offsets[i] * element_bytes, recv_counts[i] * element_bytes);
  }
  for (int step = 1; step < size; ++step) {
    const size_t i = static_cast<size_t>((rank + step) % size);  // staggered
    links.post_send(static_cast<int>(i), in + send_offsets[i] * element_bytes,
                    send_counts[i] * element_bytes);
  }
  links.wait();
}

namespace {
// Every rank sends (p-1)/p of what it sends in all at once.
double alltoall_seconds(int ranks, double bytes, int flows, const topology::TransportCost& c) {
  return topology::alpha_seconds(c) +
         (ranks - 1.0) / ranks * bytes * topology::seconds_per_byte(c) * flows;
}

const bool registered = register_algorithm(
    {"direct",
     "every rank posts a message per peer at once, staggered",
     {"all_to_all"},
     topology::AlgorithmHome::kLinks,
     alltoall_seconds},
    [](PeerLinks& links, const domino_call_t& call) {
      alltoall_direct(links, call.send->ptr, call.send_counts, call.send_offsets, call.recv->ptr,
                      call.recv_counts, call.recv_offsets, dtype_size(call.send->dtype));
    });
}  // namespace

}  // namespace domino::algorithms
