// Collectives and point-to-point messages among the ranks of one host, through one shared
// segment per group (layout in SegmentLayout.h).
//
// Collectives run in rounds. Each rank owns two payload slots, used by round parity, so a round
// needs no closing barrier. The first round of every op compares all ranks' descriptors.
// How a call runs is one of the paths registered in the algorithm table (ShmAlgorithms.h), each
// from its own file: all-reduce "direct" (small messages reduced whole by every rank), "rsag"
// (chunks of one slot, each rank reducing its own slice of all slots before everyone copies
// every slice out) or "single_copy" (from the peers' memory); "segment" for every op through the
// slots; all-gather and reduce-scatter "single_copy" too.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "GroupBarrier.h"
#include "PointToPoint.h"
#include "SegmentLinks.h"
#include "SharedSegment.h"
#include "ShmAlgorithms.h"
#include "domino/plugin.h"
#include "topology/Collectives.h"
#include "topology/CostModel.h"

namespace domino::shm {

class ShmCommunicator;

// A registered path's body (ShmAlgorithms.h): each path's file specializes it for a tag type of
// its own. It runs on the communicator's rounds, so it sees the communicator's insides.
template <class Path>
void run_path(ShmCommunicator& comm, const domino_call_t& call);

class ShmCommunicator {
 public:
  // From any thread: operations that start from now on wait this long for their peers.
  void set_timeout(std::chrono::milliseconds timeout) {
    timeout_.store(timeout);
    if (p2p_) p2p_->set_timeout(timeout);
    if (links_) links_->set_timeout(timeout);
  }
  explicit ShmCommunicator(const domino_comm_config_t& config);

  // Runs call by the path named `algorithm` (the router's choice, ABI collective_with) among
  // those registered for its op (ShmAlgorithms.h; their names are topology/ShmCosts.h's);
  // nullptr: by the table's cheapest path for the call (the plugin ABI's per-op entries). A name
  // the op lacks here, or "single_copy" where the group cannot read its peers' memory, is
  // refused (UNSUPPORTED) before any message.
  void collective(const domino_call_t& call, const char* algorithm = nullptr);
  void send(const domino_buffer_t& buffer, int peer, int32_t tag);
  int recv(const domino_buffer_t& buffer, int peer, int32_t tag);
  // The plugin ABI's links: the backend runs its shared algorithms over them, for an in-host
  // all-reduce the router names (DOMINO_ALGO=intra:ring). From the collectives' thread only.
  void link_send(const void* data, size_t bytes, int peer);
  void link_recv(void* data, size_t bytes, int peer);
  void link_wait();

  // From any thread: ends what every rank of the group has in flight on it (they raise within
  // about 100 ms, naming this rank's abort) and refuses every later call.
  void abort();

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t slot_bytes() const { return slot_bytes_; }
  // Whether large messages go by direct single-copy reads (CrossMemory.h) in this group.
  bool single_copy() const { return single_copy_; }

 private:
  template <class Path>
  friend void run_path(ShmCommunicator& comm, const domino_call_t& call);
  using Op = topology::Collective;
  // An op as a round descriptor carries it (0: none published).
  static uint32_t op_code(Op op) { return static_cast<uint32_t>(op) + 1; }
  static const char* op_name(uint32_t code);
  // Throws UNSUPPORTED: "shm <op> on <group> <why>", before any message.
  [[noreturn]] void refuse(Op op, const std::string& why) const;

  // One collective over `count` elements, a round per `chunk`: fill(offset, n) writes this
  // rank's slot, drain(offset, n) reads the others'. At least one round runs, so descriptors
  // are always compared; for count 0 neither callback runs. A one-round call's fill may write
  // this rank's line for phase_ + 1 instead (its round meets exactly once, at that phase), and
  // its drain read the ranks' lines for phase_.
  template <class Fill, class Drain>
  void run_chunks(Op op, const OpDescriptor& mine, size_t count, size_t chunk, Fill&& fill,
                  Drain&& drain);
  // Rounds of per_round elements that carry count of them.
  static size_t rounds_for(size_t count, size_t per_round);
  // Every rank's send, rank-major, into recv of root (or of every rank when root < 0).
  void collect(Op op, const OpDescriptor& mine, const domino_buffer_t& send,
               const domino_buffer_t& recv, int root);
  // Copies elements [offset, offset + n) of each rank's block (blocks of `count` in source) into
  // this rank's slot, block r at r * chunk; not this rank's own block, which it reads in place.
  void stage_blocks(const char* source, size_t count, size_t offset, size_t n, size_t chunk,
                    size_t element);

  // The paths' shared steps. start_*: checks the call's buffers and reduction (INVALID naming
  // the op, before any message) and returns this rank's descriptor.
  OpDescriptor start_reduce(Op kind, const domino_call_t& call, int root);
  // An all-reduce (root < 0) or reduce through the slots: a message of at most whole_bytes (and
  // one slot) reduced whole by every rank in one round, a larger one by slices in rounds. One of
  // at most kLinePayloadBytes (and whole_bytes) goes through the ranks' phase lines instead.
  void reduce_rounds(Op kind, const OpDescriptor& mine, const domino_call_t& call, int root,
                     size_t whole_bytes);
  OpDescriptor start_allgather(const domino_call_t& call);
  OpDescriptor start_reduce_scatter(const domino_call_t& call);
  void reduce_scatter_rounds(const OpDescriptor& mine, const domino_call_t& call);
  // Through the slots, as the "segment" path registers them (ShmSegment.cpp).
  void broadcast(const domino_buffer_t& buffer, int root);
  void gather(const domino_buffer_t& send, const domino_buffer_t& recv, int root);
  void scatter(const domino_buffer_t& send, const domino_buffer_t& recv, int root);
  void alltoall(const domino_call_t& call);
  void barrier();

