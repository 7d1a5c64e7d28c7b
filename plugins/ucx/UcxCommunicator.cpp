#include "UcxCommunicator.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "../common/Bootstrap.h"
#include "../common/Dtype.h"
#include "../common/Reduction.h"
#include "../common/TransportError.h"

namespace domino::ucx {

namespace {
// Tag layout: communicator id (24 bits) | kind (2) | source rank (14) | user tag (24).
constexpr int kSourceBits = 14;
constexpr int kUserTagBits = 24;
constexpr int kKindShift = kSourceBits + kUserTagBits;
constexpr int kCommShift = kKindShift + 2;
constexpr ucp_tag_t kCollective = 0;
constexpr ucp_tag_t kPointToPoint = 1;
constexpr ucp_tag_t kSourceMask = ((ucp_tag_t{1} << kSourceBits) - 1) << kUserTagBits;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};
// Collectives use the user-tag bits for the call's signature; receives match any signature and
// compare it afterwards, so a disagreement is reported instead of left to the timeout.
constexpr ucp_tag_t kSignatureMask = (ucp_tag_t{1} << kUserTagBits) - 1;
constexpr ucp_tag_t kCollectiveReceiveMask = kFullMask & ~kSignatureMask;

// Signature: op (4 bits) | dtype (6) | reduction (4) | root modulo 1024 (10).
constexpr const char* kCollectiveNames[] = {"",          "barrier",   "allreduce",      "reduce",
                                            "broadcast", "allgather", "reduce_scatter", "gather",
                                            "scatter",   "alltoall"};

int collective_index(const char* op) {
  for (size_t i = 1; i < std::size(kCollectiveNames); ++i) {
    if (std::strcmp(kCollectiveNames[i], op) == 0) return static_cast<int>(i);
  }
  return 0;
}

ucp_tag_t encode_signature(int op, int dtype, int redop, int root) {
  return (static_cast<ucp_tag_t>(op & 0xf) << 20) | (static_cast<ucp_tag_t>(dtype & 0x3f) << 14) |
         (static_cast<ucp_tag_t>(redop & 0xf) << 10) | static_cast<ucp_tag_t>(root & 0x3ff);
}

std::string describe_signature(ucp_tag_t signature) {
  const size_t op = (signature >> 20) & 0xf;
  const auto dtype = static_cast<domino_dtype_t>((signature >> 14) & 0x3f);
  const auto redop = static_cast<domino_redop_t>((signature >> 10) & 0xf);
  const int root = static_cast<int>(signature & 0x3ff);
  const std::string name = op < std::size(kCollectiveNames) ? kCollectiveNames[op] : "?";
  if (name == "barrier") return "a barrier";
  std::string text = (name[0] == 'a' ? "an " : "a ") + name + " of " + dtype_name(dtype);
  if (name == "allreduce" || name == "reduce" || name == "reduce_scatter") {
    text += std::string(" (") + redop_name(redop) + ")";
  }
  if (name == "reduce" || name == "broadcast" || name == "gather" || name == "scatter") {
    text += " with root " + std::to_string(root) + " (modulo 1024)";
  }
  return text;
}
constexpr size_t kDefaultSmallMessageBytes = 64 * 1024;
constexpr size_t kAddressCapacity = 64 * 1024;

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Blocks of a message cut into `parts` pieces whose sizes differ by at most one element.
struct Blocks {
  Blocks(size_t count, int parts) : count_(count), parts_(static_cast<size_t>(parts)) {}
  size_t offset(int block) const {
    const size_t b = static_cast<size_t>(block);
    const size_t base = count_ / parts_, extra = count_ % parts_;
    return b * base + (b < extra ? b : extra);
  }
  size_t size(int block) const { return offset(block + 1) - offset(block); }

 private:
  size_t count_, parts_;
};

void combine(char* into, const char* other, size_t count, domino_dtype_t dtype, domino_redop_t op) {
  const void* inputs[2] = {into, other};
  reduce_buffers(into, inputs, 2, count, dtype, op == DOMINO_AVG ? DOMINO_SUM : op);
}
}  // namespace

