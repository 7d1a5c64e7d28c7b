#include "UcxWorker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "UcxNetDevices.h"
#include "plugins/common/Directory.h"
#include "plugins/common/SpinPolicy.h"
#include "plugins/common/TransportError.h"

namespace domino::ucx {

namespace {
[[noreturn]] void fail(const char* call, ucs_status_t status) {
  throw TransportError(DOMINO_ERR_SYSTEM,
                       std::string("UCX ") + call + " failed: " + ucs_status_string(status) +
                           ". Check UCX_TLS and UCX_NET_DEVICES (ucx_info -d lists what this "
                           "host offers).");
}

// Over TCP, a rendezvous handshake (the default above a few KiB) waits behind the bulk data queued
// on the link and needs the receiving rank's thread to wake mid-compute, so overlapped reductions
// stall (bench/overlap: 10% of the communication hidden instead of 70%). Eager messages just
// stream, as Gloo's do; the cap bounds what UCX buffers for a receive not yet posted.
constexpr const char* kTcpEagerLimit = "64M";

bool host_has_rdma_device() {
  return !directory_entries("/sys/class/infiniband").empty();
}

// This thread's wake descriptor (an eventfd), or -1 when none can be made.
int thread_wake_fd() {
  struct WakeFd {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ~WakeFd() {
      if (fd >= 0) close(fd);
    }
  };
  thread_local const WakeFd wake;
  return wake.fd;
}

void sleep_for_microseconds(long us) {
  // Linux lets a 5 us sleep last 50 us more (the thread's default timer slack), which would
  // add that to every small message that misses the spin: ask for 1 us of slack instead.
  thread_local const bool tight = prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0;
  (void)tight;
  timespec ts{0, us * 1000};
  nanosleep(&ts, nullptr);
}
}  // namespace

UcxWorker& UcxWorker::instance(const char* socket_interfaces) {
  // Never destroyed: endpoints may still be closing when static destructors run, and UCX
  // releases everything at process exit anyway.
  static std::mutex mutex;
  static UcxWorker* worker = nullptr;
  const std::string wanted = socket_interfaces != nullptr ? socket_interfaces : "";
  std::lock_guard<std::mutex> lock(mutex);
  if (worker == nullptr) {
    worker = new UcxWorker(wanted);
  } else if (!wanted.empty() && wanted != worker->socket_interfaces_ &&
             std::getenv("UCX_NET_DEVICES") == nullptr) {
    throw TransportError(
        DOMINO_ERR_INVALID,
        "ucx: this communicator asks for the network interfaces '" + wanted +
            "', but this process's UCX started with " +
            (worker->net_devices_.empty() ? std::string("every device it found")
                                          : "NET_DEVICES '" + worker->net_devices_ + "'") +
            ", and UCX reads its devices once per process. Choose the interfaces before the "
            "process's first group (DOMINO_SOCKET_IFNAME) and keep them for its later ones.");
  }
  return *worker;
}

UcxWorker::UcxWorker(const std::string& socket_interfaces) : socket_interfaces_(socket_interfaces) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) fail("ucp_config_read", status);
  // The user's UCX_NET_DEVICES wins; RDMA ports stay, since interface names do not cover them.
  if (std::getenv("UCX_NET_DEVICES") == nullptr && !socket_interfaces.empty()) {
    net_devices_ = net_devices_value(socket_interfaces, active_rdma_ports());
    status = ucp_config_modify(config, "NET_DEVICES", net_devices_.c_str());
    if (status != UCS_OK) {
      ucp_config_release(config);
      throw TransportError(DOMINO_ERR_INVALID,
                           "UCX refused NET_DEVICES '" + net_devices_ + "' (" +
                               ucs_status_string(status) +
                               "). Check DOMINO_SOCKET_IFNAME, or name UCX's devices yourself "
                               "with UCX_NET_DEVICES (ucx_info -d lists them).");
    }
  }
  // The user's UCX_RNDV_THRESH wins; without RDMA devices every inter-host byte goes over TCP.
  if (std::getenv("UCX_RNDV_THRESH") == nullptr && !host_has_rdma_device()) {
    // A UCX that refuses the value keeps its own threshold: slower overlap, nothing wrong.
    (void)ucp_config_modify(config, "RNDV_THRESH", kTcpEagerLimit);
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  status = ucp_init(&params, config, &context_);
  if (status != UCS_OK) {
    // Transports without wake-up events only (a UCX_TLS that names just those): waiters fall
    // back to short sleeps.
    params.features = UCP_FEATURE_TAG;
    status = ucp_init(&params, config, &context_);
  }
  ucp_config_release(config);
  if (status != UCS_OK) fail("ucp_init", status);

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  status = ucp_worker_create(context_, &worker_params, &worker_);
  if (status != UCS_OK) fail("ucp_worker_create", status);

  ucp_address_t* address = nullptr;
  size_t length = 0;
  status = ucp_worker_get_address(worker_, &address, &length);
  if (status != UCS_OK) fail("ucp_worker_get_address", status);
  address_.assign(reinterpret_cast<const char*>(address), length);
  ucp_worker_release_address(worker_, address);
  if (ucp_worker_get_efd(worker_, &event_fd_) != UCS_OK) event_fd_ = -1;
}

