#include "UcxCommunicator.h"

#include <algorithm>
#include <cstring>

#include "plugins/algorithms/AlgorithmChoice.h"
#include "plugins/algorithms/PeerLinks.h"
#include "plugins/common/Bootstrap.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/RandomHex.h"
#include "plugins/common/TransportError.h"

namespace domino::ucx {

namespace {
// Tag layout: communicator id (24 bits) | kind (2) | source rank (14) | user tag (24).
constexpr int kSourceBits = 14;
constexpr int kUserTagBits = 24;
constexpr int kKindShift = kSourceBits + kUserTagBits;
constexpr int kCommShift = kKindShift + 2;
constexpr ucp_tag_t kCollective = 0;
constexpr ucp_tag_t kPointToPoint = 1;
constexpr ucp_tag_t kNotice = 2;  // a peer's tell_peers()
constexpr ucp_tag_t kSourceMask = ((ucp_tag_t{1} << kSourceBits) - 1) << kUserTagBits;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};
// Collectives use the user-tag bits for the call's signature; receives match any signature and
// compare it afterwards, so a disagreement is reported instead of left to the timeout.
constexpr ucp_tag_t kSignatureMask = (ucp_tag_t{1} << kUserTagBits) - 1;
constexpr ucp_tag_t kCollectiveReceiveMask = kFullMask & ~kSignatureMask;

// Signature: op (4 bits: the collective's place in topology/Collectives.h, plus one) | dtype (6)
// | reduction (4) | root modulo 1024 (10).
using topology::Collective;
static_assert(topology::kCollectiveCount < 16, "the signature's op field has 4 bits");

ucp_tag_t encode_signature(Collective op, int dtype, int redop, int root) {
  const auto code = static_cast<ucp_tag_t>(op) + 1;
  return (code << 20) | (static_cast<ucp_tag_t>(dtype & 0x3f) << 14) |
         (static_cast<ucp_tag_t>(redop & 0xf) << 10) | static_cast<ucp_tag_t>(root & 0x3ff);
}

std::string describe_signature(ucp_tag_t signature) {
  const size_t code = (signature >> 20) & 0xf;
  const auto dtype = static_cast<domino_dtype_t>((signature >> 14) & 0x3f);
  const auto redop = static_cast<domino_redop_t>((signature >> 10) & 0xf);
  const int root = static_cast<int>(signature & 0x3ff);
  if (code == 0 || code > topology::kCollectiveCount) return "an unknown collective";
  const auto op = static_cast<Collective>(code - 1);
  const std::string name = topology::entry_name(op);
  if (op == Collective::kBarrier) return "a barrier";
  std::string text = (name[0] == 'a' ? "an " : "a ") + name + " of " + dtype_name(dtype);
  if (topology::reduces(op)) text += std::string(" (") + redop_name(redop) + ")";
  if (topology::rooted(op)) text += " with root " + std::to_string(root) + " (modulo 1024)";
  return text;
}
constexpr size_t kAddressCapacity = 64 * 1024;
// The wording shared memory uses for the same event, so one check finds both.
constexpr const char* kEndedHere =
    "this rank ended the group's communication (ProcessGroup abort(), or shrink_group, which "
    "leaves out the ranks it excludes); use the shrunk group, or destroy this one and create a "
    "new one.";

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

UcxCommunicator::UcxCommunicator(const domino_comm_config_t& config)
    : rank_(config.rank),
      size_(config.size),
      group_(config.group_name != nullptr ? config.group_name : "?"),
      timeout_(std::chrono::milliseconds(config.timeout_ms > 0 ? config.timeout_ms : 1800000)),
      small_message_bytes_(config.small_message_bytes != 0 ? config.small_message_bytes
                                                           : algorithms::kDefaultSmallMessageBytes),
      algorithm_(algorithms::parse_allreduce_algorithm(config.algorithm, "ucx")),
      worker_(UcxWorker::instance(config.socket_interfaces)) {
  for (int r = 0; r < size_; ++r) {
    global_ranks_.push_back(config.global_ranks != nullptr ? config.global_ranks[r] : r);
  }
  if (size_ > (1 << kSourceBits)) {
    throw TransportError(DOMINO_ERR_INVALID, "the ucx transport serves at most " +
                                                 std::to_string(1 << kSourceBits) +
                                                 " ranks per group; group '" + group_ + "' has " +
                                                 std::to_string(size_));
  }
  const Bootstrap bootstrap(config.bootstrap);
  // Every member derives the same id from the group's name and rank 0's random draw; it keeps
  // groups sharing the process's one worker apart, also from a dead group of the same name
  // (c10d reuses names after a shrink) whose last messages may still be queued.
  std::string draw;
  if (rank_ == 0) {
    draw = random_hex();
    bootstrap.set("ucx/draw", draw);
  } else {
    draw = bootstrap.get("ucx/draw", timeout_.load(), 64);
  }
  comm_id_ = fnv1a(group_ + "/" + draw) & ((ucp_tag_t{1} << (64 - kCommShift)) - 1);
  bootstrap.set("ucx/" + std::to_string(rank_), worker_.address());
  peer_addresses_.resize(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    std::string& address = peer_addresses_[static_cast<size_t>(r)];
    address = r == rank_
                  ? worker_.address()
                  : bootstrap.get("ucx/" + std::to_string(r), timeout_.load(), kAddressCapacity);
    // UCX reads a worker address without its length: an empty one would be read past its end.
    if (address.empty()) {
      throw TransportError(
          DOMINO_ERR_SYSTEM,
          "ucx communicator for group '" + group_ + "': rank " + describe_ranks({r}) +
              " published an empty UCX address; the store's ucx/" + std::to_string(r) +
              " was not written by this build (mixed torch-domino versions, or "
              "another job using the group's keys). Create the group again.");
    }
  }
  // Claimed last, so a failed set-up above leaves nothing to release.
  if (!worker_.claim_id(comm_id_)) {
    throw TransportError(DOMINO_ERR_INVALID,
                         "ucx communicator for group '" + group_ +
                             "': its name hashes to the same message id as another live group "
                             "of this process, so their messages could mix. Create the group "
                             "again (it draws a new id) or destroy the other one first.");
  }
  notice_ = worker_.post_receive("", -1, notice_tag(0), kFullMask & ~kSourceMask, &notice_word_,
                                 sizeof notice_word_);
}

UcxCommunicator::~UcxCommunicator() {
  if (!aborted_.load()) {
    // Bounded: a peer that is gone or busy elsewhere must not hold up this group's destruction
    // for long (each communicator of a group waits at most this once). A live peer answers a
    // handshake within milliseconds.
    constexpr std::chrono::milliseconds kLongestFlush(1000);
    worker_.flush(peer_addresses_,
                  std::chrono::steady_clock::now() + std::min(timeout_.load(), kLongestFlush));
  }
  worker_.cancel(notice_);
  worker_.release_id(comm_id_);
}

ucp_tag_t UcxCommunicator::notice_tag(int source) const {
  return (comm_id_ << kCommShift) | (kNotice << kKindShift) |
         (static_cast<ucp_tag_t>(source) << kUserTagBits);
}

void UcxCommunicator::tell_peers() {
  if (told_.exchange(true)) return;
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) worker_.notify(peer_addresses_[static_cast<size_t>(r)], notice_tag(rank_));
  }
}