AllreduceAlgorithm parse_allreduce_algorithm(const char* name) {
  if (name == nullptr || name[0] == '\0') return AllreduceAlgorithm::kAuto;
  const std::string n(name);
  if (n == "ring") return AllreduceAlgorithm::kRing;
  if (n == "recursive_doubling") return AllreduceAlgorithm::kRecursiveDoubling;
  if (n == "rabenseifner") return AllreduceAlgorithm::kRabenseifner;
  throw TransportError(DOMINO_ERR_INVALID,
                       "the ucx transport has no all-reduce algorithm '" + n +
                           "'; it runs ring, recursive_doubling and rabenseifner");
}

const char* allreduce_algorithm_name(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::kRing:
      return "ring";
    case AllreduceAlgorithm::kRecursiveDoubling:
      return "recursive_doubling";
    case AllreduceAlgorithm::kRabenseifner:
      return "rabenseifner";
    default:
      return "auto";
  }
}

AllreduceAlgorithm auto_allreduce_algorithm(size_t bytes, int ranks, size_t small_message_bytes) {
  if (bytes <= small_message_bytes) return AllreduceAlgorithm::kRecursiveDoubling;
  // Both move 2(p-1)/p of the message; Rabenseifner in 2 log p rounds instead of 2(p-1), but
  // folding in a non-power of two costs a whole extra message, which the ring avoids.
  return std::has_single_bit(static_cast<unsigned>(ranks)) ? AllreduceAlgorithm::kRabenseifner
                                                           : AllreduceAlgorithm::kRing;
}

UcxCommunicator::UcxCommunicator(const domino_comm_config_t& config)
    : rank_(config.rank),
      size_(config.size),
      group_(config.group_name != nullptr ? config.group_name : "?"),
      timeout_(std::chrono::milliseconds(config.timeout_ms > 0 ? config.timeout_ms : 1800000)),
      small_message_bytes_(config.small_message_bytes != 0 ? config.small_message_bytes
                                                           : kDefaultSmallMessageBytes),
      algorithm_(parse_allreduce_algorithm(config.algorithm)),
      worker_(UcxWorker::instance()) {
  for (int r = 0; r < size_; ++r) {
    global_ranks_.push_back(config.global_ranks != nullptr ? config.global_ranks[r] : r);
  }
  if (size_ > (1 << kSourceBits)) {
    throw TransportError(DOMINO_ERR_INVALID, "the ucx transport serves at most " +
                                                 std::to_string(1 << kSourceBits) +
                                                 " ranks per group; group '" + group_ + "' has " +
                                                 std::to_string(size_));
  }
  // Every member derives the same id from the group's name; it keeps groups sharing the
  // process's one worker apart.
  comm_id_ = fnv1a(group_) & ((ucp_tag_t{1} << (64 - kCommShift)) - 1);
  const Bootstrap bootstrap(config.bootstrap);
  bootstrap.set("ucx/" + std::to_string(rank_), worker_.address());
  peer_addresses_.resize(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    peer_addresses_[static_cast<size_t>(r)] =
        r == rank_ ? worker_.address()
                   : bootstrap.get("ucx/" + std::to_string(r), timeout_.load(), kAddressCapacity);
  }
  // Claimed last, so a failed set-up above leaves nothing to release.
  if (!worker_.claim_id(comm_id_)) {
    throw TransportError(DOMINO_ERR_INVALID,
                         "ucx communicator for group '" + group_ +
                             "': its name hashes to the same message id as another live group "
                             "of this process, so their messages could mix. Create the group "
                             "again (it gets a new name) or destroy the other one first.");
  }
}

UcxCommunicator::~UcxCommunicator() {
  worker_.release_id(comm_id_);
}

UcxCommunicator::Call UcxCommunicator::start(const char* op, const char* algorithm) const {
  return Call{op, algorithm, std::chrono::steady_clock::now() + timeout_.load()};
}

UcxCommunicator::Call UcxCommunicator::start_collective(const char* op, const char* algorithm,
                                                        domino_dtype_t dtype, int redop,
                                                        int root) const {
  Call call = start(op, algorithm);
  call.signature = encode_signature(collective_index(op), dtype, redop, root);
  return call;
}

ucp_tag_t UcxCommunicator::collective_tag(int source, const Call& call) const {
  return (comm_id_ << kCommShift) | (kCollective << kKindShift) |
         (static_cast<ucp_tag_t>(source) << kUserTagBits) | call.signature;
}