const UcxWorker::Endpoint* UcxWorker::endpoint(const std::string& peer_address,
                                               ucs_status_t* status_out) {
  auto found = endpoints_.find(peer_address);
  if (found != endpoints_.end()) {
    if (found->second.health->failure == UCS_OK) return &found->second;
    // A failed endpoint stays failed; a live peer (one that only closed its side) takes a new one.
    drop_endpoint(peer_address);
  }
  auto health = std::make_shared<EndpointHealth>();
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(peer_address.data());
  // Peer mode: a dead peer fails our sends instead of leaving them pending forever, and the
  // handler marks the endpoint so that receives from that peer fail too. Runs inside progress,
  // so under mutex_.
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = [](void* arg, ucp_ep_h, ucs_status_t status) {
    static_cast<EndpointHealth*>(arg)->failure = status;
  };
  params.err_handler.arg = health.get();
  ucp_ep_h ep = nullptr;
  ucs_status_t status = ucp_ep_create(worker_, &params, &ep);
  if (status != UCS_OK) {
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;  // transports that cannot detect peer failure
    status = ucp_ep_create(worker_, &params, &ep);
  }
  *status_out = status;
  if (status != UCS_OK) return nullptr;  // the peer is likely gone: the caller names it
  return &endpoints_.insert_or_assign(peer_address, Endpoint{ep, std::move(health)}).first->second;
}

void UcxWorker::drop_endpoint(const std::string& peer_address, ucp_ep_h expected) {
  auto found = endpoints_.find(peer_address);
  if (found == endpoints_.end()) return;
  if (expected != nullptr && found->second.ep != expected) return;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;  // cancels what is still queued on it
  void* request = ucp_ep_close_nbx(found->second.ep, &param);
  if (UCS_PTR_IS_PTR(request)) {
    while (ucp_request_check_status(request) == UCS_INPROGRESS) progress();
    ucp_request_free(request);
  }
  // Closed: its error handler no longer runs, so its health may go with the receives holding it.
  endpoints_.erase(found);
}

bool UcxWorker::claim_id(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return ids_.emplace(id, 1).second;
}

void UcxWorker::release_id(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  ids_.erase(id);
}

Transfer UcxWorker::post_send(const std::string& peer_address, int peer, ucp_tag_t tag,
                              const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  Transfer t;
  t.peer = peer;
  t.bytes = bytes;
  t.peer_address = peer_address;
  ucs_status_t connected = UCS_OK;
  const Endpoint* endpoint_to_peer = endpoint(peer_address, &connected);
  if (endpoint_to_peer == nullptr) {
    t.status = connected;
    return t;
  }
  t.endpoint = endpoint_to_peer->ep;
  ucp_request_param_t param{};
  void* request = ucp_tag_send_nbx(endpoint_to_peer->ep, data, bytes, tag, &param);
  if (UCS_PTR_IS_ERR(request)) {
    t.status = UCS_PTR_STATUS(request);
  } else {
    t.request = request;  // null: already sent
  }
  return t;
}

