// Collectives and point-to-point messages among ranks on any hosts, over UCX tagged messages.
// Algorithms are built from exchanges between pairs of ranks:
//   all-reduce: recursive doubling (small: log p rounds of the whole message), Rabenseifner
//     (recursive halving reduce-scatter, then recursive doubling all-gather) or ring
//     (reduce-scatter then all-gather, 2(p-1) rounds of n/p); non-powers of two fold the extra
//     ranks in first;
//   reduce-scatter and all-gather: ring; broadcast and reduce: binomial tree;
//   gather, scatter and all-to-all: direct.
// Every result is computed by exactly one rank and copied to the others, so all ranks hold
// bitwise identical values.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "UcxWorker.h"
#include "domino/plugin.h"

namespace domino::ucx {

enum class AllreduceAlgorithm { kAuto, kRing, kRecursiveDoubling, kRabenseifner };

// Parses the ABI's algorithm name; throws TransportError(INVALID) for names UCX does not run.
AllreduceAlgorithm parse_allreduce_algorithm(const char* name);
const char* allreduce_algorithm_name(AllreduceAlgorithm algorithm);
// The algorithm kAuto picks for `bytes` among `ranks`, given the small-message threshold.
AllreduceAlgorithm auto_allreduce_algorithm(size_t bytes, int ranks, size_t small_message_bytes);

class UcxCommunicator {
 public:
  // From any thread: operations that start from now on wait this long for their peers.
  void set_timeout(std::chrono::milliseconds timeout) { timeout_.store(timeout); }
  explicit UcxCommunicator(const domino_comm_config_t& config);
  UcxCommunicator(const UcxCommunicator&) = delete;
  UcxCommunicator& operator=(const UcxCommunicator&) = delete;
  ~UcxCommunicator();

  void allreduce(const domino_buffer_t& send, const domino_buffer_t& recv, domino_redop_t op);
  void reduce(const domino_buffer_t& send, const domino_buffer_t& recv, domino_redop_t op,
              int root);
  void broadcast(const domino_buffer_t& buffer, int root);
  void allgather(const domino_buffer_t& send, const domino_buffer_t& recv);
  void reduce_scatter(const domino_buffer_t& send, const domino_buffer_t& recv, domino_redop_t op);
  void gather(const domino_buffer_t& send, const domino_buffer_t& recv, int root);
  void scatter(const domino_buffer_t& send, const domino_buffer_t& recv, int root);
  void alltoall(const domino_buffer_t& send, const uint64_t* send_counts,
                const uint64_t* send_offsets, const domino_buffer_t& recv,
                const uint64_t* recv_counts, const uint64_t* recv_offsets);
  void barrier();
  void send(const domino_buffer_t& buffer, int peer, int32_t tag);
  int recv(const domino_buffer_t& buffer, int peer, int32_t tag);

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
  Call start_collective(const char* op, const char* algorithm, domino_dtype_t dtype, int redop = 0,
                        int root = 0) const;

  ucp_tag_t collective_tag(int source, const Call& call) const;
  // A point-to-point tag; throws for a user tag out of range.
  ucp_tag_t user_tag(const char* op, int source, int32_t tag) const;
  Transfer post_send(int peer, ucp_tag_t tag, const void* data, size_t bytes);
  Transfer post_receive(int peer, ucp_tag_t tag, ucp_tag_t mask, void* data, size_t bytes);
  // Waits for all of transfers; throws naming the op, the group and the ranks at fault.
  void finish(const Call& call, std::vector<Transfer>& transfers);
  // Sends to `to` and receives from `from` at once (either may be -1 to skip).
  void exchange(const Call& call, int to, const void* out, size_t out_bytes, int from, void* in,
                size_t in_bytes);

  void allreduce_recursive_doubling(const Call& call, char* data, size_t count,
                                    domino_dtype_t dtype, domino_redop_t op);
  void allreduce_rabenseifner(const Call& call, char* data, size_t count, domino_dtype_t dtype,
                              domino_redop_t op);
  void allreduce_ring(const Call& call, char* data, size_t count, domino_dtype_t dtype,
                      domino_redop_t op);
  // Non-powers of two: ranks below 2 * (size - pof2) pair up, the even one handing its data to
  // the odd one. Returns this rank's index among the pof2 that go on, or -1 if it sat out.
  int fold_in(const Call& call, char* data, size_t bytes, domino_dtype_t dtype, domino_redop_t op,
              int pof2);
  void fold_out(const Call& call, char* data, size_t bytes, int pof2, int folded_rank);
  int unfolded(int folded_rank, int pof2) const;

  std::string describe_ranks(const std::vector<int>& ranks) const;

  int rank_;
  int size_;
  std::vector<int64_t> global_ranks_;
  std::string group_;
  std::atomic<std::chrono::milliseconds> timeout_;
  size_t small_message_bytes_;
  AllreduceAlgorithm algorithm_;
  uint64_t comm_id_;
  std::vector<std::string> peer_addresses_;
  UcxWorker& worker_;
};

}  // namespace domino::ucx
