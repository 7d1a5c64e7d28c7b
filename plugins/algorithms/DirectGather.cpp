#include <cstring>

#include "Algorithms.h"
#include "Registration.h"
#include "plugins/common/Dtype.h"

namespace domino::algorithms {

void gather_direct(PeerLinks& links, const void* send, void* recv, size_t block_bytes, int root) {
  const int rank = links.rank();
  if (rank != root) {
    links.post_send(root, send, block_bytes);
  } else {
    char* out = static_cast<char*>(recv);
    for (int r = 0; r < links.size(); ++r) {
      char* block = out + static_cast<size_t>(r) * block_bytes;
      if (r != rank) {
        links.post_recv(r, block, block_bytes);
      } else if (block_bytes > 0 && block != send) {
        std::memmove(block, send, block_bytes);
      }
    }
  }
  links.wait();
}

namespace {
// The root's link carries every other rank's block.
double gather_seconds(int ranks, double bytes, int flows, const topology::TransportCost& c) {
  return topology::alpha_seconds(c) + (ranks - 1.0) * bytes * topology::seconds_per_byte(c) * flows;
}

const bool registered =
    register_algorithm({"direct",
                        "the root posts a receive per peer at once",
                        {"gather"},
                        topology::AlgorithmHome::kLinks,
                        gather_seconds},
                       [](PeerLinks& links, const domino_call_t& call) {
                         gather_direct(links, call.send->ptr, call.recv->ptr,
                                       call.send->count * dtype_size(call.send->dtype), call.root);
                       });
}  // namespace

}  // namespace domino::algorithms