Transfer UcxCommunicator::post_send(int peer, ucp_tag_t tag, const void* data, size_t bytes) {
  return worker_.post_send(peer_addresses_[static_cast<size_t>(peer)], peer, tag, data, bytes);
}

Transfer UcxCommunicator::post_receive(int peer, ucp_tag_t tag, ucp_tag_t mask, void* data,
                                       size_t bytes) {
  return worker_.post_receive(peer, tag, mask, data, bytes);
}

std::string UcxCommunicator::describe_ranks(const std::vector<int>& ranks) const {
  std::string out;
  for (int r : ranks) {
    if (r < 0) {
      out += (out.empty() ? "" : ", ") + std::string("any rank");
      continue;
    }
    out += (out.empty() ? "" : ", ") + std::to_string(r) + " (global " +
           std::to_string(global_ranks_[static_cast<size_t>(r)]) + ")";
  }
  return out;
}

void UcxCommunicator::finish(const Call& call, std::vector<Transfer>& transfers) {
  const std::vector<size_t> late = worker_.wait(
      transfers, call.deadline, call.signature != 0 ? kSignatureMask : 0, call.signature);
  // Built only for an error: finish() runs for every message of every collective.
  auto where = [&] {
    return std::string("ucx ") + call.op +
           (call.algorithm[0] ? std::string(" (") + call.algorithm + ")" : "") + " on group '" +
           group_ + "' (rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ")";
  };
  for (const Transfer& t : transfers) {
    if (!t.is_receive || call.signature == 0) continue;
    if (t.status != UCS_OK && t.status != UCS_ERR_MESSAGE_TRUNCATED) continue;
    const ucp_tag_t theirs = t.sender_tag & kSignatureMask;
    if (theirs == call.signature || theirs == 0) continue;  // 0: UCX gave no tag
    // Broken, not recoverable: partners may have more messages of their op in flight.
    throw TransportError(DOMINO_ERR_PEER,
                         where() + ": rank " + describe_ranks({t.peer}) + " sent its part of " +
                             describe_signature(theirs) + " where this rank runs " +
                             describe_signature(call.signature) +
                             ": the ranks disagree on the collective, its dtype, its reduction "
                             "or its root. Every rank must issue the same collectives in the "
                             "same order with the same dtype, op and root; this group cannot "
                             "continue.");
  }
  if (!late.empty()) {
    std::vector<int> peers;
    for (size_t i : late) {
      const int peer = transfers[i].peer;
      if (peer >= 0 && std::find(peers.begin(), peers.end(), peer) == peers.end()) {
        peers.push_back(peer);
      }
    }
    throw TransportError(DOMINO_ERR_TIMEOUT,
                         where() + ": rank(s) " + (peers.empty() ? "any" : describe_ranks(peers)) +
                             " did not take part within " +
                             std::to_string(timeout_.load().count()) +
                             " ms; they may have died, hang, or not have called " + call.op +
                             ". Check those ranks' logs; raise the group timeout if they are "
                             "just slow.");
  }
  // The transfer that failed first explains the rest, which were cancelled because of it.
  std::stable_partition(transfers.begin(), transfers.end(),
                        [](const Transfer& t) { return t.status != UCS_ERR_CANCELED; });
  for (const Transfer& t : transfers) {
    if (t.status == UCS_ERR_MESSAGE_TRUNCATED ||
        (t.status == UCS_OK && t.is_receive && t.received_bytes != t.bytes)) {
      // Broken, not recoverable: partners may have more messages of this op in flight.
      throw TransportError(DOMINO_ERR_PEER,
                           where() + ": rank " + describe_ranks({t.peer}) + " sent " +
                               (t.status == UCS_OK ? std::to_string(t.received_bytes) + " bytes"
                                                   : std::string("more bytes")) +
                               " where this rank expected " + std::to_string(t.bytes) +
                               ": the ranks disagree on the size or dtype of this " + call.op +
                               ". Every rank must pass tensors of the same shape and dtype; "
                               "this group cannot continue.");
    }
    if (t.status != UCS_OK) {
      throw TransportError(DOMINO_ERR_PEER, where() + ": transfer with rank " +
                                                describe_ranks({t.peer}) +
                                                " failed: " + ucs_status_string(t.status) +
                                                ". That rank's process or host may be gone.");
    }
  }
}

