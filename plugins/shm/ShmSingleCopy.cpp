// The shared-memory transport's "single_copy" path: ranks copy straight between each other's
// buffers with cross-memory attach (CrossMemory.h) instead of through the segment; the set-up
// probe, the address exchange and the three collectives that use it, registered with their costs
// (topology/ShmCosts.h says for which sizes it pays).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "CrossMemory.h"
#include "ShmAlgorithms.h"
#include "ShmCommunicator.h"
#include "Slices.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"
#include "plugins/common/TransportError.h"
#include "topology/ShmCosts.h"

namespace domino::shm {

namespace {
// How long a rank leaving a collective on an error waits for peers to stop writing into it;
// they check between pieces of at most one slot, so this only runs out on a stopped process.
constexpr auto kSettleLimit = std::chrono::seconds(10);
constexpr const char* kCannotRead = "cannot read its peers' memory (single_copy)";

}  // namespace

void ShmCommunicator::probe_single_copy(Deadline until) {
  if (size_ < 2) return;
  RankControl* controls = rank_controls(header_);
  probe_word_ = kSegmentMagic ^ static_cast<uint64_t>(rank_);
  controls[rank_].probe_address = reinterpret_cast<uint64_t>(&probe_word_);
  meet("shared memory set-up", until);
  const int next = (rank_ + 1) % size_;
  uint64_t seen = 0;
  const auto address = reinterpret_cast<void*>(controls[next].probe_address);
  // Writing the word back unchanged shows writes are allowed too (a seccomp filter could differ).
  const bool ok = cross_memory_read(controls[next].pid.load(), &seen, address, sizeof seen) == 0 &&
                  seen == (kSegmentMagic ^ static_cast<uint64_t>(next)) &&
                  cross_memory_write(controls[next].pid.load(), address, &seen, sizeof seen) == 0;
  controls[rank_].can_reach_peer = ok ? 1 : 0;
  meet("shared memory set-up", until);
  // Every rank sees the same flags, so every rank takes the same path.
  single_copy_ = true;
  for (int r = 0; r < size_; ++r) single_copy_ = single_copy_ && controls[r].can_reach_peer != 0;
  peer_chunks_.assign(static_cast<size_t>(size_), std::vector<char>());
}

void ShmCommunicator::read_peer(int peer, void* local, uint64_t remote, size_t bytes,
                                const char* op) {
  if (bytes == 0) return;
  const int32_t pid = rank_controls(header_)[peer].pid.load();
  const int error = cross_memory_read(pid, local, reinterpret_cast<const void*>(remote), bytes);
  if (error != 0) peer_copy_failed(peer, pid, error, "reading", op);
}

void ShmCommunicator::write_peer(int peer, uint64_t remote, const void* local, size_t bytes,
                                 const char* op) {
  if (bytes == 0) return;
  barrier_->throw_if_broken(op);  // a peer that gave up may have left: write nothing more
  const int32_t pid = rank_controls(header_)[peer].pid.load();
  const int error = cross_memory_write(pid, reinterpret_cast<void*>(remote), local, bytes);
  if (error != 0) peer_copy_failed(peer, pid, error, "writing", op);
}

void ShmCommunicator::peer_copy_failed(int peer, int32_t pid, int error, const char* how,
                                       const char* op) {
  const bool gone = error == ESRCH || !process_alive(pid);
  const std::string message = std::string(op) + " on " + group_label_ + ": " +
                              (gone ? "rank " + std::to_string(peer) + " (pid " +
                                          std::to_string(pid) + ") exited mid-collective"
                                    : std::string(how) + " rank " + std::to_string(peer) +
                                          "'s buffer failed (" + std::strerror(error) + ")") +
                              ". The group cannot continue; destroy it and restart the job.";
  barrier_->mark_broken("rank " + std::to_string(rank_) + ": " + message);
  broken_reason_ = message;
  throw TransportError(DOMINO_ERR_PEER, message);
}

template <class Pushes>
void ShmCommunicator::push_then_meet(const char* op, Deadline until, Pushes&& pushes) {
  std::atomic<uint32_t>& pushing = rank_controls(header_)[rank_].pushing;
  try {
    pushing.store(1);
    pushes();
    pushing.store(0);
    meet(op, until);  // from here nobody writes into this rank's buffers
  } catch (...) {
    pushing.store(0);
    settle_pushes(op);
    throw;
  }
}

void ShmCommunicator::settle_pushes(const char* op) {
  // Marked before looking at the flags: a peer sets its flag before it checks for a broken
  // group ahead of every write, so either it sees the mark or this rank sees its flag.
  barrier_->mark_broken("rank " + std::to_string(rank_) + " left " + op + " on an error");
  RankControl* controls = rank_controls(header_);
  const auto limit = std::chrono::steady_clock::now() + kSettleLimit;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    for (int polls = 0; controls[r].pushing.load() != 0; ++polls) {
      // A peer that is gone or stopped for good cannot be waited out.
      if (std::chrono::steady_clock::now() >= limit) break;
      if (polls % 200 == 199 && !process_alive(controls[r].pid.load())) break;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

void ShmCommunicator::allreduce_single_copy(const domino_buffer_t& send,
                                            const domino_buffer_t& recv, domino_redop_t op,
                                            const OpDescriptor& mine) {
  const size_t element = dtype_size(send.dtype);
  const size_t count = send.count;
  const auto* in = static_cast<const char*>(send.ptr);
  auto* out = static_cast<char*>(recv.ptr);
  const std::vector<Addresses> peers = exchange_addresses(Op::kAllReduce, mine, in, out);
  const Deadline until = deadline();
  const size_t chunk = slot_bytes_ / element;
  // Each rank reduces its slice, reading the peers' inputs chunk by chunk, and writes every
  // reduced chunk into the peers' outputs while it is still in its cache.
  const auto [lo, hi] = slice_of(count, size_, rank_, element);
  push_then_meet("allreduce", until, [&] {
    for (size_t at = lo; at < hi; at += chunk) {
      if (at > lo) yield_to_priority(until);
      const size_t n = std::min(chunk, hi - at);
      for (int q = 0; q < size_; ++q) {
        if (q == rank_) {
          inputs_[static_cast<size_t>(q)] = in + at * element;
          continue;
        }
        auto& buffer = peer_chunks_[static_cast<size_t>(q)];
        buffer.resize(std::max(buffer.size(), chunk * element));
        read_peer(q, buffer.data(), peers[static_cast<size_t>(q)].in + at * element, n * element,
                  "allreduce");
        inputs_[static_cast<size_t>(q)] = buffer.data();
      }
      reduce_buffers(out + at * element, inputs_.data(), size_, n, send.dtype, op);
      for (int q = 0; q < size_; ++q) {
        if (q == rank_) continue;
        write_peer(q, peers[static_cast<size_t>(q)].out + at * element, out + at * element,
                   n * element, "allreduce");
      }
    }
  });
}

void ShmCommunicator::allgather_single_copy(const domino_buffer_t& send,
                                            const domino_buffer_t& recv, const OpDescriptor& mine) {
  const size_t element = dtype_size(send.dtype);
  const size_t bytes = send.count * element;
  const auto* in = static_cast<const char*>(send.ptr);
  auto* out = static_cast<char*>(recv.ptr);
  const std::vector<Addresses> peers = exchange_addresses(Op::kAllGather, mine, in, out);
  const Deadline until = deadline();
  // Each rank pushes its block to the peers piece by piece right after copying the piece into
  // its own output, so its input is read from memory once.
  char* own = out + static_cast<size_t>(rank_) * bytes;
  const uint64_t offset = static_cast<uint64_t>(rank_) * bytes;
  // An input that partly overlaps its place in the output moves in one piece, before any push.
  const bool overlapping = own != in && in < own + bytes && own < in + bytes;
  if (overlapping) std::memmove(own, in, bytes);
  push_then_meet("allgather", until, [&] {
    for (size_t at = 0; at < bytes; at += slot_bytes_) {
      if (at > 0) yield_to_priority(until);
      const size_t n = std::min(slot_bytes_, bytes - at);
      if (own != in && !overlapping) std::memcpy(own + at, in + at, n);
      for (int q = 0; q < size_; ++q) {
        if (q == rank_) continue;
        write_peer(q, peers[static_cast<size_t>(q)].out + offset + at, own + at, n, "allgather");
      }
    }
  });
}

void ShmCommunicator::reduce_scatter_single_copy(const domino_buffer_t& send,
                                                 const domino_buffer_t& recv, domino_redop_t op,
                                                 const OpDescriptor& mine) {
  const size_t element = dtype_size(send.dtype);
  const size_t count = recv.count;
  const auto* in = static_cast<const char*>(send.ptr);
  auto* out = static_cast<char*>(recv.ptr);
  const std::vector<Addresses> peers = exchange_addresses(Op::kReduceScatter, mine, in, out);
  const Deadline until = deadline();
  const size_t chunk = slot_bytes_ / element;
  const size_t block = static_cast<size_t>(rank_) * count;
  for (size_t at = 0; at < count; at += chunk) {
    if (at > 0) yield_to_priority(until);
    const size_t n = std::min(chunk, count - at);
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) {
        inputs_[static_cast<size_t>(q)] = in + (block + at) * element;
        continue;
      }
      auto& buffer = peer_chunks_[static_cast<size_t>(q)];
      buffer.resize(std::max(buffer.size(), chunk * element));
      read_peer(q, buffer.data(), peers[static_cast<size_t>(q)].in + (block + at) * element,
                n * element, "reduce_scatter");
      inputs_[static_cast<size_t>(q)] = buffer.data();
    }
    reduce_buffers(out + at * element, inputs_.data(), size_, n, send.dtype, op);
  }
  meet("reduce_scatter", until);
}

namespace {
using topology::Collective;
template <Collective>
struct SingleCopy;
}  // namespace

// Every rank's probe found the same (probe_single_copy), so every rank refuses alike.
template <>
void run_path<SingleCopy<Collective::kAllReduce>>(ShmCommunicator& comm,
                                                  const domino_call_t& call) {
  if (!comm.single_copy_) comm.refuse(Collective::kAllReduce, kCannotRead);
  const OpDescriptor mine = comm.start_reduce(Collective::kAllReduce, call, -1);
  comm.allreduce_single_copy(*call.send, *call.recv, call.redop, mine);
}

template <>
void run_path<SingleCopy<Collective::kAllGather>>(ShmCommunicator& comm,
                                                  const domino_call_t& call) {
  if (!comm.single_copy_) comm.refuse(Collective::kAllGather, kCannotRead);
  comm.allgather_single_copy(*call.send, *call.recv, comm.start_allgather(call));
}

template <>
void run_path<SingleCopy<Collective::kReduceScatter>>(ShmCommunicator& comm,
                                                      const domino_call_t& call) {
  if (!comm.single_copy_) comm.refuse(Collective::kReduceScatter, kCannotRead);
  const OpDescriptor mine = comm.start_reduce_scatter(call);
  comm.reduce_scatter_single_copy(*call.send, *call.recv, call.redop, mine);
}

namespace {
template <Collective op>
bool add(topology::Seconds seconds) {
  return register_shm_algorithm({"single_copy",
                                 "read straight from the peers' memory (process_vm_readv)",
                                 {topology::collective_name(op)},
                                 topology::AlgorithmHome::kShm,
                                 seconds,
                                 topology::shm_single_copy_runs},
                                run_path<SingleCopy<op>>);
}
const bool registered =
    add<Collective::kAllReduce>(topology::shm_single_copy_allreduce_seconds) &&
    add<Collective::kAllGather>(topology::shm_single_copy_allgather_seconds) &&
    add<Collective::kReduceScatter>(topology::shm_single_copy_reduce_scatter_seconds);
}  // namespace

}  // namespace domino::shm
