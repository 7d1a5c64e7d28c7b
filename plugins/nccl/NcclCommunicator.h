// Collectives on CUDA device memory through NCCL. Each call is stream-ordered: it is enqueued on
// the communicator's stream and returns; the caller learns completion from an event it records
// there. Communicators start non-blocking, so set-up and enqueue waits are bounded by the group's
// timeout, and a communicator that cannot finish is aborted rather than left hanging.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <atomic>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "domino/plugin.h"

namespace domino::nccl {

class NcclCommunicator {
 public:
  // From any thread: operations that start from now on wait this long for their peers.
  void set_timeout(std::chrono::milliseconds timeout) { timeout_.store(timeout); }
  // Rendezvous through config.bootstrap: rank 0 publishes the NCCL unique id.
  explicit NcclCommunicator(const domino_comm_config_t& config);
  // ncclCommSplit of parent, collective over all of parent's ranks (see the ABI's comm_split):
  // NULL for a rank whose color is negative.
  static NcclCommunicator* split(NcclCommunicator& parent, int color, int key,
                                 const domino_comm_config_t& config);
  // Whether ncclCommShrink exists, in the headers built against and in the library loaded.
  static bool can_shrink();
  // ncclCommShrink of parent without exclude (parent's ranks), collective over the remaining
  // ranks (see the ABI's comm_shrink); abort_first: NCCL_SHRINK_ABORT.
  static NcclCommunicator* shrink(NcclCommunicator& parent, std::vector<int> exclude,
                                  bool abort_first, const domino_comm_config_t& config);
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  ~NcclCommunicator();

  // Any collective (the plugin ABI's descriptor), enqueued on the stream. NCCL chooses its own
  // algorithms: a name (algorithm not nullptr or "") is refused (UNSUPPORTED) before anything is
  // enqueued.
  void collective(const domino_call_t& call, const char* algorithm);
  // NCCL has no tags: messages between two ranks match in order.
  void send(const domino_buffer_t& buffer, int peer, int32_t tag);
  int recv(const domino_buffer_t& buffer, int peer, int32_t tag);
  // From any thread: ends the communicator's in-flight kernels; every later op fails at once.
  // Waits for an op another thread is inside (each is bounded by the timeout).
  void abort();

 private:
  NcclCommunicator() = default;
  // Each op's body; collective() picks one by the call's op.
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
  // Host-blocking, like every c10d barrier: returns once all ranks reached it.
  void barrier();

  // Takes made (a child of parent's, once NCCL has written it) on parent's device.
  static NcclCommunicator* adopt_child(NcclCommunicator& parent, ncclComm_t made,
                                       const domino_comm_config_t& config, const char* op);
  // Waits out a split or shrink NCCL started (its result `started`) on this parent, and returns
  // the child NCCL wrote into *slot (null where none was expected: a rank outside every color).
  // On failure or at the deadline aborts this parent and the child, and throws.
  ncclComm_t await_child(ncclResult_t started, std::unique_ptr<ncclComm_t>& slot, bool expected,
                         const char* op);
  void start(const domino_comm_config_t& config);
  void adopt(const domino_comm_config_t& config);
  // Every op holds the call lock (abort() may come from another thread) and fails at once on an
  // aborted communicator.
  std::unique_lock<std::mutex> enter(const char* op);
  // Finalizes and destroys a healthy communicator (aborts one that failed or will not finish),
  // then frees what adopt() made.
  void release();
  // Waits until NCCL has finished enqueuing (non-blocking communicators may say "in progress");
  // aborts the communicator and throws when result is an error or the deadline passes.
  void settle(ncclResult_t result, const char* op);
  [[noreturn]] void fail(domino_status_t status, const char* op, const std::string& why);
  std::string where(const char* op) const;
  void check_buffer(const char* op, const domino_buffer_t& buffer) const;
  void check_root(const char* op, int root) const;

  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool own_stream_ = false;
  bool aborted_ = false;
  int device_ = 0;
  int rank_ = 0;
  int size_ = 0;
  std::vector<int64_t> global_ranks_;
  std::string group_name_;
  std::atomic<std::chrono::milliseconds> timeout_{std::chrono::milliseconds(0)};
  int32_t* barrier_word_ = nullptr;  // device memory the barrier all-reduces
  std::mutex call_mutex_;            // abort() may come from another thread
};

}  // namespace domino::nccl
