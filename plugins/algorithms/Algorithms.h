// Collective algorithms written once over PeerLinks, one per file. Every result is computed by
// exactly one rank and copied to the others, so all ranks hold bitwise identical values. AVG
// sums, then divides. Counts are elements of dtype; buffers are host memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "PeerLinks.h"
#include "domino/plugin.h"

namespace domino::algorithms {

// All-reduce in place. Recursive doubling: log p rounds of the whole message (latency-optimal).
void allreduce_recursive_doubling(PeerLinks& links, void* data, size_t count, domino_dtype_t dtype,
                                  domino_redop_t op);
// Rabenseifner: recursive-halving reduce-scatter, then recursive-doubling all-gather.
void allreduce_rabenseifner(PeerLinks& links, void* data, size_t count, domino_dtype_t dtype,
                            domino_redop_t op);
// Ring: reduce-scatter then all-gather, 2(p-1) rounds of n/p.
void allreduce_ring(PeerLinks& links, void* data, size_t count, domino_dtype_t dtype,
                    domino_redop_t op);

// send holds size() blocks of block_count; recv gets this rank's reduced block. Ring.
void reduce_scatter_ring(PeerLinks& links, const void* send, void* recv, size_t block_count,
                         domino_dtype_t dtype, domino_redop_t op);
// recv gets size() blocks of block_bytes, rank-major; send may be recv's own block. Ring.
void allgather_ring(PeerLinks& links, const void* send, void* recv, size_t block_bytes);

// Binomial trees rooted at root.
void broadcast_binomial(PeerLinks& links, void* data, size_t bytes, int root);
// recv matters on root only.
void reduce_binomial(PeerLinks& links, const void* send, void* recv, size_t count,
                     domino_dtype_t dtype, domino_redop_t op, int root);

// Direct: the root posts a message per peer at once. recv (gather) and send (scatter) hold
// size() blocks of block_bytes on root.
void gather_direct(PeerLinks& links, const void* send, void* recv, size_t block_bytes, int root);
void scatter_direct(PeerLinks& links, const void* send, void* recv, size_t block_bytes, int root);
// Direct, staggered so that ranks do not all reach rank 0 first. Counts and offsets per peer are
// in elements of element_bytes.
void alltoall_direct(PeerLinks& links, const void* send, const uint64_t* send_counts,
                     const uint64_t* send_offsets, void* recv, const uint64_t* recv_counts,
                     const uint64_t* recv_offsets, size_t element_bytes);

// Dissemination: ceil(log2 p) rounds of empty messages.
void barrier_dissemination(PeerLinks& links);

}  // namespace domino::algorithms
