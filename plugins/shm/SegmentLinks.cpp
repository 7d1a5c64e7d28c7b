#include "SegmentLinks.h"

#include <algorithm>
#include <cstring>

#include "plugins/common/TransportError.h"

namespace domino::shm {

namespace {
constexpr size_t kLengthBytes = sizeof(uint64_t);

void ring_write(char* ring, size_t ring_bytes, uint64_t at, const char* from, size_t n) {
  const size_t start = static_cast<size_t>(at % ring_bytes);
  const size_t first = std::min(n, ring_bytes - start);
  std::memcpy(ring + start, from, first);
  std::memcpy(ring, from + first, n - first);
}

void ring_read(const char* ring, size_t ring_bytes, uint64_t at, char* to, size_t n) {
  const size_t start = static_cast<size_t>(at % ring_bytes);
  const size_t first = std::min(n, ring_bytes - start);
  std::memcpy(to, ring + start, first);
  std::memcpy(to + first, ring, n - first);
}
}  // namespace

SegmentLinks::SegmentLinks(SegmentHeader* header, int rank, int size, GroupBarrier* health,
                           std::string group_label, std::chrono::milliseconds timeout)
    : header_(header),
      ranks_(rank_controls(header)),
      rank_(rank),
      size_(size),
      health_(health),
      timeout_(timeout),
      ring_bytes_(header->channel_bytes),
      group_label_(std::move(group_label)),
      sends_(static_cast<size_t>(size)),
      recvs_(static_cast<size_t>(size)) {}

void SegmentLinks::check_peer(int peer, const char* what) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw TransportError(DOMINO_ERR_INVALID,
                         where() + ": " + what + " peer rank " + std::to_string(peer) +
                             " is not another rank of this group of " + std::to_string(size_));
  }
}

void SegmentLinks::post_send(int peer, const void* data, size_t bytes) {
  check_peer(peer, "a message to");
  sends_[static_cast<size_t>(peer)].push_back(
      {static_cast<char*>(const_cast<void*>(data)), bytes, bytes});
}

void SegmentLinks::post_recv(int peer, void* data, size_t bytes) {
  check_peer(peer, "a message from");
  recvs_[static_cast<size_t>(peer)].push_back({static_cast<char*>(data), bytes, 0});
}

void SegmentLinks::drop() {
  for (auto& q : sends_) q.clear();
  for (auto& q : recvs_) q.clear();
}

size_t SegmentLinks::in_flight(int from, int to, uint64_t written, uint64_t read) {
  if (const auto bytes = ring_bytes_in_flight(written, read, ring_bytes_)) return *bytes;
  fail(DOMINO_ERR_PEER, where() + ": " +
                            ring_counters_problem(from, to, written, read, ring_bytes_) +
                            ". The group cannot continue; destroy it and create a new one.");
}

bool SegmentLinks::write_some(int peer, Message& m) {
  ChannelControl* c = channel_at(header_, header_->link_offset, rank_, peer);
  uint64_t written = c->written.load(std::memory_order_relaxed);
  const size_t space =
      ring_bytes_ - in_flight(rank_, peer, written, c->read.load(std::memory_order_acquire));
  const size_t total = kLengthBytes + m.bytes;
  size_t n = std::min(space, total - m.done);
  if (n == 0) return false;
  char* ring = channel_ring(c);
  const size_t moved = n;
  if (m.done < kLengthBytes) {
    const size_t part = std::min(n, kLengthBytes - m.done);
    ring_write(ring, ring_bytes_, written, reinterpret_cast<const char*>(&m.length) + m.done, part);
    written += part;
    m.done += part;
    n -= part;
  }
  if (n > 0) {
    ring_write(ring, ring_bytes_, written, m.data + (m.done - kLengthBytes), n);
    written += n;
    m.done += n;
  }
  c->written.store(written, std::memory_order_release);
  notify(ranks_[peer].mailbox);
  return moved > 0;
}

bool SegmentLinks::read_some(int peer, Message& m) {
  ChannelControl* c = channel_at(header_, header_->link_offset, peer, rank_);
  uint64_t read = c->read.load(std::memory_order_relaxed);
  const size_t available = in_flight(peer, rank_, c->written.load(std::memory_order_acquire), read);
  const size_t total = kLengthBytes + m.bytes;
  size_t n = std::min(available, total - m.done);
  if (n == 0) return false;
  const char* ring = channel_ring(c);
  if (m.done < kLengthBytes) {
    const size_t part = std::min(n, kLengthBytes - m.done);
    ring_read(ring, ring_bytes_, read, reinterpret_cast<char*>(&m.length) + m.done, part);
    read += part;
    m.done += part;
    n -= part;
    // The length must be checked before any payload lands in a buffer it does not fit.
    if (m.done == kLengthBytes && m.length != m.bytes) fail_length(peer, m);
  }
  if (n > 0) {
    ring_read(ring, ring_bytes_, read, m.data + (m.done - kLengthBytes), n);
    read += n;
    m.done += n;
  }
  c->read.store(read, std::memory_order_release);
  notify(ranks_[peer].mailbox);
  return true;
}

