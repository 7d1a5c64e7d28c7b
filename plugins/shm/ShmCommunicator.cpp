#include "ShmCommunicator.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "../common/Bootstrap.h"
#include "../common/Dtype.h"
#include "../common/Reduction.h"
#include "../common/TransportError.h"
#include "FdHandoff.h"

namespace domino::shm {

namespace {
constexpr uint64_t kDefaultWorkspaceBytesPerRank = 4ull << 20;
constexpr uint64_t kMinSlotBytes = 64ull << 10;
constexpr uint64_t kDefaultSmallMessageBytes = 32ull << 10;
constexpr size_t kSliceAlignBytes = 64;

std::string label_for(const domino_comm_config_t& c) {
  std::string ranks;
  for (int i = 0; i < c.size; ++i) {
    if (i > 0) ranks += ",";
    ranks += std::to_string(c.global_ranks != nullptr ? c.global_ranks[i] : i);
  }
  return "group '" + std::string(c.group_name != nullptr ? c.group_name : "?") + "' (global ranks " +
         ranks + "; this is group rank " + std::to_string(c.rank) + ")";
}

// Element range [lo, hi) of slice `index` when `count` elements are cut into `parts`.
std::pair<size_t, size_t> slice_of(size_t count, int parts, int index, size_t element_bytes) {
  const size_t align = std::max<size_t>(1, kSliceAlignBytes / element_bytes);
  size_t per = (count + static_cast<size_t>(parts) - 1) / static_cast<size_t>(parts);
  per = (per + align - 1) / align * align;
  const size_t lo = std::min(count, per * static_cast<size_t>(index));
  return {lo, std::min(count, lo + per)};
}
}  // namespace

ShmCommunicator::ShmCommunicator(const domino_comm_config_t& config)
    : rank_(config.rank),
      size_(config.size),
      group_label_(label_for(config)),
      timeout_(config.timeout_ms > 0 ? config.timeout_ms : 30 * 60 * 1000),
      small_message_bytes_(config.small_message_bytes > 0 ? config.small_message_bytes
                                                          : kDefaultSmallMessageBytes) {
  if (size_ < 1 || rank_ < 0 || rank_ >= size_) {
    throw TransportError(DOMINO_ERR_INVALID, "shm: rank " + std::to_string(rank_) +
                                                 " is outside a group of size " +
                                                 std::to_string(size_));
  }
  const uint64_t workspace = config.workspace_bytes > 0
                                 ? config.workspace_bytes
                                 : kDefaultWorkspaceBytesPerRank * static_cast<uint64_t>(size_);
  const Deadline until = deadline();
  const Bootstrap bootstrap(config.bootstrap);

  if (rank_ == 0) {
    uint64_t slot = workspace / (2ull * static_cast<uint64_t>(size_));
    if (config.chunk_bytes > 0) slot = std::min<uint64_t>(slot, config.chunk_bytes);
    slot_bytes_ = std::max<uint64_t>(kMinSlotBytes, slot / kPage * kPage);
    const size_t payload_offset = control_bytes(size_);
    const size_t total = payload_offset + 2 * static_cast<size_t>(size_) * slot_bytes_;
    segment_ = SharedSegment::create(total, "g" + std::to_string(size_));
    header_ = new (segment_.data()) SegmentHeader();
    header_->size = size_;
    header_->parity_count = 2;
    header_->slot_bytes = slot_bytes_;
    header_->payload_offset = payload_offset;
    for (int r = 0; r < size_; ++r) new (&rank_controls(header_)[r]) RankControl();
    header_->magic = kSegmentMagic;
    if (size_ > 1) {
      FdServer server;
      bootstrap.set("shm/ticket", server.ticket());
      server.serve(segment_.fd(), size_ - 1, until);
    }
  } else {
    const std::string ticket = bootstrap.get("shm/ticket", timeout_);
    segment_ = SharedSegment::adopt(receive_fd(ticket, until));
    header_ = static_cast<SegmentHeader*>(segment_.data());
    if (header_->magic != kSegmentMagic || header_->size != size_) {
      throw TransportError(DOMINO_ERR_SYSTEM,
                           "shm: the segment received for " + group_label_ +
                               " does not match this group (size " +
                               std::to_string(header_->size) + "); ranks disagree on the group");
    }
    slot_bytes_ = header_->slot_bytes;
  }
  rank_controls(header_)[rank_].pid.store(static_cast<int32_t>(getpid()));
  barrier_.emplace(header_, rank_, size_, group_label_);
  inputs_.resize(static_cast<size_t>(size_));
  meet("shared memory set-up", until);
}

const char* ShmCommunicator::op_name(uint32_t op) {
  switch (static_cast<Op>(op)) {
    case Op::kBarrier:
      return "barrier";
    case Op::kAllreduce:
      return "allreduce";
  }
  return "unknown collective";
}

char* ShmCommunicator::slot(uint32_t parity, int rank) const {
  return static_cast<char*>(segment_.data()) + header_->payload_offset +
         (static_cast<size_t>(parity) * static_cast<size_t>(size_) + static_cast<size_t>(rank)) *
             slot_bytes_;
}

void ShmCommunicator::check_usable(const char* op) const {
  if (!broken_reason_.empty()) {
    throw TransportError(DOMINO_ERR_PEER, std::string(op) + " on " + group_label_ +
                                              " refused: the group broke earlier (" +
                                              broken_reason_ +
                                              "). Destroy the process group and create a new one.");
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

std::string ShmCommunicator::describe(const OpDescriptor& d) const {
  std::string s = op_name(d.op);
  if (static_cast<Op>(d.op) == Op::kBarrier) return s + " #" + std::to_string(d.sequence);
  s += " #" + std::to_string(d.sequence) + " of " + std::to_string(d.count) + " x " +
       dtype_name(static_cast<domino_dtype_t>(d.dtype));
  if (static_cast<Op>(d.op) == Op::kAllreduce) {
    s += std::string(" ") + redop_name(static_cast<domino_redop_t>(d.redop));
  }
  if (d.root >= 0) s += " root " + std::to_string(d.root);
  return s;
}

void ShmCommunicator::open_round(const OpDescriptor& mine, const char* op, Deadline until) {
  RankControl* controls = rank_controls(header_);
  controls[rank_].descriptor[parity_] = mine;
  meet(op, until);
  bool agree = true;
  for (int r = 0; r < size_ && agree; ++r) {
    agree = std::memcmp(&controls[r].descriptor[parity_], &mine, sizeof mine) == 0;
  }
  if (agree) return;
  std::string calls;
  for (int r = 0; r < size_; ++r) {
    calls += "\n  rank " + std::to_string(r) + ": " + describe(controls[r].descriptor[parity_]);
  }
  close_round();  // every rank saw the same descriptors, so all leave this round together
  throw TransportError(DOMINO_ERR_MISMATCH,
                       std::string(op) + " on " + group_label_ +
                           ": ranks disagree on the collective:" + calls +
                           "\nEvery rank must issue the same collectives in the same order, with "
                           "the same sizes, dtypes and ops.");
}

void ShmCommunicator::barrier() {
  check_usable("barrier");
  OpDescriptor mine{static_cast<uint32_t>(Op::kBarrier), 0, 0, -1, 0, ++sequence_};
  open_round(mine, "barrier", deadline());
  close_round();
}

void ShmCommunicator::allreduce(const domino_buffer_t& send, const domino_buffer_t& recv,
                                domino_redop_t op) {
  check_usable("allreduce");
  const std::string unsupported = reduction_unsupported_reason(send.dtype, op);
  if (!unsupported.empty()) {
    throw TransportError(DOMINO_ERR_INVALID, "allreduce on " + group_label_ + ": " + unsupported);
  }
  if (send.count != recv.count || send.dtype != recv.dtype) {
    throw TransportError(DOMINO_ERR_INVALID,
                         "allreduce on " + group_label_ + ": input has " +
                             std::to_string(send.count) + " elements but output has " +
                             std::to_string(recv.count));
  }
  const size_t element = dtype_size(send.dtype);
  const size_t count = send.count;
  const auto* in = static_cast<const char*>(send.ptr);
  auto* out = static_cast<char*>(recv.ptr);
  const OpDescriptor mine{static_cast<uint32_t>(Op::kAllreduce), static_cast<uint32_t>(send.dtype),
                          static_cast<uint32_t>(op), -1, count, ++sequence_};
  const Deadline until = deadline();

  if (count * element <= std::min(small_message_bytes_, slot_bytes_)) {
    std::memcpy(slot(parity_, rank_), in, count * element);
    open_round(mine, "allreduce", until);
    for (int r = 0; r < size_; ++r) inputs_[static_cast<size_t>(r)] = slot(parity_, r);
    reduce_buffers(out, inputs_.data(), size_, count, send.dtype, op);
    close_round();
    return;
  }

  const size_t chunk_elements = slot_bytes_ / element;
  bool first = true;
  for (size_t offset = 0; offset < count; offset += chunk_elements) {
    const size_t n = std::min(chunk_elements, count - offset);
    std::memcpy(slot(parity_, rank_), in + offset * element, n * element);
    if (first) {
      open_round(mine, "allreduce", until);
      first = false;
    } else {
      meet("allreduce", until);
    }
    const auto [lo, hi] = slice_of(n, size_, rank_, element);
    for (int r = 0; r < size_; ++r) inputs_[static_cast<size_t>(r)] = slot(parity_, r) + lo * element;
    reduce_buffers(slot(parity_, rank_) + lo * element, inputs_.data(), size_, hi - lo, send.dtype, op);
    meet("allreduce", until);
    for (int r = 0; r < size_; ++r) {
      const auto [rlo, rhi] = slice_of(n, size_, r, element);
      std::memcpy(out + (offset + rlo) * element, slot(parity_, r) + rlo * element, (rhi - rlo) * element);
    }
    close_round();
  }
}

}  // namespace domino::shm
