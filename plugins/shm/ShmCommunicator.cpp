#include "ShmCommunicator.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "CrossMemory.h"
#include "FdHandoff.h"
#include "ShmAlgorithms.h"
#include "Slices.h"
#include "WaitWord.h"
#include "plugins/common/Bootstrap.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"
#include "plugins/common/TransportError.h"

namespace domino::shm {

namespace {
// Chunks that stay in L2 beat fewer, larger rounds; much smaller ones cost too many barriers
// when ranks outnumber cores (measured with bench/cpp/shm_latency).
constexpr uint64_t kDefaultSlotBytes = 512ull << 10;
constexpr uint64_t kChannelBytes = 128ull << 10;
std::string label_for(const domino_comm_config_t& c) {
  std::string ranks;
  for (int i = 0; i < c.size; ++i) {
    if (i > 0) ranks += ",";
    ranks += std::to_string(c.global_ranks != nullptr ? c.global_ranks[i] : i);
  }
  return "group '" + std::string(c.group_name != nullptr ? c.group_name : "?") +
         "' (global ranks " + ranks + "; this is group rank " + std::to_string(c.rank) + ")";
}

[[noreturn]] void invalid(const std::string& message) {
  throw TransportError(DOMINO_ERR_INVALID, message);
}
}  // namespace

ShmCommunicator::ShmCommunicator(const domino_comm_config_t& config)
    : rank_(config.rank),
      size_(config.size),
      group_label_(label_for(config)),
      timeout_(
          std::chrono::milliseconds(config.timeout_ms > 0 ? config.timeout_ms : 30 * 60 * 1000)),
      should_pause_(config.should_pause),
      pause_context_(config.pause_context) {
  if (size_ < 1 || rank_ < 0 || rank_ >= size_) {
    invalid("shm: rank " + std::to_string(rank_) + " is outside a group of size " +
            std::to_string(size_));
  }
  const uint64_t workspace = config.workspace_bytes > 0
                                 ? config.workspace_bytes
                                 : 2 * kDefaultSlotBytes * static_cast<uint64_t>(size_);
  const Deadline until = deadline();
  const Bootstrap bootstrap(config.bootstrap);

  if (rank_ == 0) {
    uint64_t slot = workspace / (2ull * static_cast<uint64_t>(size_));
    if (config.chunk_bytes > 0) slot = std::min<uint64_t>(slot, config.chunk_bytes);
    slot_bytes_ = std::max<uint64_t>(kMinSlotBytes, slot / kPage * kPage);
    const auto geometry = segment_geometry(size_, slot_bytes_, kChannelBytes);
    if (!geometry) {
      invalid("shm: " + group_label_ + " asks for slots of " + std::to_string(slot_bytes_) +
              " bytes, more than the address space holds; lower DOMINO_SHM_BYTES");
    }
    segment_ = SharedSegment::create(geometry->total_bytes, "g" + std::to_string(size_));
    header_ = new (segment_.data()) SegmentHeader();
    header_->size = size_;
    header_->slot_bytes = slot_bytes_;
    header_->payload_offset = geometry->payload_offset;
    header_->channel_offset = geometry->channel_offset;
    header_->link_offset = geometry->link_offset;
    header_->channel_bytes = kChannelBytes;
    for (int r = 0; r < size_; ++r) new (&rank_controls(header_)[r]) RankControl();
    header_->magic = kSegmentMagic;
    if (size_ > 1) {
      FdServer server;
      bootstrap.set("shm/ticket", server.ticket());
      server.serve(segment_.fd(), size_ - 1, until);
    }
  } else {
    const std::string ticket = bootstrap.get("shm/ticket", timeout_.load());
    segment_ = SharedSegment::adopt(receive_fd(ticket, until));
    const std::string problem = segment_header_problem(segment_.data(), segment_.size(), size_);
    if (!problem.empty()) {
      throw TransportError(
          DOMINO_ERR_SYSTEM,
          "shm: the segment rank 0 handed to " + group_label_ + " cannot be used: " + problem +
              ". Ranks disagree on the group or run different torch-domino "
              "builds; give every rank the same build and create the group again.");
    }
    header_ = static_cast<SegmentHeader*>(segment_.data());
    slot_bytes_ = header_->slot_bytes;
  }
  rank_controls(header_)[rank_].pid.store(static_cast<int32_t>(getpid()));
  barrier_.emplace(header_, rank_, size_, group_label_);
  p2p_.emplace(header_, rank_, size_, &*barrier_, group_label_, timeout_.load());
  links_.emplace(header_, rank_, size_, &*barrier_, group_label_, timeout_.load());
  inputs_.resize(static_cast<size_t>(size_));
  meet("shared memory set-up", until);
  if (config.single_copy >= 0) probe_single_copy(until);
  own_cost_ = shm_own_cost(static_cast<int>(host_cores()), single_copy_);
}

size_t ShmCommunicator::rounds_for(size_t count, size_t per_round) {
  // Rounded up without forming count + per_round: all-to-all's count is the largest any peer
  // published, and a wrapped sum would mean no rounds at all.
  return per_round == 0 ? 1 : count / per_round + (count % per_round != 0 ? 1 : 0);
}

std::vector<ShmCommunicator::Addresses> ShmCommunicator::exchange_addresses(
    Op op, const OpDescriptor& mine, const void* in, const void* out) {
  std::vector<Addresses> all(static_cast<size_t>(size_));
  const Addresses own{reinterpret_cast<uint64_t>(in), reinterpret_cast<uint64_t>(out)};
  run_chunks(
      op, mine, 1, 1, [&](size_t, size_t) { std::memcpy(slot(rank_), &own, sizeof own); },
      [&](size_t, size_t) {
        for (int r = 0; r < size_; ++r)
          std::memcpy(&all[static_cast<size_t>(r)], slot(r), sizeof(Addresses));
      });
  return all;
}

const char* ShmCommunicator::op_name(uint32_t code) {
  return code >= 1 && code <= topology::kCollectiveCount
             ? topology::entry_name(static_cast<Op>(code - 1))
             : "unknown collective";
}

char* ShmCommunicator::slot(int rank) const {
  return static_cast<char*>(segment_.data()) + header_->payload_offset +
         (static_cast<size_t>(parity_) * static_cast<size_t>(size_) + static_cast<size_t>(rank)) *
             slot_bytes_;
}

void ShmCommunicator::check_usable(const char* op) const {
  // The shared flag too: another rank (or this one's abort) may have ended the group.
  const bool shared = barrier_ && barrier_->broken();
  if (!broken_reason_.empty() || shared) {
    throw TransportError(DOMINO_ERR_PEER,
                         std::string(op) + " on " + group_label_ +
                             " refused: the group broke earlier (" +
                             (broken_reason_.empty() ? barrier_->broken_reason() : broken_reason_) +
                             "). Destroy the process group and create a new one.");
  }
}

void ShmCommunicator::abort() {
  if (barrier_) {
    barrier_->mark_broken("rank " + std::to_string(rank_) +
                          " ended the group's communication (ProcessGroup abort(), or "
                          "shrink_group, which leaves out the ranks it excludes)");
  }
}

void ShmCommunicator::check_root(const char* op, int root) const {
  if (root < 0 || root >= size_) {
    invalid(std::string(op) + " on " + group_label_ + ": root " + std::to_string(root) +
            " is not a rank of this group of " + std::to_string(size_));
  }
}

void ShmCommunicator::meet(const char* op, Deadline until) {
  try {
    barrier_->arrive_and_wait(++phase_, until, op);
  } catch (const TransportError& e) {
    broken_reason_ = e.what();
    throw;
  }
}

OpDescriptor ShmCommunicator::describe_call(Op op, const domino_buffer_t& buffer,
                                            domino_redop_t redop, int root, uint64_t count) {
  check_usable(op_name(op_code(op)));
  return OpDescriptor{
      op_code(op), static_cast<uint32_t>(buffer.dtype), static_cast<uint32_t>(redop), root, count,
      ++sequence_};
}

std::string ShmCommunicator::describe(const OpDescriptor& d) const {
  std::string s = std::string(op_name(d.op)) + " #" + std::to_string(d.sequence);
  const auto op = static_cast<Op>(d.op - 1);
  if (op == Op::kBarrier) return s;
  s += " of " + std::to_string(d.count) + " x " + dtype_name(static_cast<domino_dtype_t>(d.dtype));
  if (op == Op::kAllReduce || op == Op::kReduce || op == Op::kReduceScatter) {
    s += std::string(" ") + redop_name(static_cast<domino_redop_t>(d.redop));
  }
  if (d.root >= 0) s += " root " + std::to_string(d.root);
  return s;
}

void ShmCommunicator::open_round(const OpDescriptor& mine, const char* op, Deadline until) {
  RankControl* controls = rank_controls(header_);
  // In the line of the phase this round meets at, beside the arrival that publishes it.
  phase_line(controls, rank_, phase_ + 1).descriptor = mine;
  meet(op, until);
  bool agree = true;
  for (int r = 0; r < size_ && agree; ++r) {
    agree = std::memcmp(&phase_line(controls, r, phase_).descriptor, &mine, sizeof mine) == 0;
  }
  if (agree) return;
  std::string calls;
  for (int r = 0; r < size_; ++r) {
    calls += "\n  rank " + std::to_string(r) + ": " +
             describe(phase_line(controls, r, phase_).descriptor);
  }
  close_round();  // every rank saw the same descriptors, so all leave this round together
  throw TransportError(DOMINO_ERR_MISMATCH,
                       std::string(op) + " on " + group_label_ +
                           ": ranks disagree on the collective:" + calls +
                           "\nEvery rank must issue the same collectives in the same order, with "
                           "the same sizes, dtypes and ops.");
}

void ShmCommunicator::yield_to_priority(Deadline until) const {
  if (should_pause_ == nullptr) return;
  // Peers simply wait at the next barrier meanwhile; the pause never outlasts the deadline.
  // Sleep rather than yield: the point is to hand this core to the urgent work.
  while (should_pause_(pause_context_) != 0 && !barrier_->broken() &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void ShmCommunicator::stage_blocks(const char* source, size_t count, size_t offset, size_t n,
                                   size_t chunk, size_t element) {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    std::memcpy(slot(rank_) + static_cast<size_t>(r) * chunk * element,
                source + (static_cast<size_t>(r) * count + offset) * element, n * element);
  }
}

void ShmCommunicator::barrier() {
  const OpDescriptor mine = describe_call(Op::kBarrier, domino_buffer_t{}, DOMINO_SUM, -1, 0);
  run_chunks(
      Op::kBarrier, mine, 0, 1, [](size_t, size_t) {}, [](size_t, size_t) {});
}

OpDescriptor ShmCommunicator::start_reduce(Op kind, const domino_call_t& call, int root) {
  const domino_buffer_t& send = *call.send;
  const domino_buffer_t& recv = *call.recv;
  const char* name = op_name(op_code(kind));
  const std::string unsupported = reduction_unsupported_reason(send.dtype, call.redop);
  if (!unsupported.empty()) invalid(std::string(name) + " on " + group_label_ + ": " + unsupported);
  const bool receives = root < 0 || root == rank_;
  if (receives && (send.count != recv.count || send.dtype != recv.dtype)) {
    invalid(std::string(name) + " on " + group_label_ + ": input has " +
            std::to_string(send.count) + " elements but output has " + std::to_string(recv.count));
  }
  return describe_call(kind, send, call.redop, root, send.count);
}

void ShmCommunicator::reduce_rounds(Op kind, const OpDescriptor& mine, const domino_call_t& call,
                                    int root, size_t whole_bytes) {
  const domino_buffer_t& send = *call.send;
  const domino_redop_t op = call.redop;
  const char* name = op_name(op_code(kind));
  const bool receives = root < 0 || root == rank_;
  const size_t element = dtype_size(send.dtype);
  const size_t count = send.count;
  const auto* in = static_cast<const char*>(send.ptr);
  auto* out = static_cast<char*>(call.recv->ptr);
  if (count * element <= std::min(whole_bytes, slot_bytes_)) {
    // Small enough for the line that publishes this rank's arrival: a peer gets the data with it
    // (the line of phase_ + 1, where this one round meets).
    const bool in_line = count * element <= kLinePayloadBytes;
    RankControl* controls = rank_controls(header_);
    auto data_of = [&](int r, uint64_t phase) -> void* {
      return in_line ? phase_line(controls, r, phase).payload : static_cast<void*>(slot(r));
    };
    run_chunks(
        kind, mine, count, std::max<size_t>(count, 1),
        [&](size_t, size_t) { std::memcpy(data_of(rank_, phase_ + 1), in, count * element); },
        [&](size_t, size_t) {
          if (!receives) return;
          for (int r = 0; r < size_; ++r) inputs_[static_cast<size_t>(r)] = data_of(r, phase_);
          reduce_buffers(out, inputs_.data(), size_, count, send.dtype, op);
        });
    return;
  }

  // Each rank copies in only the slices its peers reduce; its own slice it reads in place.
  const size_t chunk = slot_bytes_ / element;
  const Deadline until = deadline();
  run_chunks(
      kind, mine, count, chunk,
      [&](size_t offset, size_t n) {
        for (int r = 0; r < size_; ++r) {
          if (r == rank_) continue;
          const auto [lo, hi] = slice_of(n, size_, r, element);
          std::memcpy(slot(rank_) + lo * element, in + (offset + lo) * element,
                      (hi - lo) * element);
        }
      },
      [&](size_t offset, size_t n) {
        const auto [lo, hi] = slice_of(n, size_, rank_, element);
        for (int r = 0; r < size_; ++r) {
          inputs_[static_cast<size_t>(r)] =
              r == rank_ ? static_cast<const void*>(in + (offset + lo) * element)
                         : slot(r) + lo * element;
        }
        // A receiving rank reduces straight into its output and publishes the slice from there
        // while it is still in cache, instead of copying it back out of its slot later.
        char* own = slot(rank_) + lo * element;
        const size_t own_bytes = (hi - lo) * element;
        if (receives) {
          reduce_buffers(out + (offset + lo) * element, inputs_.data(), size_, hi - lo, send.dtype,
                         op);
          if (root < 0) std::memcpy(own, out + (offset + lo) * element, own_bytes);  // for peers
        } else {
          reduce_buffers(own, inputs_.data(), size_, hi - lo, send.dtype, op);
        }
        meet(name, until);
        if (!receives) return;
        for (int r = 0; r < size_; ++r) {
          if (r == rank_) continue;
          const auto [rlo, rhi] = slice_of(n, size_, r, element);
          std::memcpy(out + (offset + rlo) * element, slot(r) + rlo * element,
                      (rhi - rlo) * element);
        }
      });
}

void ShmCommunicator::broadcast(const domino_buffer_t& buffer, int root) {
  check_root("broadcast", root);
  const size_t element = dtype_size(buffer.dtype);
  const size_t count = buffer.count;
  auto* data = static_cast<char*>(buffer.ptr);
  const size_t chunk = slot_bytes_ / element;
  const OpDescriptor mine = describe_call(Op::kBroadcast, buffer, DOMINO_SUM, root, count);
  run_chunks(
      Op::kBroadcast, mine, count, chunk,
      [&](size_t offset, size_t n) {
        if (rank_ == root) std::memcpy(slot(rank_), data + offset * element, n * element);
      },
      [&](size_t offset, size_t n) {
        if (rank_ != root) std::memcpy(data + offset * element, slot(root), n * element);
      });
}

OpDescriptor ShmCommunicator::start_allgather(const domino_call_t& call) {
  const domino_buffer_t& send = *call.send;
  const domino_buffer_t& recv = *call.recv;
  if (recv.count != send.count * static_cast<size_t>(size_) || recv.dtype != send.dtype) {
    invalid("allgather on " + group_label_ + ": output has " + std::to_string(recv.count) +
            " elements but needs input (" + std::to_string(send.count) + ") x " +
            std::to_string(size_) + " ranks");
  }
  return describe_call(Op::kAllGather, send, DOMINO_SUM, -1, send.count);
}

void ShmCommunicator::collect(Op op, const OpDescriptor& mine, const domino_buffer_t& send,
                              const domino_buffer_t& recv, int root) {
  const size_t element = dtype_size(send.dtype);
  const size_t count = send.count;
  const auto* in = static_cast<const char*>(send.ptr);
  auto* out = static_cast<char*>(recv.ptr);
  run_chunks(
      op, mine, count, slot_bytes_ / element,
      [&](size_t offset, size_t n) {
        std::memcpy(slot(rank_), in + offset * element, n * element);
      },
      [&](size_t offset, size_t n) {
        if (root >= 0 && rank_ != root) return;
        for (int r = 0; r < size_; ++r) {
          std::memcpy(out + (static_cast<size_t>(r) * count + offset) * element, slot(r),
                      n * element);
        }
      });
}

OpDescriptor ShmCommunicator::start_reduce_scatter(const domino_call_t& call) {
  const domino_buffer_t& send = *call.send;
  const domino_buffer_t& recv = *call.recv;
  const std::string unsupported = reduction_unsupported_reason(send.dtype, call.redop);
  if (!unsupported.empty()) invalid("reduce_scatter on " + group_label_ + ": " + unsupported);
  if (send.count != recv.count * static_cast<size_t>(size_) || recv.dtype != send.dtype) {
    invalid("reduce_scatter on " + group_label_ + ": input has " + std::to_string(send.count) +
            " elements but needs output (" + std::to_string(recv.count) + ") x " +
            std::to_string(size_) + " ranks");
  }
  return describe_call(Op::kReduceScatter, send, call.redop, -1, recv.count);
}

void ShmCommunicator::reduce_scatter_rounds(const OpDescriptor& mine, const domino_call_t& call) {
  const domino_buffer_t& send = *call.send;
  const domino_redop_t op = call.redop;
  const size_t element = dtype_size(send.dtype);
  const size_t count = call.recv->count;  // per rank
  const auto* in = static_cast<const char*>(send.ptr);
  auto* out = static_cast<char*>(call.recv->ptr);
  const size_t chunk = slot_bytes_ / element / static_cast<size_t>(size_);
  run_chunks(
      Op::kReduceScatter, mine, count, chunk,
      [&](size_t offset, size_t n) { stage_blocks(in, count, offset, n, chunk, element); },
      [&](size_t offset, size_t n) {
        for (int r = 0; r < size_; ++r) {
          inputs_[static_cast<size_t>(r)] =
              r == rank_ ? in + (static_cast<size_t>(rank_) * count + offset) * element
                         : slot(r) + static_cast<size_t>(rank_) * chunk * element;
        }
        reduce_buffers(out + offset * element, inputs_.data(), size_, n, send.dtype, op);
      });
}

void ShmCommunicator::gather(const domino_buffer_t& send, const domino_buffer_t& recv, int root) {
  check_root("gather", root);
  if (rank_ == root && recv.count != send.count * static_cast<size_t>(size_)) {
    invalid("gather on " + group_label_ + ": the root's output has " + std::to_string(recv.count) +
            " elements but needs input (" + std::to_string(send.count) + ") x " +
            std::to_string(size_) + " ranks");
  }
  collect(Op::kGather, describe_call(Op::kGather, send, DOMINO_SUM, root, send.count), send, recv,
          root);
}

void ShmCommunicator::scatter(const domino_buffer_t& send, const domino_buffer_t& recv, int root) {
  check_root("scatter", root);
  if (rank_ == root && send.count != recv.count * static_cast<size_t>(size_)) {
    invalid("scatter on " + group_label_ + ": the root's input has " + std::to_string(send.count) +
            " elements but needs output (" + std::to_string(recv.count) + ") x " +
            std::to_string(size_) + " ranks");
  }
  const size_t element = dtype_size(recv.dtype);
  const size_t count = recv.count;
  const auto* in = static_cast<const char*>(send.ptr);
  auto* out = static_cast<char*>(recv.ptr);
  const size_t chunk = slot_bytes_ / element / static_cast<size_t>(size_);
  const OpDescriptor mine = describe_call(Op::kScatter, recv, DOMINO_SUM, root, count);
  run_chunks(
      Op::kScatter, mine, count, chunk,
      [&](size_t offset, size_t n) {
        if (rank_ == root) stage_blocks(in, count, offset, n, chunk, element);
      },
      [&](size_t offset, size_t n) {
        const char* from = rank_ == root
                               ? in + (static_cast<size_t>(root) * count + offset) * element
                               : slot(root) + static_cast<size_t>(rank_) * chunk * element;
        std::memcpy(out + offset * element, from, n * element);
      });
}

void ShmCommunicator::alltoall(const domino_call_t& call) {
  const domino_buffer_t& send = *call.send;
  const domino_buffer_t& recv = *call.recv;
  const uint64_t* send_counts = call.send_counts;
  const uint64_t* send_offsets = call.send_offsets;
  const uint64_t* recv_counts = call.recv_counts;
  const uint64_t* recv_offsets = call.recv_offsets;
  const size_t element = dtype_size(send.dtype);
  const auto p = static_cast<size_t>(size_);
  if (2 * p * sizeof(uint64_t) > slot_bytes_)
    invalid("alltoall: group too large for the workspace");
  // The count is compared first, so offset + count is never formed and cannot wrap.
  auto runs_past = [](uint64_t offset, uint64_t count, uint64_t total) {
    return count > total || offset > total - count;
  };
  for (size_t r = 0; r < p; ++r) {
    if (runs_past(send_offsets[r], send_counts[r], send.count) ||
        runs_past(recv_offsets[r], recv_counts[r], recv.count)) {
      invalid("alltoall on " + group_label_ + ": the split for rank " + std::to_string(r) +
              " (input " + std::to_string(send_counts[r]) + " elements at " +
              std::to_string(send_offsets[r]) + " of " + std::to_string(send.count) + ", output " +
              std::to_string(recv_counts[r]) + " at " + std::to_string(recv_offsets[r]) + " of " +
              std::to_string(recv.count) + ") runs past the end of the tensor");
    }
  }
  // Round 0 publishes every rank's split sizes so each rank can check the whole matrix and all
  // agree on the verdict and on how many data rounds follow.
  const OpDescriptor mine = describe_call(Op::kAllToAll, send, DOMINO_SUM, -1, 0);
  uint64_t largest = 0;
  std::string disagreement;
  run_chunks(
      Op::kAllToAll, mine, 1, 1,
      [&](size_t, size_t) {
        auto* counts = reinterpret_cast<uint64_t*>(slot(rank_));
        std::memcpy(counts, send_counts, p * sizeof(uint64_t));
        std::memcpy(counts + p, recv_counts, p * sizeof(uint64_t));
      },
      [&](size_t, size_t) {
        for (size_t s = 0; s < p; ++s) {
          const auto* of_s = reinterpret_cast<const uint64_t*>(slot(static_cast<int>(s)));
          for (size_t d = 0; d < p; ++d) {
            const uint64_t sends = of_s[d];
            const uint64_t expects =
                reinterpret_cast<const uint64_t*>(slot(static_cast<int>(d)))[p + s];
            largest = std::max(largest, sends);
            if (sends != expects && disagreement.empty()) {
              disagreement = "rank " + std::to_string(s) + " sends " + std::to_string(sends) +
                             " elements to rank " + std::to_string(d) + ", which expects " +
                             std::to_string(expects);
            }
          }
        }
      });
  if (!disagreement.empty()) {
    throw TransportError(DOMINO_ERR_MISMATCH,
                         "alltoall on " + group_label_ + ": split sizes disagree: " + disagreement +
                             ". Input splits of each rank must equal the output "
                             "splits its peers give for it.");
  }
  const size_t per_peer = slot_bytes_ / element / p;
  const auto* in = static_cast<const char*>(send.ptr);
  auto* out = static_cast<char*>(recv.ptr);
  const size_t rounds = rounds_for(largest, per_peer);
  const Deadline until = deadline();
  for (size_t round = 0; round < rounds && largest > 0; ++round) {
    if (round > 0) yield_to_priority(until);
    const size_t offset = round * per_peer;
    for (size_t d = 0; d < p; ++d) {
      if (send_counts[d] <= offset) continue;
      const size_t n = std::min<size_t>(per_peer, send_counts[d] - offset);
      std::memcpy(slot(rank_) + d * per_peer * element, in + (send_offsets[d] + offset) * element,
                  n * element);
    }
    meet("alltoall", until);
    for (size_t s = 0; s < p; ++s) {
      if (recv_counts[s] <= offset) continue;
      const size_t n = std::min<size_t>(per_peer, recv_counts[s] - offset);
      std::memcpy(out + (recv_offsets[s] + offset) * element,
                  slot(static_cast<int>(s)) + static_cast<size_t>(rank_) * per_peer * element,
                  n * element);
    }
    close_round();
  }
}

void ShmCommunicator::send(const domino_buffer_t& buffer, int peer, int32_t tag) {
  p2p_->send(buffer.ptr, buffer.count * dtype_size(buffer.dtype), peer, tag);
}

int ShmCommunicator::recv(const domino_buffer_t& buffer, int peer, int32_t tag) {
  return p2p_->recv(buffer.ptr, buffer.count * dtype_size(buffer.dtype), peer, tag);
}

}  // namespace domino::shm
