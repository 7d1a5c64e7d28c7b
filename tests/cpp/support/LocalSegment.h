// A group's segment in this process's memory: the header, the rank controls and one set of
// channels (send/recv's and the links' share it), so the rings can be driven by threads of one
// process, or corrupted by a test, without forking ranks.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "plugins/shm/SegmentLayout.h"

namespace domino::testing {

struct LocalSegment {
  static constexpr size_t kRing = 4096;
  std::vector<std::byte> memory;
  shm::SegmentHeader* header;
  // slack: bytes past the last channel, where a copy that overruns the rings lands visibly.
  explicit LocalSegment(int size, size_t slack = 0) {
    const size_t channels = static_cast<size_t>(size) * static_cast<size_t>(size);
    const size_t offset = shm::control_bytes(size);
    memory.resize(offset + channels * shm::channel_stride(kRing) + shm::kPage + slack);
    void* base = memory.data();
    size_t space = memory.size();
    base = std::align(shm::kPage, memory.size() - shm::kPage, base, space);
    header = new (base) shm::SegmentHeader();
    header->size = size;
    header->channel_bytes = kRing;
    header->channel_offset = offset;
    header->link_offset = offset;
    for (int r = 0; r < size; ++r) {
      new (&shm::rank_controls(header)[r]) shm::RankControl();
      shm::rank_controls(header)[r].pid.store(static_cast<int32_t>(getpid()));
    }
    for (int from = 0; from < size; ++from) {
      for (int to = 0; to < size; ++to)
        new (shm::channel_at(header, offset, from, to)) shm::ChannelControl();
    }
  }
  shm::ChannelControl* channel(int from, int to) const {
    return shm::channel_at(header, header->channel_offset, from, to);
  }
};

}  // namespace domino::testing