void UcxCommunicator::exchange(const Call& call, int to, const void* out, size_t out_bytes,
                               int from, void* in, size_t in_bytes) {
  std::vector<Transfer> transfers;
  if (from >= 0) {
    transfers.push_back(
        post_receive(from, collective_tag(from, call), kCollectiveReceiveMask, in, in_bytes));
  }
  if (to >= 0) transfers.push_back(post_send(to, collective_tag(rank_, call), out, out_bytes));
  finish(call, transfers);
}

int UcxCommunicator::unfolded(int folded_rank, int pof2) const {
  const int extra = size_ - pof2;
  return folded_rank < extra ? folded_rank * 2 + 1 : folded_rank + extra;
}

int UcxCommunicator::fold_in(const Call& call, char* data, size_t bytes, domino_dtype_t dtype,
                             domino_redop_t op, int pof2) {
  const int extra = size_ - pof2;
  if (rank_ >= 2 * extra) return rank_ - extra;
  if (rank_ % 2 == 0) {
    exchange(call, rank_ + 1, data, bytes, -1, nullptr, 0);
    return -1;
  }
  std::vector<char> theirs(bytes);
  exchange(call, -1, nullptr, 0, rank_ - 1, theirs.data(), bytes);
  combine(data, theirs.data(), bytes / dtype_size(dtype), dtype, op);
  return rank_ / 2;
}

void UcxCommunicator::fold_out(const Call& call, char* data, size_t bytes, int pof2,
                               int folded_rank) {
  const int extra = size_ - pof2;
  if (rank_ >= 2 * extra) return;
  if (folded_rank < 0) {
    exchange(call, -1, nullptr, 0, rank_ + 1, data, bytes);
  } else {
    exchange(call, rank_ - 1, data, bytes, -1, nullptr, 0);
  }
}

void UcxCommunicator::allreduce_recursive_doubling(const Call& call, char* data, size_t count,
                                                   domino_dtype_t dtype, domino_redop_t op) {
  const size_t bytes = count * dtype_size(dtype);
  const int pof2 = static_cast<int>(std::bit_floor(static_cast<unsigned>(size_)));
  const int me = fold_in(call, data, bytes, dtype, op, pof2);
  if (me >= 0) {
    std::vector<char> theirs(bytes);
    for (int mask = 1; mask < pof2; mask <<= 1) {
      const int partner = unfolded(me ^ mask, pof2);
      exchange(call, partner, data, bytes, partner, theirs.data(), bytes);
      // Both partners apply op with the lower rank's operand first, so order-sensitive cases
      // (NaN or signed zeros under MIN and MAX) end up the same on both.
      if (rank_ < partner) {
        combine(data, theirs.data(), count, dtype, op);
      } else {
        combine(theirs.data(), data, count, dtype, op);
        if (bytes > 0) std::memcpy(data, theirs.data(), bytes);
      }
    }
  }
  fold_out(call, data, bytes, pof2, me);
}

void UcxCommunicator::allreduce_rabenseifner(const Call& call, char* data, size_t count,
                                             domino_dtype_t dtype, domino_redop_t op) {
  const size_t element = dtype_size(dtype);
  const size_t bytes = count * element;
  const int pof2 = static_cast<int>(std::bit_floor(static_cast<unsigned>(size_)));
  const int me = fold_in(call, data, bytes, dtype, op, pof2);
  if (me >= 0) {
    const Blocks blocks(count, pof2);
    std::vector<char> theirs(bytes);
    // Recursive halving: each round keeps half of the blocks still held and reduces them.
    int lo = 0, hi = pof2;
    for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
      const int partner = unfolded(me ^ mask, pof2);
      const int mid = lo + (hi - lo) / 2;
      const bool lower = (me & mask) == 0;
      const int keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
      const int give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
      const size_t keep_at = blocks.offset(keep_lo) * element;
      const size_t keep_bytes = (blocks.offset(keep_hi) - blocks.offset(keep_lo)) * element;
      exchange(call, partner, data + blocks.offset(give_lo) * element,
               (blocks.offset(give_hi) - blocks.offset(give_lo)) * element, partner, theirs.data(),
               keep_bytes);
      combine(data + keep_at, theirs.data(), keep_bytes / element, dtype, op);
      lo = keep_lo;
      hi = keep_hi;
    }
    // Recursive doubling: each round swaps the reduced ranges, doubling what is held.
    for (int mask = 1; mask < pof2; mask <<= 1) {
      const int partner = unfolded(me ^ mask, pof2);
      const int width = hi - lo;
      const int their_lo = (me & mask) == 0 ? hi : lo - width;
      exchange(call, partner, data + blocks.offset(lo) * element,
               (blocks.offset(hi) - blocks.offset(lo)) * element, partner,
               data + blocks.offset(their_lo) * element,
               (blocks.offset(their_lo + width) - blocks.offset(their_lo)) * element);
      lo = std::min(lo, their_lo);
      hi = lo + 2 * width;
    }
  }
  fold_out(call, data, bytes, pof2, me);
}

