#include "ShmCosts.h"

#include <limits>

namespace domino::topology {

namespace {
constexpr double kKiB = 1024, kMiB = 1024 * kKiB;
constexpr double kNever = std::numeric_limits<double>::infinity();
// Measured ratios (ShmCosts.h): a path outside the regime it wins is this much slower than the
// one that wins there; single-copy reads run at this fraction of the rounds' time.
constexpr double kOutOfRegime = 1.25;
constexpr double kSingleCopyShare = 0.7;
// Below 1 MiB, where the regimes' host class kept rsag, single-copy all-reduces ran 0.5x-0.7x
// rsag's time on another: priced just above rsag, so the table keeps rsag and a one-host group's
// trial measures the two.
constexpr double kSingleCopyUnsureShare = 1.05;

// A reduce-scatter or all-gather of `whole` bytes in all among ranks: each moves all but its
// share.
double part(int ranks, double whole, const TransportCost& c) {
  return ranks <= 1 ? 0.0 : alpha_seconds(c) + (ranks - 1.0) / ranks * whole * seconds_per_byte(c);
}
double allreduce_base(int ranks, double bytes, const TransportCost& c) {
  return 2 * part(ranks, bytes, c);
}
bool has_cpu_each(int ranks, const TransportCost& c) {
  return c.cpus <= 0 || ranks <= c.cpus;
}
}  // namespace

double shm_direct_seconds(int ranks, double bytes, int, const TransportCost& c) {
  return allreduce_base(ranks, bytes, c) * (bytes <= kShmDirectMaxBytes ? 1.0 : kOutOfRegime);
}

double shm_rsag_seconds(int ranks, double bytes, int, const TransportCost& c) {
  // Just above direct's regime's edge; below it direct wins by its one round.
  return allreduce_base(ranks, bytes, c) * (bytes <= kShmDirectMaxBytes ? 1.1 : 1.0);
}

bool shm_single_copy_runs(int ranks, const TransportCost& c) {
  return c.single_copy && has_cpu_each(ranks, c);
}

double shm_single_copy_allreduce_seconds(int ranks, double bytes, int, const TransportCost& c) {
  if (!c.single_copy || !has_cpu_each(ranks, c) ||
      bytes < static_cast<double>(kShmSingleCopyAllreduceMinBytes) || bytes > 64 * kMiB)
    return kNever;
  return allreduce_base(ranks, bytes, c) *
         (bytes <= kMiB ? kSingleCopyUnsureShare : kSingleCopyShare);
}

double shm_single_copy_allgather_seconds(int ranks, double bytes, int, const TransportCost& c) {
  const double whole = bytes * ranks;
  const bool pays =
      has_cpu_each(ranks, c) ? whole > 64 * kKiB : whole > 256 * kKiB && whole <= 16 * kMiB;
  if (!c.single_copy || !pays) return kNever;
  return part(ranks, whole, c) * kSingleCopyShare;
}

double shm_single_copy_reduce_scatter_seconds(int ranks, double bytes, int,
                                              const TransportCost& c) {
  const double whole = bytes * ranks;
  if (!c.single_copy || !has_cpu_each(ranks, c) || whole <= 64 * kKiB) return kNever;
  return part(ranks, whole, c) * kSingleCopyShare;
}

double shm_segment_blocks_seconds(int ranks, double bytes, int, const TransportCost& c) {
  return part(ranks, bytes * ranks, c);
}

double shm_segment_gather_seconds(int ranks, double bytes, int, const TransportCost& c) {
  // The root's own block stays put.
  return ranks <= 1 ? 0.0 : alpha_seconds(c) + (ranks - 1.0) * bytes * seconds_per_byte(c);
}

double shm_segment_whole_seconds(int ranks, double bytes, int, const TransportCost& c) {
  return ranks <= 1 ? 0.0 : alpha_seconds(c) + bytes * seconds_per_byte(c);
}

double shm_segment_barrier_seconds(int ranks, double, int, const TransportCost& c) {
  return ranks <= 1 ? 0.0 : alpha_seconds(c);
}

}  // namespace domino::topology