  // A failed link call leaves the group broken, as a failed round does.
  template <class Call>
  void on_links(Call&& call);
  // Single-copy variants: round 0 publishes each rank's buffer addresses, then every rank reads
  // what it needs straight from its peers' buffers; a closing barrier keeps those buffers valid
  // until everyone is done.
  struct Addresses {
    uint64_t in;
    uint64_t out;
  };
  std::vector<Addresses> exchange_addresses(Op op, const OpDescriptor& mine, const void* in,
                                            const void* out);
  void read_peer(int peer, void* local, uint64_t remote, size_t bytes, const char* op);
  // Throws instead once the group is broken: the peer may have left the collective.
  void write_peer(int peer, uint64_t remote, const void* local, size_t bytes, const char* op);
  // Runs pushes (writes into peers' buffers) with this rank's pushing flag set, then the closing
  // barrier; on any error it waits, via settle_pushes, until no peer writes into this rank.
  template <class Pushes>
  void push_then_meet(const char* op, Deadline deadline, Pushes&& pushes);
  void settle_pushes(const char* op);
  [[noreturn]] void peer_copy_failed(int peer, int32_t pid, int error, const char* how,
                                     const char* op);
  void allreduce_single_copy(const domino_buffer_t& send, const domino_buffer_t& recv,
                             domino_redop_t op, const OpDescriptor& mine);
  void allgather_single_copy(const domino_buffer_t& send, const domino_buffer_t& recv,
                             const OpDescriptor& mine);
  void reduce_scatter_single_copy(const domino_buffer_t& send, const domino_buffer_t& recv,
                                  domino_redop_t op, const OpDescriptor& mine);
  void probe_single_copy(Deadline deadline);
  void open_round(const OpDescriptor& mine, const char* op_name, Deadline deadline);
  void meet(const char* op_name, Deadline deadline);
  // Between chunks: lets a higher-priority operation of this process go first.
  void yield_to_priority(Deadline deadline) const;
  void close_round() { parity_ ^= 1u; }
  char* slot(int rank) const;
  Deadline deadline() const { return std::chrono::steady_clock::now() + timeout_.load(); }
  void check_usable(const char* op_name) const;
  void check_root(const char* op_name, int root) const;
  OpDescriptor describe_call(Op op, const domino_buffer_t& buffer, domino_redop_t redop, int root,
                             uint64_t count);
  std::string describe(const OpDescriptor& d) const;

  int rank_;
  int size_;
  std::string group_label_;
  std::atomic<std::chrono::milliseconds> timeout_;
  SharedSegment segment_;
  SegmentHeader* header_ = nullptr;
  size_t slot_bytes_ = 0;
  std::optional<GroupBarrier> barrier_;  // set once the segment is mapped
  std::optional<PointToPoint> p2p_;
  std::optional<SegmentLinks> links_;
  uint64_t phase_ = 0;
  uint32_t parity_ = 0;
  uint64_t sequence_ = 0;
  std::string broken_reason_;
  std::vector<const void*> inputs_;
  bool single_copy_ = false;
  // What a call handed no name is priced with (ShmAlgorithms.h's shm_own_cost): this host's
  // CPUs and the probe's verdict. config.small_message_bytes is not read: the regimes are
  // topology/ShmCosts.h's.
  topology::TransportCost own_cost_;
  // The path the last call handed no name took: small ops repeat one call, and pricing every
  // path of the table took longer than their whole round.
  struct OwnChoice {
    uint32_t op = static_cast<uint32_t>(topology::kCollectiveCount);
    double bytes = -1;
    uint64_t table_version = 0;
    ShmBody body = nullptr;
  };
  OwnChoice own_choice_;
  uint64_t probe_word_ = 0;
  std::vector<std::vector<char>> peer_chunks_;  // per peer: one chunk read from it, then reduced
  int (*should_pause_)(void*) = nullptr;
  void* pause_context_ = nullptr;
};

template <class Fill, class Drain>
void ShmCommunicator::run_chunks(Op op, const OpDescriptor& mine, size_t count, size_t chunk,
                                 Fill&& fill, Drain&& drain) {
  const char* name = op_name(op_code(op));
  const Deadline until = deadline();
  const size_t rounds = std::max<size_t>(rounds_for(count, chunk), 1);
  for (size_t round = 0; round < rounds; ++round) {
    if (round > 0) yield_to_priority(until);
    const size_t offset = round * chunk;
    const size_t n = count == 0 ? 0 : std::min(chunk, count - offset);
    if (n > 0) fill(offset, n);
    if (round == 0) {
      open_round(mine, name, until);
    } else {
      meet(name, until);
    }
    if (n > 0) drain(offset, n);
    close_round();
  }
}

}  // namespace domino::shm