void UcxCommunicator::allreduce_ring(const Call& call, char* data, size_t count,
                                     domino_dtype_t dtype, domino_redop_t op) {
  const size_t element = dtype_size(dtype);
  const Blocks blocks(count, size_);
  const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
  auto block = [&](int b) { return ((b % size_) + size_) % size_; };
  std::vector<char> theirs((blocks.size(0)) * element);
  for (int step = 0; step < size_ - 1; ++step) {
    const int out = block(rank_ - step), in = block(rank_ - step - 1);
    exchange(call, next, data + blocks.offset(out) * element, blocks.size(out) * element, prev,
             theirs.data(), blocks.size(in) * element);
    combine(data + blocks.offset(in) * element, theirs.data(), blocks.size(in), dtype, op);
  }
  for (int step = 0; step < size_ - 1; ++step) {
    const int out = block(rank_ + 1 - step), in = block(rank_ - step);
    exchange(call, next, data + blocks.offset(out) * element, blocks.size(out) * element, prev,
             data + blocks.offset(in) * element, blocks.size(in) * element);
  }
}

void UcxCommunicator::allreduce(const domino_buffer_t& send, const domino_buffer_t& recv,
                                domino_redop_t op) {
  const size_t bytes = recv.count * dtype_size(recv.dtype);
  if (send.ptr != recv.ptr && bytes > 0) std::memcpy(recv.ptr, send.ptr, bytes);
  if (size_ == 1) {
    return;  // AVG over one rank is the value itself
  }
  const AllreduceAlgorithm algorithm =
      algorithm_ != AllreduceAlgorithm::kAuto
          ? algorithm_
          : auto_allreduce_algorithm(bytes, size_, small_message_bytes_);
  const Call call =
      start_collective("allreduce", allreduce_algorithm_name(algorithm), recv.dtype, op);
  char* data = static_cast<char*>(recv.ptr);
  switch (algorithm) {
    case AllreduceAlgorithm::kRing:
      allreduce_ring(call, data, recv.count, recv.dtype, op);
      break;
    case AllreduceAlgorithm::kRabenseifner:
      allreduce_rabenseifner(call, data, recv.count, recv.dtype, op);
      break;
    default:
      allreduce_recursive_doubling(call, data, recv.count, recv.dtype, op);
      break;
  }
  if (op == DOMINO_AVG) divide_buffer(data, recv.count, recv.dtype, size_);
}

void UcxCommunicator::reduce_scatter(const domino_buffer_t& send, const domino_buffer_t& recv,
                                     domino_redop_t op) {
  const Call call = start_collective("reduce_scatter", "ring", recv.dtype, op);
  const size_t element = dtype_size(recv.dtype);
  const size_t block_bytes = recv.count * element;
  std::vector<char> work(static_cast<const char*>(send.ptr),
                         static_cast<const char*>(send.ptr) + block_bytes * size_);
  std::vector<char> theirs(block_bytes);
  const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
  auto block = [&](int b) { return static_cast<size_t>(((b % size_) + size_) % size_); };
  for (int step = 0; step < size_ - 1; ++step) {
    const size_t out = block(rank_ - step - 1), in = block(rank_ - step - 2);
    exchange(call, next, work.data() + out * block_bytes, block_bytes, prev, theirs.data(),
             block_bytes);
    combine(work.data() + in * block_bytes, theirs.data(), recv.count, recv.dtype, op);
  }
  if (block_bytes > 0) {
    std::memcpy(recv.ptr, work.data() + static_cast<size_t>(rank_) * block_bytes, block_bytes);
  }
  if (op == DOMINO_AVG) divide_buffer(recv.ptr, recv.count, recv.dtype, size_);
}