Transfer UcxWorker::post_receive(const std::string& peer_address, int peer, ucp_tag_t tag,
                                 ucp_tag_t mask, void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  Transfer t;
  t.peer = peer;
  t.is_receive = true;
  t.bytes = bytes;
  if (!peer_address.empty()) {
    // Connecting to the sender, even when this rank never sends to it, is what lets UCX tell
    // this rank that the sender died. Where it cannot even connect, the receive waits as before
    // (at most the timeout): a sender that already left may have sent it first. An endpoint
    // that failed is kept, not made again: UCX read all the sender sent before the failure, so
    // the receive may already be matched, and a new endpoint to a sender that has left would
    // retry a closed port (where UCX 1.13 can abort the process, tcp_ep.c:478). poll() makes
    // it again, once, for a receive the failure leaves pending.
    auto cached = endpoints_.find(peer_address);
    ucs_status_t connected = UCS_OK;
    const Endpoint* sender =
        cached != endpoints_.end() ? &cached->second : endpoint(peer_address, &connected);
    if (sender != nullptr) {
      t.peer_address = peer_address;
      t.sender_health = sender->health;
    }
  }
  t.info = std::make_shared<ucp_tag_recv_info_t>();
  ucp_request_param_t param{};
  // Always a request, completed through the callback: UCX 1.13 leaves recv_info unfilled when a
  // receive completes inside the call.
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = [](void*, ucs_status_t, const ucp_tag_recv_info_t* info, void* user_data) {
    *static_cast<ucp_tag_recv_info_t*>(user_data) = *info;
  };
  param.user_data = t.info.get();
  void* request = ucp_tag_recv_nbx(worker_, data, bytes, tag, mask, &param);
  if (UCS_PTR_IS_ERR(request)) {
    t.status = UCS_PTR_STATUS(request);
  } else {
    t.request = request;
  }
  return t;
}

void UcxWorker::notify(const std::string& peer_address, ucp_tag_t tag) {
  static const uint64_t kWord = 0;  // outlives any send of it
  std::lock_guard<std::mutex> lock(mutex_);
  ucs_status_t connected = UCS_OK;
  const Endpoint* to_peer = endpoint(peer_address, &connected);
  if (to_peer == nullptr) return;
  ucp_request_param_t param{};
  void* request = ucp_tag_send_nbx(to_peer->ep, &kWord, sizeof kWord, tag, &param);
  if (UCS_PTR_IS_PTR(request)) ucp_request_free(request);  // UCX completes it on its own
}

void UcxWorker::flush(const std::vector<std::string>& peer_addresses,
                      std::chrono::steady_clock::time_point deadline) {
  std::vector<void*> requests;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& address : peer_addresses) {
      auto found = endpoints_.find(address);
      if (found == endpoints_.end() || found->second.health->failure != UCS_OK) continue;
      ucp_request_param_t param{};
      void* request = ucp_ep_flush_nbx(found->second.ep, &param);
      if (UCS_PTR_IS_PTR(request)) requests.push_back(request);
    }
  }
  // The lock is taken per round and the core handed on between rounds, so that other groups'
  // threads, and peer ranks sharing the cores, keep their turns meanwhile.
  for (void* request : requests) {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (ucp_request_check_status(request) != UCS_INPROGRESS ||
            std::chrono::steady_clock::now() >= deadline) {
          // One still pending past the deadline is UCX's to finish: freeing it cancels nothing.
          ucp_request_free(request);
          break;
        }
        progress();
      }
      std::this_thread::yield();
    }
  }
}

void UcxWorker::take_completion(Transfer& t, ucs_status_t status) {
  t.status = status;
  // A truncated message was matched too: its tag says what the sender was doing.
  if (t.is_receive && (status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED)) {
    t.sender_tag = t.info->sender_tag;
    t.received_bytes = t.info->length;
  }
  ucp_request_free(t.request);
  t.request = nullptr;
}

bool UcxWorker::landed_locked(Transfer& t) {
  if (t.request != nullptr) {
    const ucs_status_t status = ucp_request_check_status(t.request);
    if (status != UCS_INPROGRESS) take_completion(t, status);
  }
  return t.request == nullptr && t.status == UCS_OK && t.info != nullptr;
}

