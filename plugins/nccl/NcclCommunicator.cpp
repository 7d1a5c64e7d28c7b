#include "NcclCommunicator.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>

#include "NcclDevice.h"
#include "plugins/common/Bootstrap.h"
#include "plugins/common/TransportError.h"

namespace domino::nccl {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

void NcclCommunicator::adopt(const domino_comm_config_t& config) {
  if (config.size <= 0 || config.rank < 0 || config.rank >= config.size) {
    throw TransportError(DOMINO_ERR_INVALID, "nccl: rank " + std::to_string(config.rank) +
                                                 " is not within a communicator of " +
                                                 std::to_string(config.size));
  }
  device_ = config.device;
  rank_ = config.rank;
  size_ = config.size;
  group_name_ = config.group_name != nullptr ? config.group_name : "?";
  timeout_ = std::chrono::milliseconds(config.timeout_ms > 0 ? config.timeout_ms : 600000);
  global_ranks_.clear();
  for (int i = 0; i < size_; ++i) {
    global_ranks_.push_back(config.global_ranks != nullptr ? config.global_ranks[i] : i);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || device_ < 0 || device_ >= devices) {
    throw TransportError(DOMINO_ERR_INVALID, where("set-up") + ": CUDA device " +
                                                 std::to_string(device_) + " is not one of the " +
                                                 std::to_string(devices) + " this process sees");
  }
  DeviceScope scope(device_);
  if (config.stream != nullptr) {
    stream_ = static_cast<cudaStream_t>(config.stream);
  } else {
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess) {
      throw TransportError(DOMINO_ERR_SYSTEM, where("set-up") + ": could not create a stream");
    }
    own_stream_ = true;
  }
  if (cudaMalloc(reinterpret_cast<void**>(&barrier_word_), sizeof(int32_t)) != cudaSuccess) {
    throw TransportError(DOMINO_ERR_SYSTEM, where("set-up") + ": could not allocate 4 bytes");
  }
}

NcclCommunicator::NcclCommunicator(const domino_comm_config_t& config) {
  try {
    start(config);
  } catch (...) {
    release();  // no destructor runs for a constructor that throws
    throw;
  }
}

void NcclCommunicator::start(const domino_comm_config_t& config) {
  adopt(config);
  if (config.bootstrap == nullptr) {
    throw TransportError(DOMINO_ERR_INVALID, where("set-up") + ": no bootstrap to rendezvous");
  }
  Bootstrap bootstrap(config.bootstrap);
  ncclUniqueId id;
  if (rank_ == 0) {
    const ncclResult_t got = ncclGetUniqueId(&id);
    if (got != ncclSuccess) fail(DOMINO_ERR_SYSTEM, "set-up", ncclGetErrorString(got));
    bootstrap.set("nccl-id", std::string(reinterpret_cast<const char*>(&id), sizeof id));
  } else {
    const std::string value = bootstrap.get("nccl-id", timeout_.load(), sizeof id);
    if (value.size() != sizeof id) {
      fail(DOMINO_ERR_MISMATCH, "set-up",
           "rank 0 published a unique id of " + std::to_string(value.size()) + " bytes");
    }
    std::memcpy(&id, value.data(), sizeof id);
  }
  DeviceScope scope(device_);
  ncclConfig_t nccl_config = NCCL_CONFIG_INITIALIZER;
  nccl_config.blocking = 0;  // so that a rank that never arrives cannot hold us past the timeout
  settle(ncclCommInitRankConfig(&comm_, size_, id, rank_, &nccl_config), "set-up");
}

NcclCommunicator* NcclCommunicator::split(NcclCommunicator& parent, int color, int key,
                                          const domino_comm_config_t& config) {
  const auto in_call = parent.enter("split");  // the watchdog may abort the parent meanwhile
  DeviceScope scope(parent.device_);
  ncclConfig_t nccl_config = NCCL_CONFIG_INITIALIZER;
  nccl_config.blocking = 0;
  auto slot = std::make_unique<ncclComm_t>(nullptr);
  const ncclComm_t made =
      parent.await_child(ncclCommSplit(parent.comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key,
                                       slot.get(), &nccl_config),
                         slot, color >= 0, "split");
  return made == nullptr ? nullptr : adopt_child(parent, made, config, "split");
}