void UcxCommunicator::allgather(const domino_buffer_t& send, const domino_buffer_t& recv) {
  const Call call = start_collective("allgather", "ring", send.dtype);
  const size_t block_bytes = send.count * dtype_size(send.dtype);
  char* out = static_cast<char*>(recv.ptr);
  if (block_bytes > 0 && out + static_cast<size_t>(rank_) * block_bytes != send.ptr) {
    std::memmove(out + static_cast<size_t>(rank_) * block_bytes, send.ptr, block_bytes);
  }
  const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
  auto block = [&](int b) { return static_cast<size_t>(((b % size_) + size_) % size_); };
  for (int step = 0; step < size_ - 1; ++step) {
    exchange(call, next, out + block(rank_ - step) * block_bytes, block_bytes, prev,
             out + block(rank_ - step - 1) * block_bytes, block_bytes);
  }
}

void UcxCommunicator::broadcast(const domino_buffer_t& buffer, int root) {
  const Call call = start_collective("broadcast", "binomial tree", buffer.dtype, 0, root);
  const size_t bytes = buffer.count * dtype_size(buffer.dtype);
  const int me = (rank_ - root + size_) % size_;
  auto real = [&](int virtual_rank) { return (virtual_rank + root) % size_; };
  int mask = 1;
  for (; mask < size_; mask <<= 1) {
    if (me & mask) {
      exchange(call, -1, nullptr, 0, real(me - mask), buffer.ptr, bytes);
      break;
    }
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (me + mask < size_) exchange(call, real(me + mask), buffer.ptr, bytes, -1, nullptr, 0);
  }
}

void UcxCommunicator::reduce(const domino_buffer_t& send, const domino_buffer_t& recv,
                             domino_redop_t op, int root) {
  const Call call = start_collective("reduce", "binomial tree", send.dtype, op, root);
  const size_t count = send.count;
  const size_t bytes = count * dtype_size(send.dtype);
  std::vector<char> acc(static_cast<const char*>(send.ptr),
                        static_cast<const char*>(send.ptr) + bytes);
  std::vector<char> theirs(bytes);
  const int me = (rank_ - root + size_) % size_;
  auto real = [&](int virtual_rank) { return (virtual_rank + root) % size_; };
  for (int mask = 1; mask < size_; mask <<= 1) {
    if (me & mask) {
      exchange(call, real(me - mask), acc.data(), bytes, -1, nullptr, 0);
      return;
    }
    if (me + mask < size_) {
      exchange(call, -1, nullptr, 0, real(me + mask), theirs.data(), bytes);
      combine(acc.data(), theirs.data(), count, send.dtype, op);
    }
  }
  if (bytes > 0) std::memcpy(recv.ptr, acc.data(), bytes);
  if (op == DOMINO_AVG) divide_buffer(recv.ptr, count, send.dtype, size_);
}

void UcxCommunicator::gather(const domino_buffer_t& send, const domino_buffer_t& recv, int root) {
  const Call call = start_collective("gather", "direct", send.dtype, 0, root);
  const size_t bytes = send.count * dtype_size(send.dtype);
  std::vector<Transfer> transfers;
  if (rank_ != root) {
    transfers.push_back(post_send(root, collective_tag(rank_, call), send.ptr, bytes));
  } else {
    char* out = static_cast<char*>(recv.ptr);
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) {
        if (bytes > 0) std::memcpy(out + static_cast<size_t>(r) * bytes, send.ptr, bytes);
      } else {
        transfers.push_back(post_receive(r, collective_tag(r, call), kCollectiveReceiveMask,
                                         out + static_cast<size_t>(r) * bytes, bytes));
      }
    }
  }
  finish(call, transfers);
}

void UcxCommunicator::scatter(const domino_buffer_t& send, const domino_buffer_t& recv, int root) {
  const Call call = start_collective("scatter", "direct", recv.dtype, 0, root);
  const size_t bytes = recv.count * dtype_size(recv.dtype);
  std::vector<Transfer> transfers;
  if (rank_ != root) {
    transfers.push_back(
        post_receive(root, collective_tag(root, call), kCollectiveReceiveMask, recv.ptr, bytes));
  } else {
    const char* in = static_cast<const char*>(send.ptr);
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) {
        if (bytes > 0) std::memcpy(recv.ptr, in + static_cast<size_t>(r) * bytes, bytes);
      } else {
        transfers.push_back(
            post_send(r, collective_tag(rank_, call), in + static_cast<size_t>(r) * bytes, bytes));
      }
    }
  }
  finish(call, transfers);
}