bool UcxWorker::landed(Transfer& t) {
  std::lock_guard<std::mutex> lock(mutex_);
  progress();
  return landed_locked(t);
}

void UcxWorker::cancel(Transfer& t) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (t.request != nullptr) cancel_receive(t);
}

void UcxWorker::progress() {
  unsigned progressed = 0;
  for (unsigned n; (n = ucp_worker_progress(worker_)) != 0;) progressed += n;
  if (progressed == 0) return;
  const uint64_t one = 1;
  for (int fd : sleeping_) (void)!write(fd, &one, sizeof one);
}

ucs_status_t UcxWorker::cancel_receive(Transfer& t) {
  ucp_request_cancel(worker_, t.request);
  // A receive already matched to a message in flight cannot be cancelled; give it a bounded
  // chance to end, else leave the request to UCX (the communicator is broken).
  for (int spin = 0; spin < 100000 && ucp_request_check_status(t.request) == UCS_INPROGRESS;
       ++spin) {
    progress();
  }
  const ucs_status_t status = ucp_request_check_status(t.request);
  if (status != UCS_INPROGRESS) {
    take_completion(t, status);
  } else {
    // Its completion callback may still write here, after the caller has gone.
    new std::shared_ptr<ucp_tag_recv_info_t>(t.info);
    t.request = nullptr;
  }
  return status;
}

void UcxWorker::stop_sleeping(int wake_fd) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = std::find(sleeping_.begin(), sleeping_.end(), wake_fd);
    if (found != sleeping_.end()) sleeping_.erase(found);
  }
  uint64_t count = 0;
  (void)!read(wake_fd, &count, sizeof count);
}

bool UcxWorker::poll(std::vector<Transfer>& transfers) {
  progress();
  bool all_done = true;
  for (Transfer& t : transfers) {
    if (t.request == nullptr) continue;
    const ucs_status_t status = ucp_request_check_status(t.request);
    if (status == UCS_INPROGRESS) {
      if (t.sender_health != nullptr && t.sender_health->failure != UCS_OK) {
        if (!t.reconnected) {
          // Once: a live sender takes the new endpoint; a dead one fails it too.
          t.reconnected = true;
          ucs_status_t connected = UCS_OK;
          const Endpoint* sender = endpoint(t.peer_address, &connected);
          if (sender != nullptr) {
            t.sender_health = sender->health;
            all_done = false;
            continue;
          }
        }
        // What the sender sent before it failed has been delivered by the progress above: a
        // receive still pending now will not complete. wait() cancels the others; this one
        // reports what UCX said of the sender.
        const ucs_status_t failure = t.sender_health->failure;
        const ucs_status_t final_status = cancel_receive(t);
        t.status = final_status == UCS_OK ? UCS_OK : failure;
        continue;
      }
      all_done = false;
      continue;
    }
    // A send that failed leaves its endpoint unusable: the next user of the peer reconnects.
    if (!t.is_receive && status != UCS_OK) drop_endpoint(t.peer_address, t.endpoint);
    take_completion(t, status);
  }
  return all_done;
}

