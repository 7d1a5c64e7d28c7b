#include <cstring>

#include "Algorithms.h"
#include "Registration.h"
#include "plugins/common/Dtype.h"

namespace domino::algorithms {

void scatter_direct(PeerLinks& links, const void* send, void* recv, size_t block_bytes, int root) {
  const int rank = links.rank();
  if (rank != root) {
    links.post_recv(root, recv, block_bytes);
  } else {
    const char* in = static_cast<const char*>(send);
    for (int r = 0; r < links.size(); ++r) {
      const char* block = in + static_cast<size_t>(r) * block_bytes;
      if (r != rank) {
        links.post_send(r, block, block_bytes);
      } else if (block_bytes > 0 && block != recv) {
        std::memmove(recv, block, block_bytes);
      }
    }
  }
  links.wait();
}

namespace {
// The root's link carries every other rank's block.
double scatter_seconds(int ranks, double bytes, int flows, const topology::TransportCost& c) {
  return topology::alpha_seconds(c) + (ranks - 1.0) * bytes * topology::seconds_per_byte(c) * flows;
}

const bool registered =
    register_algorithm({"direct",
                        "the root posts a send per peer at once",
                        {"scatter"},
                        topology::AlgorithmHome::kLinks,
                        scatter_seconds},
                       [](PeerLinks& links, const domino_call_t& call) {
                         scatter_direct(links, call.send->ptr, call.recv->ptr,
                                        call.recv->count * dtype_size(call.recv->dtype), call.root);
                       });
}  // namespace

}  // namespace domino::algorithms
