// Collectives and point-to-point messages among ranks on any hosts, over UCX tagged messages.
// The collectives are the shared algorithms (plugins/algorithms) over this communicator's
// PeerLinks: all-reduce by recursive doubling, Rabenseifner or ring; reduce-scatter and
// all-gather by ring; broadcast and reduce by binomial tree; gather, scatter and all-to-all
// direct. Each collective's messages carry its signature, so ranks that disagree are told.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "UcxWorker.h"
#include "domino/plugin.h"
#include "plugins/algorithms/AlgorithmChoice.h"
#include "topology/Collectives.h"

namespace domino::ucx {

class UcxCommunicator {
 public:
  // From any thread: operations that start from now on wait this long for their peers.
  void set_timeout(std::chrono::milliseconds timeout) { timeout_.store(timeout); }
  explicit UcxCommunicator(const domino_comm_config_t& config);
  UcxCommunicator(const UcxCommunicator&) = delete;
  UcxCommunicator& operator=(const UcxCommunicator&) = delete;
  ~UcxCommunicator();

  // Any collective (the plugin ABI's descriptor). algorithm: the one the router chose for this
  // call, by its table name (ABI collective_with, allreduce_with); nullptr or "": the
  // transport's own (AlgorithmChoice.h). A name the op lacks is refused (UNSUPPORTED) before any
  // message.
  void collective(const domino_call_t& call, const char* algorithm);
  void send(const domino_buffer_t& buffer, int peer, int32_t tag);
  int recv(const domino_buffer_t& buffer, int peer, int32_t tag);
  // From any thread: what this communicator has in flight ends within about 10 ms, and every
  // later call fails; the peers are told, so theirs end too.
  void abort();

 private:
  // What an op is doing, for messages and for the deadline every wait of one op shares.
  struct Call {
    const char* op;
    const char* algorithm;
    std::chrono::steady_clock::time_point deadline;
    // Collectives: what every rank must agree on (the op, dtype, reduction and root), carried in
    // the tag of each message, so a partner in another collective is told, not silently mixed
    // in. Zero for point-to-point messages.
    ucp_tag_t signature = 0;
  };
  Call start(const char* op, const char* algorithm = "") const;
  Call start_collective(topology::Collective op, const char* algorithm, domino_dtype_t dtype,
                        int redop = 0, int root = 0) const;

  ucp_tag_t collective_tag(int source, const Call& call) const;
  // A point-to-point tag; throws for a user tag out of range.
  ucp_tag_t user_tag(const char* op, int source, int32_t tag) const;
  Transfer post_send(int peer, ucp_tag_t tag, const void* data, size_t bytes);
  Transfer post_receive(int peer, ucp_tag_t tag, ucp_tag_t mask, void* data, size_t bytes);
  // Waits for all of transfers; throws naming the op, the group and the ranks at fault.
  void finish(const Call& call, std::vector<Transfer>& transfers);
  void check(const Call& call, std::vector<Transfer>& transfers);  // finish() but telling no one
  // This communicator's messages for one collective call, as the shared algorithms see them.
  class Links;

  std::string describe_ranks(const std::vector<int>& ranks) const;
  ucp_tag_t notice_tag(int source) const;
  std::string ended_by_message(int by) const;
  // Once: tells every peer that this communicator is broken, so that what they wait for from
  // this rank ends now rather than at their timeout (a rank that saw a peer die, or aborted).
  void tell_peers();

  int rank_;
  int size_;
  std::vector<int64_t> global_ranks_;
  std::string group_;
  std::atomic<std::chrono::milliseconds> timeout_;
  std::atomic<bool> aborted_{false};
  size_t small_message_bytes_;
  std::string algorithm_;  // forced at creation; "" for none
  uint64_t comm_id_;
  std::vector<std::string> peer_addresses_;
  UcxWorker& worker_;
  // A receive posted for the whole life of the communicator: a peer's tell_peers() lands here.
  uint64_t notice_word_ = 0;
  Transfer notice_;
  std::atomic<bool> told_{false};
  std::atomic<int> ended_by_{-1};  // the peer whose notice ended this communicator
};

}  // namespace domino::ucx