void SegmentLinks::fail_length(int peer, const Message& m) {
  // The streams are out of step from here on, so the whole group stops.
  fail(DOMINO_ERR_PEER,
       where() + ": rank " + std::to_string(peer) + " sent a message of " +
           std::to_string(m.length) + " bytes where this rank expected " + std::to_string(m.bytes) +
           ". The ranks ran different collectives (different sizes); destroy the process group "
           "and create a new one.");
}

bool SegmentLinks::can_move() const {
  for (int p = 0; p < size_; ++p) {
    const auto peer = static_cast<size_t>(p);
    if (!sends_[peer].empty()) {
      ChannelControl* c = channel_at(header_, header_->link_offset, rank_, p);
      const auto queued =
          ring_bytes_in_flight(c->written.load(std::memory_order_relaxed),
                               c->read.load(std::memory_order_acquire), ring_bytes_);
      // Impossible counters count as movable: write_some then reports them.
      if (!queued || *queued < ring_bytes_) return true;
    }
    if (!recvs_[peer].empty()) {
      ChannelControl* c = channel_at(header_, header_->link_offset, p, rank_);
      if (c->written.load(std::memory_order_acquire) != c->read.load(std::memory_order_relaxed))
        return true;
    }
  }
  return false;
}

std::string SegmentLinks::pending() const {
  std::string list;
  for (int p = 0; p < size_; ++p) {
    const auto peer = static_cast<size_t>(p);
    auto describe = [&](const std::deque<Message>& queue, const char* direction) {
      if (queue.empty()) return;
      const Message& m = queue.front();
      list += std::string(list.empty() ? "" : "; ") + direction + " rank " + std::to_string(p) +
              ": " + std::to_string(m.done > kLengthBytes ? m.done - kLengthBytes : 0) + " of " +
              std::to_string(m.bytes) + " bytes" +
              (queue.size() > 1 ? " (+" + std::to_string(queue.size() - 1) + " more)" : "");
    };
    describe(recvs_[peer], "from");
    describe(sends_[peer], "to");
  }
  return list;
}

void SegmentLinks::check_peers(Deadline until, std::chrono::steady_clock::time_point now) {
  health_->throw_if_broken(kWhat);
  for (int p = 0; p < size_; ++p) {
    const auto peer = static_cast<size_t>(p);
    if (sends_[peer].empty() && recvs_[peer].empty()) continue;
    const int32_t pid = ranks_[p].pid.load();
    if (!process_alive(pid)) {
      fail(DOMINO_ERR_PEER, where() + ": rank " + std::to_string(p) + " (pid " +
                                std::to_string(pid) +
                                ") exited. The group cannot continue; destroy it and restart the "
                                "job.");
    }
  }
  if (now >= until) {
    fail(DOMINO_ERR_TIMEOUT,
         where() + " timed out after " + std::to_string(timeout_.load().count()) +
             " ms with messages pending (" + pending() +
             "). Check that every rank issues the same collectives in the same order, or raise "
             "the group's timeout.");
  }
}

void SegmentLinks::fail(domino_status_t status, const std::string& message) {
  drop();
  health_->mark_broken("rank " + std::to_string(rank_) + ": " + message);
  throw TransportError(status, message);
}

void SegmentLinks::wait() {
  const Deadline until = std::chrono::steady_clock::now() + timeout_.load();
  try {
    health_->throw_if_broken(kWhat);  // a peer gave up: its half of the messages never comes
    while (true) {
      bool waiting = false;
      bool moved = false;
      for (int p = 0; p < size_; ++p) {
        auto& sends = sends_[static_cast<size_t>(p)];
        while (!sends.empty() && write_some(p, sends.front())) {
          moved = true;
          if (sends.front().done < kLengthBytes + sends.front().bytes) break;
          sends.pop_front();
        }
        auto& recvs = recvs_[static_cast<size_t>(p)];
        while (!recvs.empty() && read_some(p, recvs.front())) {
          moved = true;
          if (recvs.front().done < kLengthBytes + recvs.front().bytes) break;
          recvs.pop_front();
        }
        waiting = waiting || !sends.empty() || !recvs.empty();
      }
      if (!waiting) return;
      if (moved) continue;
      // Every rank of the group waits in a collective at once: spin only if all have a core.
      wait_for([&] { return can_move(); }, ranks_[rank_].mailbox, spinning_pays(size_),
               [&](std::chrono::steady_clock::time_point now) { check_peers(until, now); });
    }
  } catch (...) {
    drop();
    throw;
  }
}

}  // namespace domino::shm