void UcxCommunicator::alltoall(const domino_buffer_t& send, const uint64_t* send_counts,
                               const uint64_t* send_offsets, const domino_buffer_t& recv,
                               const uint64_t* recv_counts, const uint64_t* recv_offsets) {
  const Call call = start_collective("alltoall", "direct", send.dtype);
  const size_t element = dtype_size(send.dtype);
  const char* in = static_cast<const char*>(send.ptr);
  char* out = static_cast<char*>(recv.ptr);
  const size_t self = static_cast<size_t>(rank_);
  if (recv_counts[self] != send_counts[self]) {  // before anything is posted
    throw TransportError(DOMINO_ERR_INVALID,
                         std::string("ucx alltoall on group '") + group_ + "': rank " +
                             std::to_string(rank_) + " sends itself " +
                             std::to_string(send_counts[self]) + " elements but expects " +
                             std::to_string(recv_counts[self]));
  }
  std::vector<Transfer> transfers;
  for (int r = 0; r < size_; ++r) {
    const size_t i = static_cast<size_t>(r);
    if (r == rank_) {
      if (send_counts[i] > 0) {
        std::memcpy(out + recv_offsets[i] * element, in + send_offsets[i] * element,
                    send_counts[i] * element);
      }
      continue;
    }
    transfers.push_back(post_receive(r, collective_tag(r, call), kCollectiveReceiveMask,
                                     out + recv_offsets[i] * element, recv_counts[i] * element));
  }
  for (int step = 1; step < size_; ++step) {
    const int r = (rank_ + step) % size_;  // staggered, so ranks do not all hit rank 0 first
    const size_t i = static_cast<size_t>(r);
    transfers.push_back(post_send(r, collective_tag(rank_, call), in + send_offsets[i] * element,
                                  send_counts[i] * element));
  }
  finish(call, transfers);
}

void UcxCommunicator::barrier() {
  const Call call = start_collective("barrier", "dissemination", DOMINO_UINT8);
  for (int distance = 1; distance < size_; distance <<= 1) {
    exchange(call, (rank_ + distance) % size_, nullptr, 0, (rank_ - distance + size_) % size_,
             nullptr, 0);
  }
}

ucp_tag_t UcxCommunicator::user_tag(const char* op, int source, int32_t tag) const {
  if (tag < 0 || tag >= (1 << kUserTagBits)) {
    throw TransportError(DOMINO_ERR_INVALID, std::string("ucx ") + op + " on group '" + group_ +
                                                 "': tag " + std::to_string(tag) +
                                                 " is outside 0.." +
                                                 std::to_string((1 << kUserTagBits) - 1));
  }
  return (comm_id_ << kCommShift) | (kPointToPoint << kKindShift) |
         (static_cast<ucp_tag_t>(source) << kUserTagBits) | static_cast<ucp_tag_t>(tag);
}

void UcxCommunicator::send(const domino_buffer_t& buffer, int peer, int32_t tag) {
  const ucp_tag_t t = user_tag("send", rank_, tag);
  const Call call = start("send");
  std::vector<Transfer> transfers{
      post_send(peer, t, buffer.ptr, buffer.count * dtype_size(buffer.dtype))};
  finish(call, transfers);
}

int UcxCommunicator::recv(const domino_buffer_t& buffer, int peer, int32_t tag) {
  const ucp_tag_t t = user_tag("recv", peer < 0 ? 0 : peer, tag);  // any source: masked out
  const Call call = start("recv");
  std::vector<Transfer> transfers{
      post_receive(peer, t, peer < 0 ? kFullMask & ~kSourceMask : kFullMask, buffer.ptr,
                   buffer.count * dtype_size(buffer.dtype))};
  finish(call, transfers);
  return static_cast<int>((transfers[0].sender_tag & kSourceMask) >> kUserTagBits);
}

}  // namespace domino::ucx