void UcxCommunicator::abort() {
  aborted_.store(true);
  tell_peers();
}

std::string UcxCommunicator::ended_by_message(int by) const {
  return "rank " + describe_ranks({by}) +
         " ended the group's communication (it saw a peer fail, or was ended by ProcessGroup "
         "abort() or shrink_group: its own error says which); this group cannot continue. Shrink "
         "it (dist.shrink_group) or destroy it and create a new one.";
}

UcxCommunicator::Call UcxCommunicator::start(const char* op, const char* algorithm) const {
  if (aborted_.load()) {
    throw TransportError(DOMINO_ERR_PEER, std::string("ucx ") + op + " on group '" + group_ +
                                              "' refused: " + kEndedHere);
  }
  if (const int by = ended_by_.load(); by >= 0) {
    throw TransportError(DOMINO_ERR_PEER, std::string("ucx ") + op + " on group '" + group_ +
                                              "' refused: " + ended_by_message(by));
  }
  return Call{op, algorithm, std::chrono::steady_clock::now() + timeout_.load()};
}

UcxCommunicator::Call UcxCommunicator::start_collective(Collective op, const char* algorithm,
                                                        domino_dtype_t dtype, int redop,
                                                        int root) const {
  Call call = start(topology::entry_name(op), algorithm);
  call.signature = encode_signature(op, dtype, redop, root);
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
  const std::string& sender = peer >= 0 ? peer_addresses_[static_cast<size_t>(peer)] : "";
  return worker_.post_receive(sender, peer, tag, mask, data, bytes);
}

std::string UcxCommunicator::describe_ranks(const std::vector<int>& ranks) const {
  std::string out;
  for (int r : ranks) {
    if (r < 0) {
      out += (out.empty() ? "" : ", ") + std::string("any rank");
      continue;
    }
    if (r >= size_) {  // a rank decoded from a message's tag, which a peer wrote
      out += (out.empty() ? "" : ", ") + std::to_string(r) + " (not a rank of this group of " +
             std::to_string(size_) + ")";
      continue;
    }
    out += (out.empty() ? "" : ", ") + std::to_string(r) + " (global " +
           std::to_string(global_ranks_[static_cast<size_t>(r)]) + ")";
  }
  return out;
}

void UcxCommunicator::finish(const Call& call, std::vector<Transfer>& transfers) {
  try {
    check(call, transfers);
  } catch (const TransportError& e) {
    // Broken: the peers waiting on this rank are told now. A mismatch leaves it usable.
    if (e.status() == DOMINO_ERR_TIMEOUT || e.status() == DOMINO_ERR_PEER) tell_peers();
    throw;
  }
}

