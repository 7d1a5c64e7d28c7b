// What lives at the start of a group's shared segment. Everything a peer reads concurrently is an
// atomic on its own cache line; payload slots follow, page-aligned.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace domino::shm {

constexpr uint64_t kSegmentMagic = 0x444f4d494e4f3031ull;  // "DOMINO01"
constexpr size_t kCacheLine = 64;
constexpr size_t kPage = 4096;

// What each rank says it is doing, compared by all ranks before any data moves.
struct OpDescriptor {
  uint32_t op;
  uint32_t dtype;
  uint32_t redop;
  int32_t root;
  uint64_t count;
  uint64_t sequence;
};

struct alignas(kCacheLine) RankControl {
  std::atomic<uint64_t> arrived_phase;  // the last barrier phase this rank reached
  std::atomic<int32_t> pid;
  OpDescriptor descriptor[2];  // indexed by buffer parity
};

struct alignas(kCacheLine) SegmentHeader {
  uint64_t magic;
  int32_t size;
  uint32_t parity_count;
  uint64_t slot_bytes;
  uint64_t payload_offset;

  alignas(kCacheLine) std::atomic<uint64_t> arrivals;  // total barrier arrivals, all ranks
  alignas(kCacheLine) std::atomic<uint32_t> wake_epoch;  // futex word
  std::atomic<uint32_t> sleepers;
  alignas(kCacheLine) std::atomic<uint32_t> broken;  // a rank gave up; nobody should wait on it
  char broken_reason[480];
};

inline size_t align_up(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

inline size_t control_bytes(int size) {
  return align_up(sizeof(SegmentHeader) + sizeof(RankControl) * static_cast<size_t>(size), kPage);
}

inline RankControl* rank_controls(SegmentHeader* header) {
  return reinterpret_cast<RankControl*>(header + 1);
}

}  // namespace domino::shm
