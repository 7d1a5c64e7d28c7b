// NCCL's collectives: one body per op, which collective() picks by the call's op; NCCL chooses
// its own algorithms, so a name handed down is refused.
#include <chrono>
#include <iterator>
#include <string>
#include <thread>

#include "NcclCommunicator.h"
#include "NcclDevice.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/TransportError.h"
#include "topology/Collectives.h"

namespace domino::nccl {

namespace {
using Clock = std::chrono::steady_clock;

// group would swallow every later NCCL call of this thread). Keeps the first failure.
class GroupCall {
 public:
  GroupCall() { ncclGroupStart(); }
  ~GroupCall() {
    if (open_) ncclGroupEnd();
  }
  GroupCall(const GroupCall&) = delete;
  GroupCall& operator=(const GroupCall&) = delete;
  void note(ncclResult_t result) {
    if (first_ == ncclSuccess && result != ncclSuccess && result != ncclInProgress) first_ = result;
  }
  void copy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
    if (bytes > 0 &&
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream) != cudaSuccess) {
      first_ = ncclUnhandledCudaError;
    }
  }
  ncclResult_t end() {
    open_ = false;
    const ncclResult_t ended = ncclGroupEnd();
    return first_ != ncclSuccess ? first_ : ended;
  }

 private:
  bool open_ = true;
  ncclResult_t first_ = ncclSuccess;
};

// NCCL's reduction for op on dtype, or a sentence saying why there is none.
bool nccl_op(domino_redop_t op, domino_dtype_t dtype, ncclRedOp_t* out, std::string* why) {
  if (dtype == DOMINO_BOOL) {
    // Bools are bytes holding 0 or 1: "any" is a max, "all" a min, and neither leaves {0, 1}.
    switch (op) {
      case DOMINO_SUM:
      case DOMINO_MAX:
      case DOMINO_BOR:
        *out = ncclMax;
        return true;
      case DOMINO_PRODUCT:
      case DOMINO_MIN:
      case DOMINO_BAND:
        *out = ncclMin;
        return true;
      default:
        *why = "NCCL cannot reduce bool tensors with this op";
        return false;
    }
  }
  switch (op) {
    case DOMINO_SUM:
      *out = ncclSum;
      return true;
    case DOMINO_PRODUCT:
      *out = ncclProd;
      return true;
    case DOMINO_MIN:
      *out = ncclMin;
      return true;
    case DOMINO_MAX:
      *out = ncclMax;
      return true;
    case DOMINO_AVG:
      *out = ncclAvg;
      return true;
    default:
      *why = "NCCL has no bitwise reductions (BAND, BOR, BXOR)";
      return false;
  }
}
}  // namespace

void NcclCommunicator::collective(const domino_call_t& call, const char* algorithm) {
  using topology::Collective;
  // Each op's body with its arguments taken from the descriptor, in DOMINO_COLLECTIVES' order.
  struct Entry {
    Collective op;
    void (*run)(NcclCommunicator& comm, const domino_call_t& call);
  };
  static constexpr Entry kBodies[] = {
      {Collective::kAllReduce,
       [](NcclCommunicator& c, const domino_call_t& k) { c.allreduce(*k.send, *k.recv, k.redop); }},
      {Collective::kBroadcast,
       [](NcclCommunicator& c, const domino_call_t& k) { c.broadcast(*k.recv, k.root); }},
      {Collective::kReduce,
       [](NcclCommunicator& c, const domino_call_t& k) {
         c.reduce(*k.send, *k.recv, k.redop, k.root);
       }},
      {Collective::kAllGather,
       [](NcclCommunicator& c, const domino_call_t& k) { c.allgather(*k.send, *k.recv); }},
      {Collective::kReduceScatter,
       [](NcclCommunicator& c, const domino_call_t& k) {
         c.reduce_scatter(*k.send, *k.recv, k.redop);
       }},
      {Collective::kGather,
       [](NcclCommunicator& c, const domino_call_t& k) { c.gather(*k.send, *k.recv, k.root); }},
      {Collective::kScatter,
       [](NcclCommunicator& c, const domino_call_t& k) { c.scatter(*k.send, *k.recv, k.root); }},
      {Collective::kAllToAll,
       [](NcclCommunicator& c, const domino_call_t& k) {
         c.alltoall(*k.send, k.send_counts, k.send_offsets, *k.recv, k.recv_counts, k.recv_offsets);
       }},
      {Collective::kBarrier, [](NcclCommunicator& c, const domino_call_t&) { c.barrier(); }},
  };
  constexpr bool kInOrder = [] {
    for (size_t i = 0; i < std::size(kBodies); ++i) {
      if (static_cast<size_t>(kBodies[i].op) != i) return false;
    }
    return true;
  }();
  static_assert(std::size(kBodies) == topology::kCollectiveCount && kInOrder,
                "one body per collective, at its op's place");

  if (call.op >= topology::kCollectiveCount) {
    throw TransportError(DOMINO_ERR_INVALID, where("collective") + ": no collective has op code " +
                                                 std::to_string(call.op));
  }
  if (algorithm != nullptr && algorithm[0] != '\0') {
    // Before anything is enqueued: the same on every rank.
    throw TransportError(DOMINO_ERR_UNSUPPORTED,
                         where(topology::entry_name(static_cast<Collective>(call.op))) +
                             " has no algorithm '" + algorithm + "'; NCCL chooses its own");
  }
  kBodies[call.op].run(*this, call);
}