ncclComm_t NcclCommunicator::await_child(ncclResult_t started, std::unique_ptr<ncclComm_t>& slot,
                                         bool expected, const char* op) {
  // NCCL (non-blocking) returns from a split or shrink at once and runs the child's init as a
  // group job on the parent, which reports in progress until the job is joined; the job writes
  // the handle (a failed child's too) as it ends. So: wait for the parent, then for the handle.
  std::atomic_ref<ncclComm_t> handle(*slot);
  try {
    settle(started, op);
    settle(ncclInProgress, op);
    const Clock::time_point deadline = Clock::now() + timeout_.load();
    while (expected && handle.load(std::memory_order_acquire) == nullptr && comm_ != nullptr &&
           Clock::now() <= deadline) {
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) break;
      if (state != ncclSuccess && state != ncclInProgress) settle(state, op);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    const ncclComm_t made = handle.load(std::memory_order_acquire);
    if (made != nullptr || !expected) return made;
    fail(DOMINO_ERR_TIMEOUT, op,
         "NCCL made no communicator within " + std::to_string(timeout_.load().count()) +
             " ms; check that every rank of the group took part");
  } catch (...) {
    // Aborting the parent (settle and fail do) ends NCCL's job; a child it made goes too. The
    // slot stays allocated: should the job still be running, it may yet write there.
    if (comm_ != nullptr) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
      aborted_ = true;
    }
    const ncclComm_t made = handle.load(std::memory_order_acquire);
    if (made != nullptr) ncclCommAbort(made);
    (void)slot.release();
    throw;
  }
}

NcclCommunicator* NcclCommunicator::adopt_child(NcclCommunicator& parent, ncclComm_t made,
                                                const domino_comm_config_t& config,
                                                const char* op) {
  auto* comm = new NcclCommunicator();
  comm->comm_ = made;  // owned from here on: released on any failure below
  try {
    domino_comm_config_t own = config;
    own.device = parent.device_;
    comm->adopt(own);
    ncclResult_t state = ncclInProgress;
    ncclCommGetAsyncError(made, &state);
    comm->settle(state, op);
  } catch (...) {
    delete comm;
    throw;
  }
  return comm;
}

bool NcclCommunicator::can_shrink() {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  int version = 0;
  // The library torch loaded, which may be older than the headers this was built with.
  return ncclGetVersion(&version) == ncclSuccess && version >= NCCL_VERSION(2, 27, 0);
#else
  return false;
#endif
}

NcclCommunicator* NcclCommunicator::shrink(NcclCommunicator& parent, std::vector<int> exclude,
                                           bool abort_first, const domino_comm_config_t& config) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  // The plugin offers comm_shrink only where can_shrink().
  const auto in_call = parent.enter("shrink");
  DeviceScope scope(parent.device_);
  ncclConfig_t nccl_config = NCCL_CONFIG_INITIALIZER;
  nccl_config.blocking = 0;
  auto slot = std::make_unique<ncclComm_t>(nullptr);
  const ncclComm_t made = parent.await_child(
      ncclCommShrink(parent.comm_, exclude.data(), static_cast<int>(exclude.size()), slot.get(),
                     &nccl_config, abort_first ? NCCL_SHRINK_ABORT : NCCL_SHRINK_DEFAULT),
      slot, true, "shrink");
  return adopt_child(parent, made, config, "shrink");
#else
  (void)exclude;
  (void)abort_first;
  (void)config;
  throw TransportError(DOMINO_ERR_UNSUPPORTED,
                       parent.where("shrink") + ": built against an NCCL older than 2.27");
#endif
}

NcclCommunicator::~NcclCommunicator() {
  release();
}

void NcclCommunicator::release() {
  // Nothing made (adopt refused the device, say): touch no device at all.
  if (comm_ == nullptr && barrier_word_ == nullptr && !own_stream_) return;
  DeviceScope scope(device_);
  if (comm_ != nullptr) {
    // A healthy communicator finishes its queued work first (bounded by the timeout: a peer
    // that died would hold it forever); anything else is aborted, which ends its kernels.
    bool finalized = false;
    if (!aborted_) {
      ncclResult_t state = ncclCommFinalize(comm_);
      // Short: finishing queued work takes milliseconds unless a peer is gone, and a group's
      // shutdown releases many communicators one after another.
      const Clock::time_point deadline =
          Clock::now() +
          std::min<std::chrono::milliseconds>(timeout_.load(), std::chrono::seconds(5));
      while (state == ncclInProgress && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) break;
      }
      finalized = state == ncclSuccess;
    }
    if (finalized) {
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
    comm_ = nullptr;
  }
  if (barrier_word_ != nullptr) cudaFree(barrier_word_);
  barrier_word_ = nullptr;
  if (own_stream_) cudaStreamDestroy(stream_);
  own_stream_ = false;
}

