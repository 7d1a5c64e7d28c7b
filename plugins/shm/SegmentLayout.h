// What lives in a group's shared segment, in order: the header, one control block per rank, the
// collective payload slots (two per rank, by round parity), one point-to-point channel per
// ordered pair of ranks for send/recv, then another set for the shared algorithms' links (kept
// apart so that a collective's messages never interleave with a user's). Everything peers touch
// concurrently sits on its own cache line.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "WaitWord.h"

namespace domino::shm {

// "DOMINO07": 07 puts each barrier phase's arrival, descriptor and small payload in one line per
// rank (06 counted arrivals per rank, with no shared counter; 05 added the links' channels).
constexpr uint64_t kSegmentMagic = 0x444f4d494e4f3037ull;
constexpr size_t kCacheLine = 64;
constexpr size_t kPage = 4096;
// The smallest payload slot rank 0 makes: a round's chunk must hold elements for every rank.
constexpr uint64_t kMinSlotBytes = 64ull << 10;

// What each rank says it is doing, compared by all ranks before any data moves.
struct OpDescriptor {
  uint32_t op;
  uint32_t dtype;
  uint32_t redop;
  int32_t root;
  uint64_t count;
  uint64_t sequence;
};

// Bytes of an all-reduce or reduce small enough to travel in its rank's phase line, beside its
// arrival.
constexpr size_t kLinePayloadBytes = 24;

// What a rank publishes for one barrier phase, in one cache line: a peer that sees the arrival
// has the descriptor and a small op's data with it, in one transfer between cores. Two lines per
// rank, by the phase's parity: no rank can be two phases ahead of another.
struct alignas(kCacheLine) PhaseLine {
  // The last phase of this parity that the rank reached. Waiters read every rank's, where a
  // shared counter took a contended read-modify-write per rank and phase.
  std::atomic<uint64_t> arrived;
  OpDescriptor descriptor;  // the op whose first round meets at this phase
  alignas(8) unsigned char payload[kLinePayloadBytes];
};
static_assert(sizeof(PhaseLine) == kCacheLine);

struct alignas(kCacheLine) RankControl {
  PhaseLine phase_line[2];  // indexed by barrier phase parity
  std::atomic<int32_t> pid;
  uint64_t probe_address;   // a word in this rank's private memory, for the CMA probe
  uint32_t can_reach_peer;  // this rank read and wrote its neighbour's probe word directly
  // Set while this rank may write into peers' buffers; a rank leaving a collective on an error
  // waits for it to clear, so no late write lands in memory its owner has moved on from.
  std::atomic<uint32_t> pushing;
  WaitWord mailbox;  // bumped by any point-to-point progress that concerns this rank
};

// Sender -> receiver byte stream; the ring follows the control line.
struct alignas(kCacheLine) ChannelControl {
  std::atomic<uint64_t> written;
  alignas(kCacheLine) std::atomic<uint64_t> read;
};

struct alignas(kCacheLine) SegmentHeader {
  uint64_t magic;
  int32_t size;
  uint32_t reserved;
  uint64_t slot_bytes;
  uint64_t payload_offset;
  uint64_t channel_offset;
  uint64_t link_offset;    // the links' channels, laid out as send/recv's
  uint64_t channel_bytes;  // ring bytes per channel

  WaitWord barrier_word;                             // for ranks asleep in the barrier
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

// The line rank's control block holds for barrier phase `phase`.
inline PhaseLine& phase_line(RankControl* controls, int rank, uint64_t phase) {
  return controls[rank].phase_line[phase & 1];
}

inline size_t channel_stride(size_t ring_bytes) {
  return sizeof(ChannelControl) + ring_bytes;
}

// The channel from -> to of the set at offset (channel_offset or link_offset); its ring follows.
inline ChannelControl* channel_at(SegmentHeader* header, uint64_t offset, int from, int to) {
  const size_t index =
      static_cast<size_t>(from) * static_cast<size_t>(header->size) + static_cast<size_t>(to);
  return reinterpret_cast<ChannelControl*>(reinterpret_cast<char*>(header) + offset +
                                           index * channel_stride(header->channel_bytes));
}
inline char* channel_ring(ChannelControl* channel) {
  return reinterpret_cast<char*>(channel + 1);
}

// Where each part of the segment starts for `size` ranks; nullopt where the sizes overflow.
struct SegmentGeometry {
  size_t payload_offset;
  size_t channel_offset;
  size_t link_offset;
  size_t total_bytes;
};
std::optional<SegmentGeometry> segment_geometry(int size, uint64_t slot_bytes,
                                                uint64_t channel_bytes);

// Why a segment of mapped_bytes received from rank 0 cannot serve `size` ranks ("" when it can).
// Its header was written by another process, so every size and offset in it is checked against
// the mapping before anything indexes with it.
std::string segment_header_problem(const void* segment, size_t mapped_bytes, int size);

// Bytes in flight in a ring, from counters a peer also writes; nullopt where they are impossible
// (read ahead of written, or more than the ring holds), which only a corrupted segment shows.
inline std::optional<size_t> ring_bytes_in_flight(uint64_t written, uint64_t read,
                                                  size_t ring_bytes) {
  const uint64_t in_flight = written - read;  // wraps when read > written: refused below
  if (in_flight > ring_bytes) return std::nullopt;
  return static_cast<size_t>(in_flight);
}
// What impossible counters of the ring from -> to say, for an error message.
std::string ring_counters_problem(int from, int to, uint64_t written, uint64_t read,
                                  size_t ring_bytes);

}  // namespace domino::shm