void NcclCommunicator::allreduce(const domino_buffer_t& send, const domino_buffer_t& recv,
                                 domino_redop_t op) {
  const auto in_call = enter("allreduce");
  check_buffer("allreduce", send);
  check_buffer("allreduce", recv);
  ncclRedOp_t reduction;
  std::string why;
  if (!nccl_op(op, recv.dtype, &reduction, &why)) fail(DOMINO_ERR_UNSUPPORTED, "allreduce", why);
  DeviceScope scope(device_);
  settle(ncclAllReduce(send.ptr, recv.ptr, recv.count, nccl_type(recv.dtype), reduction, comm_,
                       stream_),
         "allreduce");
}

void NcclCommunicator::reduce(const domino_buffer_t& send, const domino_buffer_t& recv,
                              domino_redop_t op, int root) {
  const auto in_call = enter("reduce");
  check_root("reduce", root);
  check_buffer("reduce", send);
  ncclRedOp_t reduction;
  std::string why;
  if (!nccl_op(op, send.dtype, &reduction, &why)) fail(DOMINO_ERR_UNSUPPORTED, "reduce", why);
  DeviceScope scope(device_);
  void* out = rank_ == root ? recv.ptr : nullptr;
  settle(
      ncclReduce(send.ptr, out, send.count, nccl_type(send.dtype), reduction, root, comm_, stream_),
      "reduce");
}

void NcclCommunicator::broadcast(const domino_buffer_t& buffer, int root) {
  const auto in_call = enter("broadcast");
  check_root("broadcast", root);
  check_buffer("broadcast", buffer);
  DeviceScope scope(device_);
  settle(ncclBroadcast(buffer.ptr, buffer.ptr, buffer.count, nccl_type(buffer.dtype), root, comm_,
                       stream_),
         "broadcast");
}

void NcclCommunicator::allgather(const domino_buffer_t& send, const domino_buffer_t& recv) {
  const auto in_call = enter("allgather");
  check_buffer("allgather", send);
  check_buffer("allgather", recv);
  if (recv.count != send.count * static_cast<size_t>(size_)) {
    fail(DOMINO_ERR_INVALID, "allgather",
         "the output holds " + std::to_string(recv.count) + " elements, expected " +
             std::to_string(send.count) + " x " + std::to_string(size_));
  }
  DeviceScope scope(device_);
  settle(ncclAllGather(send.ptr, recv.ptr, send.count, nccl_type(send.dtype), comm_, stream_),
         "allgather");
}

void NcclCommunicator::reduce_scatter(const domino_buffer_t& send, const domino_buffer_t& recv,
                                      domino_redop_t op) {
  const auto in_call = enter("reduce_scatter");
  check_buffer("reduce_scatter", send);
  check_buffer("reduce_scatter", recv);
  if (send.count != recv.count * static_cast<size_t>(size_)) {
    fail(DOMINO_ERR_INVALID, "reduce_scatter",
         "the input holds " + std::to_string(send.count) + " elements, expected " +
             std::to_string(recv.count) + " x " + std::to_string(size_));
  }
  ncclRedOp_t reduction;
  std::string why;
  if (!nccl_op(op, recv.dtype, &reduction, &why)) {
    fail(DOMINO_ERR_UNSUPPORTED, "reduce_scatter", why);
  }
  DeviceScope scope(device_);
  settle(ncclReduceScatter(send.ptr, recv.ptr, recv.count, nccl_type(recv.dtype), reduction, comm_,
                           stream_),
         "reduce_scatter");
}

