#include "PointToPoint.h"

#include <algorithm>
#include <cstring>

#include "plugins/common/TransportError.h"

namespace domino::shm {

PointToPoint::PointToPoint(SegmentHeader* header, int rank, int size, GroupBarrier* health,
                           std::string group_label, std::chrono::milliseconds timeout)
    : header_(header),
      ranks_(rank_controls(header)),
      rank_(rank),
      size_(size),
      health_(health),
      group_label_(std::move(group_label)),
      timeout_(timeout),
      ring_bytes_(header->channel_bytes) {}

ChannelControl* PointToPoint::channel(int from, int to) const {
  return channel_at(header_, header_->channel_offset, from, to);
}

void PointToPoint::check_peer(int peer, const char* op) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw TransportError(
        DOMINO_ERR_INVALID,
        std::string(op) + " on " + group_label_ + ": peer rank " + std::to_string(peer) +
            " is not another rank of this group of " + std::to_string(size_) + " (group ranks 0.." +
            std::to_string(size_ - 1) + ", this is " + std::to_string(rank_) + ")");
  }
  check_usable(op);
}

void PointToPoint::check_usable(const char* op) const {
  if (health_->broken()) {
    throw TransportError(DOMINO_ERR_PEER, std::string(op) + " on " + group_label_ +
                                              " refused: the group broke earlier (" +
                                              health_->broken_reason() + ")");
  }
}

size_t PointToPoint::in_flight(int from, int to, uint64_t written, uint64_t read,
                               const char* what) const {
  if (const auto bytes = ring_bytes_in_flight(written, read, ring_bytes_)) return *bytes;
  const std::string message = std::string(what) + " on " + group_label_ + ": " +
                              ring_counters_problem(from, to, written, read, ring_bytes_) +
                              ". The group cannot continue; destroy it and create a new one.";
  health_->mark_broken("rank " + std::to_string(rank_) + ": " + message);
  throw TransportError(DOMINO_ERR_PEER, message);
}

void PointToPoint::write_stream(int peer, const char* data, size_t bytes, Deadline until,
                                const char* what) {
  ChannelControl* c = channel(rank_, peer);
  char* base = ring(c);
  uint64_t written = c->written.load(std::memory_order_relaxed);
  while (bytes > 0) {
    size_t space = 0;
    wait_for(
        [&] {
          space = ring_bytes_ -
                  in_flight(rank_, peer, written, c->read.load(std::memory_order_acquire), what);
          return space > 0;
        },
        ranks_[rank_].mailbox, spinning_pays(2),
        [&](auto now) { health_->check_health(now, until, what, peer); });
    const size_t n = std::min(space, bytes);
    const size_t at = static_cast<size_t>(written % ring_bytes_);
    const size_t first = std::min(n, ring_bytes_ - at);
    std::memcpy(base + at, data, first);
    std::memcpy(base, data + first, n - first);
    written += n;
    c->written.store(written, std::memory_order_release);
    notify(ranks_[peer].mailbox);
    data += n;
    bytes -= n;
  }
}

void PointToPoint::read_stream(int peer, char* data, size_t bytes, Deadline until,
                               const char* what) {
  ChannelControl* c = channel(peer, rank_);
  const char* base = ring(c);
  uint64_t read = c->read.load(std::memory_order_relaxed);
  while (bytes > 0) {
    size_t available = 0;
    wait_for(
        [&] {
          available =
              in_flight(peer, rank_, c->written.load(std::memory_order_acquire), read, what);
          return available > 0;
        },
        ranks_[rank_].mailbox, spinning_pays(2),
        [&](auto now) { health_->check_health(now, until, what, peer); });
    const size_t n = std::min(available, bytes);
    const size_t at = static_cast<size_t>(read % ring_bytes_);
    const size_t first = std::min(n, ring_bytes_ - at);
    std::memcpy(data, base + at, first);
    std::memcpy(data + first, base, n - first);
    read += n;
    c->read.store(read, std::memory_order_release);
    notify(ranks_[peer].mailbox);
    data += n;
    bytes -= n;
  }
}

bool PointToPoint::peek_header(int peer, MessageHeader* out, const char* what) const {
  ChannelControl* c = channel(peer, rank_);
  const uint64_t read = c->read.load(std::memory_order_relaxed);
  const uint64_t written = c->written.load(std::memory_order_acquire);
  if (in_flight(peer, rank_, written, read, what) < sizeof(MessageHeader)) return false;
  const size_t at = static_cast<size_t>(read % ring_bytes_);
  const size_t first = std::min(sizeof(MessageHeader), ring_bytes_ - at);
  auto* bytes = reinterpret_cast<char*>(out);
  std::memcpy(bytes, ring(c) + at, first);
  std::memcpy(bytes + first, ring(c), sizeof(MessageHeader) - first);
  return true;
}

void PointToPoint::send(const void* data, size_t bytes, int peer, int32_t tag) {
  check_peer(peer, "send");
  const Deadline until = std::chrono::steady_clock::now() + timeout_.load();
  const MessageHeader message{tag, 0, bytes};
  write_stream(peer, reinterpret_cast<const char*>(&message), sizeof message, until, "send");
  write_stream(peer, static_cast<const char*>(data), bytes, until, "send");
}

int PointToPoint::recv(void* data, size_t bytes, int peer, int32_t tag) {
  if (peer >= 0) {
    check_peer(peer, "recv");
  } else {
    check_usable("recv from any source");
  }
  const Deadline until = std::chrono::steady_clock::now() + timeout_.load();
  MessageHeader message{};
  int source = peer;
  const char* what = peer >= 0 ? "recv" : "recv from any source";
  wait_for(
      [&] {
        if (peer >= 0) return peek_header(peer, &message, what);
        for (int s = 0; s < size_; ++s) {
          if (s != rank_ && peek_header(s, &message, what) && message.tag == tag) {
            source = s;
            return true;
          }
        }
        return false;
      },
      ranks_[rank_].mailbox, spinning_pays(2),
      [&](auto now) { health_->check_health(now, until, what, peer); });
  if (message.tag != tag) {
    throw TransportError(DOMINO_ERR_MISMATCH,
                         "recv on " + group_label_ + " from rank " + std::to_string(source) +
                             " expects tag " + std::to_string(tag) +
                             " but the next message from it has tag " +
                             std::to_string(message.tag) +
                             ". Messages between two ranks arrive in the order they were sent; "
                             "receive them in that order.");
  }
  if (message.bytes != bytes) {
    throw TransportError(DOMINO_ERR_MISMATCH,
                         "recv on " + group_label_ + " from rank " + std::to_string(source) +
                             ": the message is " + std::to_string(message.bytes) +
                             " bytes but the receive buffer is " + std::to_string(bytes) +
                             " bytes; sizes must match exactly.");
  }
  char skip[sizeof(MessageHeader)];
  read_stream(source, skip, sizeof skip, until, what);
  read_stream(source, static_cast<char*>(data), bytes, until, what);
  return source;
}

}  // namespace domino::shm
