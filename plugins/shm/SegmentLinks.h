// The shared algorithms' PeerLinks over the segment's second set of channels: posted messages
// only queue, and wait() streams them all at once, writing to every peer whose ring has room and
// reading from every peer whose ring has bytes, so a ring step's send and receive never wait on
// each other. Each message carries its length, so a receiver of the wrong size fails instead of
// reading the next message's bytes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "GroupBarrier.h"
#include "SegmentLayout.h"
#include "plugins/algorithms/PeerLinks.h"

namespace domino::shm {

class SegmentLinks final : public algorithms::PeerLinks {
 public:
  // health marks the group broken for the other ranks when this one gives up.
  SegmentLinks(SegmentHeader* header, int rank, int size, GroupBarrier* health,
               std::string group_label, std::chrono::milliseconds timeout);

  // From any thread: waits that start from now on.
  void set_timeout(std::chrono::milliseconds timeout) { timeout_.store(timeout); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void post_send(int peer, const void* data, size_t bytes) override;
  void post_recv(int peer, void* data, size_t bytes) override;
  // Throws TransportError (TIMEOUT or PEER) with the group marked broken; what was posted is
  // dropped.
  void wait() override;
  std::string where() const override { return std::string(kWhat) + " on " + group_label_; }
  // Drops everything posted since the last wait (a call failed before its wait).
  void drop();

 private:
  // One message in flight: the 8-byte length, then the payload, `done` bytes of both so far.
  struct Message {
    char* data;
    uint64_t bytes;
    uint64_t length;  // the sent length (sends), or the received one (receives)
    size_t done = 0;
  };
  // Streams what the rings allow now; true when any byte moved.
  bool write_some(int peer, Message& m);
  bool read_some(int peer, Message& m);
  bool can_move() const;
  // Throws, marking the group broken, for a dead peer this rank waits on or the deadline.
  void check_peers(Deadline until, std::chrono::steady_clock::time_point now);
  // "from rank 1: 0 of 4096 bytes; to rank 2: ..." for each peer with messages left.
  std::string pending() const;
  [[noreturn]] void fail(domino_status_t status, const std::string& message);
  void check_peer(int peer, const char* what) const;
  [[noreturn]] void fail_length(int peer, const Message& m);
  // Bytes in flight from -> to; fails the group where the counters (which the peer writes too)
  // are impossible, before any copy trusts them.
  size_t in_flight(int from, int to, uint64_t written, uint64_t read);

  SegmentHeader* header_;
  RankControl* ranks_;
  int rank_;
  int size_;
  GroupBarrier* health_;
  std::atomic<std::chrono::milliseconds> timeout_;
  size_t ring_bytes_;
  std::string group_label_;
  static constexpr const char* kWhat = "shm links";
  std::vector<std::deque<Message>> sends_;  // by peer, in posting order
  std::vector<std::deque<Message>> recvs_;
};

}  // namespace domino::shm