void UcxCommunicator::check(const Call& call, std::vector<Transfer>& transfers) {
  const std::vector<size_t> late =
      worker_.wait(transfers, call.deadline, call.signature != 0 ? kSignatureMask : 0,
                   call.signature, &aborted_, &notice_);
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
  // A peer's notice explains only what it cut short: a failure this rank saw itself (a message
  // of the wrong size, a dead sender) is told as such below.
  const bool cut_short = std::any_of(transfers.begin(), transfers.end(), [](const Transfer& t) {
    return t.status == UCS_ERR_CANCELED;
  });
  const bool own_failure = std::any_of(transfers.begin(), transfers.end(), [](const Transfer& t) {
    return (t.status != UCS_OK && t.status != UCS_ERR_CANCELED) ||
           (t.status == UCS_OK && t.is_receive && t.received_bytes != t.bytes);
  });
  if (aborted_.load() && (!late.empty() || cut_short)) {
    throw TransportError(DOMINO_ERR_PEER, where() + ": in flight when " + kEndedHere);
  }
  if (cut_short && !own_failure && worker_.landed(notice_)) {
    const int by = static_cast<int>((notice_.sender_tag & kSourceMask) >> kUserTagBits);
    // The sender told every peer already; relaying it would cost each rank N messages more.
    told_.store(true);
    ended_by_.store(by);
    throw TransportError(DOMINO_ERR_PEER, where() + ": " + ended_by_message(by));
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

class UcxCommunicator::Links final : public algorithms::PeerLinks {
 public:
  Links(UcxCommunicator& comm, const Call& call) : comm_(comm), call_(call) {}
  int rank() const override { return comm_.rank_; }
  int size() const override { return comm_.size_; }
  void post_send(int peer, const void* data, size_t bytes) override {
    transfers_.push_back(
        comm_.post_send(peer, comm_.collective_tag(comm_.rank_, call_), data, bytes));
  }
  void post_recv(int peer, void* data, size_t bytes) override {
    transfers_.push_back(comm_.post_receive(peer, comm_.collective_tag(peer, call_),
                                            kCollectiveReceiveMask, data, bytes));
  }
  void wait() override {
    comm_.finish(call_, transfers_);
    transfers_.clear();
  }
  std::string where() const override {
    return std::string("ucx ") + call_.op + " on group '" + comm_.group_ + "'";
  }

 private:
  UcxCommunicator& comm_;
  const Call& call_;
  std::vector<Transfer> transfers_;
};

void UcxCommunicator::collective(const domino_call_t& call, const char* algorithm) {
  const auto op = static_cast<Collective>(call.op);
  const std::string_view handed_down = algorithm != nullptr ? algorithm : "";
  if (!handed_down.empty() && !algorithms::runs_over_links(op, handed_down)) {
    // Before any message: the backend runs the op another way.
    throw TransportError(DOMINO_ERR_UNSUPPORTED,
                         std::string("ucx ") + topology::entry_name(op) + " on group '" + group_ +
                             "' has no algorithm '" + std::string(handed_down) + "'");
  }
  if (op == Collective::kAllReduce) {
    const size_t bytes = call.recv->count * dtype_size(call.recv->dtype);
    if (call.send->ptr != call.recv->ptr && bytes > 0)
      std::memcpy(call.recv->ptr, call.send->ptr, bytes);
    if (size_ == 1) return;  // AVG over one rank is the value itself
  }
  // What every rank must agree on travels in each message's tag.
  const domino_dtype_t dtype = op == Collective::kBarrier      ? DOMINO_UINT8
                               : topology::sized_by_output(op) ? call.recv->dtype
                                                               : call.send->dtype;
  const int redop = topology::reduces(op) ? static_cast<int>(call.redop) : 0;
  const int root = topology::rooted(op) ? call.root : 0;
  const std::string chosen(
      algorithms::resolve_algorithm(call, handed_down, algorithm_, size_, small_message_bytes_));
  const Call started = start_collective(op, chosen.c_str(), dtype, redop, root);
  Links links(*this, started);
  algorithms::run_algorithm(links, chosen, call);
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
  const int source = static_cast<int>((transfers[0].sender_tag & kSourceMask) >> kUserTagBits);
  if (source >= size_) {
    // Its bytes have landed already; the message came from no peer of this group.
    tell_peers();
    throw TransportError(DOMINO_ERR_PEER,
                         "ucx recv on group '" + group_ + "' (rank " + std::to_string(rank_) +
                             " of " + std::to_string(size_) + "): the message's tag names rank " +
                             describe_ranks({source}) +
                             " as its sender; a process outside the group shares its message "
                             "id, or the tag was corrupted. This group cannot continue; destroy "
                             "it and create a new one.");
  }
  return source;
}

}  // namespace domino::ucx
