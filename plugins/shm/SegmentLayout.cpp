#include "SegmentLayout.h"

namespace domino::shm {

std::optional<SegmentGeometry> segment_geometry(int size, uint64_t slot_bytes,
                                                uint64_t channel_bytes) {
  if (size < 1) return std::nullopt;
  const auto ranks = static_cast<size_t>(size);
  const size_t channels = size > 1 ? ranks * ranks : 0;
  SegmentGeometry geometry{};
  geometry.payload_offset = control_bytes(size);
  size_t slots = 0, stride = 0, channel_set = 0;
  // The header's sizes may be anything: each step is checked, never allowed to wrap.
  const bool overflows =
      __builtin_mul_overflow(2 * ranks, slot_bytes, &slots) ||
      __builtin_add_overflow(geometry.payload_offset, slots, &geometry.channel_offset) ||
      __builtin_add_overflow(sizeof(ChannelControl), channel_bytes, &stride) ||
      __builtin_mul_overflow(channels, stride, &channel_set) ||
      __builtin_add_overflow(geometry.channel_offset, channel_set, &geometry.link_offset) ||
      __builtin_add_overflow(geometry.link_offset, channel_set, &geometry.total_bytes);
  if (overflows) return std::nullopt;
  return geometry;
}

std::string segment_header_problem(const void* segment, size_t mapped_bytes, int size) {
  using std::to_string;
  if (size < 1) return "the group has " + to_string(size) + " ranks";
  const size_t controls = control_bytes(size);
  if (mapped_bytes < controls) {
    return "it is " + to_string(mapped_bytes) + " bytes, less than the " + to_string(controls) +
           " its header and the controls of " + to_string(size) + " ranks take";
  }
  const auto* header = static_cast<const SegmentHeader*>(segment);
  if (header->magic != kSegmentMagic) {
    return "its header lacks this build's magic number (another torch-domino version?)";
  }
  if (header->size != size) {
    return "it is laid out for " + to_string(header->size) + " ranks, not " + to_string(size);
  }
  if (header->slot_bytes < kMinSlotBytes || header->slot_bytes % kPage != 0) {
    return "its payload slots are " + to_string(header->slot_bytes) + " bytes, not a multiple of " +
           to_string(kPage) + " of at least " + to_string(kMinSlotBytes);
  }
  if (header->channel_bytes < kCacheLine || header->channel_bytes % kCacheLine != 0) {
    return "its rings are " + to_string(header->channel_bytes) + " bytes, not a multiple of " +
           to_string(kCacheLine);
  }
  const auto expected = segment_geometry(size, header->slot_bytes, header->channel_bytes);
  if (!expected) {
    return "its slots of " + to_string(header->slot_bytes) + " bytes and rings of " +
           to_string(header->channel_bytes) + " bytes overflow the address space";
  }
  if (header->payload_offset != expected->payload_offset ||
      header->channel_offset != expected->channel_offset ||
      header->link_offset != expected->link_offset) {
    return "its offsets (payload " + to_string(header->payload_offset) + ", channels " +
           to_string(header->channel_offset) + ", links " + to_string(header->link_offset) +
           ") are not where " + to_string(size) +
           " ranks with its slot and ring sizes have them (" + to_string(expected->payload_offset) +
           ", " + to_string(expected->channel_offset) + ", " + to_string(expected->link_offset) +
           ")";
  }
  if (expected->total_bytes > mapped_bytes) {
    return "its layout takes " + to_string(expected->total_bytes) + " bytes but only " +
           to_string(mapped_bytes) + " are mapped (a truncated segment)";
  }
  return "";
}

std::string ring_counters_problem(int from, int to, uint64_t written, uint64_t read,
                                  size_t ring_bytes) {
  using std::to_string;
  return "the ring from rank " + to_string(from) + " to rank " + to_string(to) + " says " +
         to_string(written - read) + " bytes are in flight (written " + to_string(written) +
         ", read " + to_string(read) + ") in a ring of " + to_string(ring_bytes) +
         " bytes: its counters were overwritten (memory corruption, or a process other than the "
         "group's ranks writing its segment)";
}

}  // namespace domino::shm