std::unique_lock<std::mutex> NcclCommunicator::enter(const char* op) {
  std::unique_lock<std::mutex> lock(call_mutex_);
  if (aborted_) {
    fail(DOMINO_ERR_PEER, op,
         "this communicator was aborted after an earlier failure; create a new process group");
  }
  return lock;
}

void NcclCommunicator::abort() {
  const std::lock_guard<std::mutex> in_call(call_mutex_);
  if (comm_ == nullptr) return;
  DeviceScope scope(device_);
  ncclCommAbort(comm_);  // in-flight kernels of this communicator end
  comm_ = nullptr;
  aborted_ = true;
}

std::string NcclCommunicator::where(const char* op) const {
  std::string ranks;
  for (size_t i = 0; i < global_ranks_.size() && i < 16; ++i) {
    ranks += (i ? "," : "") + std::to_string(global_ranks_[i]);
  }
  if (global_ranks_.size() > 16) ranks += ",...";
  return std::string("nccl ") + op + " on group '" + group_name_ + "' (rank " +
         std::to_string(rank_) + " of " + std::to_string(size_) + ", global ranks " + ranks +
         ", CUDA device " + std::to_string(device_) + ")";
}

void NcclCommunicator::fail(domino_status_t status, const char* op, const std::string& why) {
  throw TransportError(status, where(op) + ": " + why);
}

void NcclCommunicator::settle(ncclResult_t result, const char* op) {
  if (aborted_) {
    fail(DOMINO_ERR_PEER, op,
         "this communicator was aborted after an earlier failure; create a new process group");
  }
  const Clock::time_point deadline = Clock::now() + timeout_.load();
  while (result == ncclInProgress && comm_ != nullptr) {
    if (Clock::now() > deadline) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
      aborted_ = true;
      fail(DOMINO_ERR_TIMEOUT, op,
           "the other ranks did not join within " + std::to_string(timeout_.load().count()) +
               " ms; check that every rank of the group issued this op (same order) and is alive");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (ncclCommGetAsyncError(comm_, &result) != ncclSuccess) break;
  }
  if (result != ncclSuccess) {
    const char* last = comm_ != nullptr ? ncclGetLastError(comm_) : "";
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
    aborted_ = true;
    fail(result == ncclInvalidArgument || result == ncclInvalidUsage ? DOMINO_ERR_INVALID
                                                                     : DOMINO_ERR_PEER,
         op,
         std::string(ncclGetErrorString(result)) +
             (last && *last ? std::string(" (") + last + ")" : std::string()));
  }
}

void NcclCommunicator::check_buffer(const char* op, const domino_buffer_t& buffer) const {
  if (buffer.count > 0 && buffer.ptr == nullptr) {
    throw TransportError(
        DOMINO_ERR_INVALID,
        where(op) + ": a buffer of " + std::to_string(buffer.count) + " elements has no memory");
  }
  if (buffer.count > 0 && buffer.device != device_) {
    throw TransportError(DOMINO_ERR_INVALID,
                         where(op) + ": the tensor is on device " + std::to_string(buffer.device) +
                             " but this communicator serves CUDA device " +
                             std::to_string(device_) + "; move it there or use another group");
  }
}

void NcclCommunicator::check_root(const char* op, int root) const {
  if (root < 0 || root >= size_) {
    throw TransportError(DOMINO_ERR_INVALID, where(op) + ": root " + std::to_string(root) +
                                                 " is not a rank of this communicator");
  }
}

void NcclCommunicator::send(const domino_buffer_t& buffer, int peer, int32_t) {
  const auto in_call = enter("send");
  check_root("send", peer);
  check_buffer("send", buffer);
  DeviceScope scope(device_);
  settle(ncclSend(buffer.ptr, buffer.count, nccl_type(buffer.dtype), peer, comm_, stream_), "send");
}

int NcclCommunicator::recv(const domino_buffer_t& buffer, int peer, int32_t) {
  const auto in_call = enter("recv");
  if (peer < 0) {
    fail(DOMINO_ERR_UNSUPPORTED, "recv",
         "NCCL cannot receive from any source; name the source rank, or receive into a CPU "
         "tensor");
  }
  check_root("recv", peer);
  check_buffer("recv", buffer);
  DeviceScope scope(device_);
  settle(ncclRecv(buffer.ptr, buffer.count, nccl_type(buffer.dtype), peer, comm_, stream_), "recv");
  return peer;
}

}  // namespace domino::nccl