void NcclCommunicator::gather(const domino_buffer_t& send, const domino_buffer_t& recv, int root) {
  const auto in_call = enter("gather");
  check_root("gather", root);
  check_buffer("gather", send);
  const ncclDataType_t type = nccl_type(send.dtype);
  const size_t bytes = send.count * dtype_size(send.dtype);
  if (rank_ == root) check_buffer("gather", recv);
  DeviceScope scope(device_);
  GroupCall group;
  if (rank_ == root) {
    for (int peer = 0; peer < size_; ++peer) {
      char* slot = static_cast<char*>(recv.ptr) + static_cast<size_t>(peer) * bytes;
      if (peer == rank_) {
        group.copy(slot, send.ptr, bytes, stream_);
      } else {
        group.note(ncclRecv(slot, send.count, type, peer, comm_, stream_));
      }
    }
  } else {
    group.note(ncclSend(send.ptr, send.count, type, root, comm_, stream_));
  }
  settle(group.end(), "gather");
}

void NcclCommunicator::scatter(const domino_buffer_t& send, const domino_buffer_t& recv, int root) {
  const auto in_call = enter("scatter");
  check_root("scatter", root);
  check_buffer("scatter", recv);
  const ncclDataType_t type = nccl_type(recv.dtype);
  const size_t bytes = recv.count * dtype_size(recv.dtype);
  if (rank_ == root) check_buffer("scatter", send);
  DeviceScope scope(device_);
  GroupCall group;
  if (rank_ == root) {
    for (int peer = 0; peer < size_; ++peer) {
      const char* slot = static_cast<const char*>(send.ptr) + static_cast<size_t>(peer) * bytes;
      if (peer == rank_) {
        group.copy(recv.ptr, slot, bytes, stream_);
      } else {
        group.note(ncclSend(slot, recv.count, type, peer, comm_, stream_));
      }
    }
  } else {
    group.note(ncclRecv(recv.ptr, recv.count, type, root, comm_, stream_));
  }
  settle(group.end(), "scatter");
}

void NcclCommunicator::alltoall(const domino_buffer_t& send, const uint64_t* send_counts,
                                const uint64_t* send_offsets, const domino_buffer_t& recv,
                                const uint64_t* recv_counts, const uint64_t* recv_offsets) {
  const auto in_call = enter("alltoall");
  check_buffer("alltoall", send);
  check_buffer("alltoall", recv);
  const ncclDataType_t type = nccl_type(send.dtype);
  const size_t element = dtype_size(send.dtype);
  const size_t me = static_cast<size_t>(rank_);
  if (send_counts[me] != recv_counts[me]) {
    fail(DOMINO_ERR_INVALID, "alltoall",
         "this rank sends itself " + std::to_string(send_counts[me]) + " elements but expects " +
             std::to_string(recv_counts[me]));
  }
  DeviceScope scope(device_);
  GroupCall group;
  for (int peer = 0; peer < size_; ++peer) {
    const size_t p = static_cast<size_t>(peer);
    const char* out = static_cast<const char*>(send.ptr) + send_offsets[p] * element;
    char* in = static_cast<char*>(recv.ptr) + recv_offsets[p] * element;
    if (peer == rank_) {
      group.copy(in, out, send_counts[p] * element, stream_);
      continue;
    }
    if (send_counts[p] > 0) group.note(ncclSend(out, send_counts[p], type, peer, comm_, stream_));
    if (recv_counts[p] > 0) group.note(ncclRecv(in, recv_counts[p], type, peer, comm_, stream_));
  }
  settle(group.end(), "alltoall");
}

void NcclCommunicator::barrier() {
  const auto in_call = enter("barrier");
  DeviceScope scope(device_);
  settle(ncclAllReduce(barrier_word_, barrier_word_, 1, ncclInt32, ncclSum, comm_, stream_),
         "barrier");
  const Clock::time_point deadline = Clock::now() + timeout_.load();
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream_);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) {
      fail(DOMINO_ERR_SYSTEM, "barrier", cudaGetErrorString(state));
    }
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async);
    if (async != ncclSuccess && async != ncclInProgress) settle(async, "barrier");
    if (Clock::now() > deadline) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
      aborted_ = true;
      fail(DOMINO_ERR_TIMEOUT, "barrier",
           "not every rank arrived within " + std::to_string(timeout_.load().count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace domino::nccl
