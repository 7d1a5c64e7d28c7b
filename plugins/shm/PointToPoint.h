// Point-to-point messages inside a group: one byte-stream ring per ordered pair of ranks in the
// group's segment. A message is a 16-byte header (tag, size) and its payload, streamed through
// the ring as space allows, so messages of any size pass through a bounded buffer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "GroupBarrier.h"
#include "SegmentLayout.h"

namespace domino::shm {

class PointToPoint {
 public:
  // From any thread: operations that start from now on wait this long for their peers.
  void set_timeout(std::chrono::milliseconds timeout) { timeout_.store(timeout); }
  PointToPoint(SegmentHeader* header, int rank, int size, GroupBarrier* health,
               std::string group_label, std::chrono::milliseconds timeout);

  void send(const void* data, size_t bytes, int peer, int32_t tag);
  // peer < 0 receives from whichever rank first has a message with this tag; returns the sender.
  int recv(void* data, size_t bytes, int peer, int32_t tag);

 private:
  struct MessageHeader {
    int32_t tag;
    uint32_t reserved;
    uint64_t bytes;
  };

  ChannelControl* channel(int from, int to) const;
  char* ring(ChannelControl* c) const { return channel_ring(c); }
  void write_stream(int peer, const char* data, size_t bytes, Deadline until, const char* what);
  void read_stream(int peer, char* data, size_t bytes, Deadline until, const char* what);
  bool peek_header(int peer, MessageHeader* out, const char* what) const;
  // Bytes in flight from -> to; throws, marking the group broken, where the counters (which the
  // peer writes too) are impossible, before any copy trusts them.
  size_t in_flight(int from, int to, uint64_t written, uint64_t read, const char* what) const;
  void check_peer(int peer, const char* op) const;
  void check_usable(const char* op) const;

  SegmentHeader* header_;
  RankControl* ranks_;
  int rank_;
  int size_;
  GroupBarrier* health_;
  std::string group_label_;
  std::atomic<std::chrono::milliseconds> timeout_;
  size_t ring_bytes_;
};

}  // namespace domino::shm
