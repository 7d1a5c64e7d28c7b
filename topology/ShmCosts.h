// The shared-memory transport's own algorithms as the algorithm table prices them. Each is the
// in-host alpha-beta model of its op (CostModel.h's intra cost), scaled in each size regime by
// what the paths measured against each other on this machine class (python -m torch_domino.bench
// with DOMINO_ALGO=direct, rsag and the default, worlds 2 and 4; bench/results/shm_paths.md):
//   all_reduce   direct (every rank reduces the whole message) up to 32 KiB, rsag (each rank its
//                slice) above, single_copy (reads from the peers' memory) from 1 to 64 MiB, and
//                priced just above rsag from 64 KiB to 1 MiB, where it won on some hosts only;
//   all_gather   segment (through the slots), single_copy above 64 KiB gathered (with more ranks
//                than CPUs, from 256 KiB to 16 MiB);
//   reduce_scatter  segment, single_copy above 64 KiB of input while every rank has a CPU;
//   every other op  segment.
// Single-copy reads need a CPU per rank (else rounds through the slots measured faster) and the
// permission the transport cost says (DOMINO_SINGLE_COPY); elsewhere they cost infinity.
// These regimes are stated here only: the transport registers each path with its cost from here
// (plugins/shm/ShmAlgorithms.h) and, handed no name, runs the table's cheapest. Torch-free.
#pragma once

#include <cstddef>

#include "CostModel.h"

namespace domino::topology {

// Direct's regime: messages up to this size every rank reduces whole; above it each rank its
// slice. A reduce to one root through the segment splits its rounds at the same size.
inline constexpr size_t kShmDirectMaxBytes = size_t{32} << 10;

// Single-copy all-reduces are priced from this size up (below it the syscalls outweigh the copy
// they save).
inline constexpr size_t kShmSingleCopyAllreduceMinBytes = size_t{64} << 10;

double shm_direct_seconds(int ranks, double bytes, int flows, const TransportCost& cost);
double shm_rsag_seconds(int ranks, double bytes, int flows, const TransportCost& cost);
// Whether single-copy reads can run at all among ranks (permitted, a CPU per rank), whatever the
// size: a forced single_copy outside its measured regime still runs; where this is false it never
// does.
bool shm_single_copy_runs(int ranks, const TransportCost& cost);
double shm_single_copy_allreduce_seconds(int ranks, double bytes, int flows,
                                         const TransportCost& cost);
double shm_single_copy_allgather_seconds(int ranks, double bytes, int flows,
                                         const TransportCost& cost);
double shm_single_copy_reduce_scatter_seconds(int ranks, double bytes, int flows,
                                              const TransportCost& cost);
// segment: one per op (bytes as AlgorithmTable.h sizes them).
double shm_segment_gather_seconds(int ranks, double bytes, int flows, const TransportCost& cost);
double shm_segment_blocks_seconds(int ranks, double bytes, int flows, const TransportCost& cost);
double shm_segment_whole_seconds(int ranks, double bytes, int flows, const TransportCost& cost);
double shm_segment_barrier_seconds(int ranks, double bytes, int flows, const TransportCost& cost);

}  // namespace domino::topology