std::vector<size_t> UcxWorker::wait(std::vector<Transfer>& transfers,
                                    std::chrono::steady_clock::time_point deadline,
                                    ucp_tag_t check_mask, ucp_tag_t check_value,
                                    const std::atomic<bool>* stop, Transfer* notice) {
  // Spin briefly (a small message's round trip takes tens of microseconds), then sleep until the
  // network or another thread has news, so that ranks sharing few cores leave them to whoever
  // has work. The spin yields the core each round only where that hands it to a peer rank, not
  // to this process's own compute (SpinPolicy.h): a caller running its blocking op spins 64
  // yielding rounds, a lane thread 50 us without yielding. A failed transfer ends the wait at
  // once: its partners would otherwise sit out the timeout.
  const bool yielding = spin_may_yield();
  constexpr int kYieldingRounds = 64;
  constexpr auto kSpin = std::chrono::microseconds(50);
  const auto spin_end = std::chrono::steady_clock::now() + kSpin;
  int round = 0;
  bool spinning = true;
  int naps = 0;  // without wake-ups: short sleeps first, longer ones once a wait drags on
  // Bounds each sleep in case an event reaches no descriptor (and for the deadline).
  constexpr auto kLongestSleep = std::chrono::milliseconds(10);
  auto disagrees = [&](const Transfer& t) {
    const ucp_tag_t seen = t.sender_tag & check_mask;
    return t.is_receive && check_mask != 0 && t.status == UCS_OK && seen != 0 &&
           seen != check_value;
  };
  bool failed = false;
  for (;;) {
    spinning = spinning &&
               (yielding ? round++ < kYieldingRounds : std::chrono::steady_clock::now() < spin_end);
    const int wake_fd = spinning ? -1 : thread_wake_fd();
    bool armed = false, events_pending = false;
    int sleep_on = -1;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (poll(transfers)) return {};
      for (const Transfer& t : transfers)
        failed = failed || (t.request == nullptr && (t.status != UCS_OK || disagrees(t)));
      failed = failed || (notice != nullptr && landed_locked(*notice));
      if (!failed && wake_fd >= 0 && event_fd_ >= 0) {
        const ucs_status_t status = ucp_worker_arm(worker_);
        if (status == UCS_OK) {
          armed = true;
          sleep_on = event_fd_;
          sleeping_.push_back(wake_fd);
        } else if (status == UCS_ERR_BUSY) {
          events_pending = true;  // they came in since the progress above
        } else {
          event_fd_ = -1;  // wake-up does not work here: short sleeps from now on
        }
      }
    }
    if (failed) break;
    if (spinning) {
      if (yielding) std::this_thread::yield();
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || (stop != nullptr && stop->load())) {
      if (armed) stop_sleeping(wake_fd);
      break;
    }
    if (events_pending) continue;
    if (armed) {
      const auto nap = std::min<std::chrono::nanoseconds>(deadline - now, kLongestSleep);
      const timespec limit{static_cast<time_t>(nap.count() / 1000000000),
                           static_cast<long>(nap.count() % 1000000000)};
      pollfd descriptors[2] = {{sleep_on, POLLIN, 0}, {wake_fd, POLLIN, 0}};
      ppoll(descriptors, 2, &limit, nullptr);
      stop_sleeping(wake_fd);
    } else {
      sleep_for_microseconds(naps++ < 960 ? 5 : 50);
    }
  }
  std::vector<size_t> late;
  std::lock_guard<std::mutex> lock(mutex_);
  // A send to a live peer usually completes within moments (eager ones once UCX has taken the
  // bytes): given that time, its endpoint, which other groups share, stays open.
  constexpr auto kSendGrace = std::chrono::milliseconds(50);
  const auto grace_end = std::chrono::steady_clock::now() + kSendGrace;
  auto sends_pending = [&] {
    for (Transfer& t : transfers) {
      if (t.is_receive || t.request == nullptr) continue;
      const ucs_status_t status = ucp_request_check_status(t.request);
      if (status == UCS_INPROGRESS) return true;
      take_completion(t, status);
    }
    return false;
  };
  while (sends_pending() && std::chrono::steady_clock::now() < grace_end) progress();
  for (size_t i = 0; i < transfers.size(); ++i) {
    Transfer& t = transfers[i];
    if (t.request == nullptr) continue;
    if (!failed) late.push_back(i);
    if (t.is_receive) {
      cancel_receive(t);
    } else {
      // Closing the endpoint cancels the send, so UCX stops reading the caller's buffer. The
      // endpoint is shared: other groups' sends to this peer fail too.
      ucp_request_free(t.request);
      drop_endpoint(t.peer_address, t.endpoint);
    }
    t.request = nullptr;
    t.status = failed ? UCS_ERR_CANCELED : UCS_ERR_TIMED_OUT;
  }
  if (failed) drop_failed_endpoints();
  return late;
}

void UcxWorker::drop_failed_endpoints() {
  // A dead peer's endpoint would otherwise stay, with its connection's descriptor, until some
  // group called that peer again, which none will.
  std::vector<std::string> failed;
  for (const auto& [address, known] : endpoints_) {
    if (known.health->failure != UCS_OK) failed.push_back(address);
  }
  for (const std::string& address : failed) drop_endpoint(address);
}

}  // namespace domino::ucx
