// The process's one UCX context and worker (UCP tag API), shared by every communicator of every
// group and lane: UCX wants one worker per process, and an endpoint to a peer serves every group
// that peer is in. UCP runs in serialized mode under one mutex; waiting threads take turns
// progressing it, so no thread of ours ever sits inside UCX for long. A waiter that finds nothing
// to do sleeps on the worker's event descriptor (UCX wake-up) and on a wake descriptor of its
// own, so ranks waiting on the network leave the cores to compute and to the ranks that share
// them; a thread whose progress moved anything wakes the sleepers through their own
// descriptors (the worker's can be re-armed, and so emptied, by anyone).
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace domino::ucx {

// What UCX has said of one endpoint: set from its error callback when the peer's process or link
// is gone (a TCP peer's socket closes when its process dies). Transports that cannot detect
// peer failure (UCX_TLS=sm alone) leave it unset: their survivors learn at the group timeout.
struct EndpointHealth {
  ucs_status_t failure = UCS_OK;
};

// One posted send or receive. request is null once it has completed.
struct Transfer {
  void* request = nullptr;
  int peer = -1;  // communicator rank, for messages; -1 for a receive from any rank
  bool is_receive = false;
  size_t bytes = 0;
  ucs_status_t status = UCS_OK;
  ucp_tag_t sender_tag = 0;  // receives: the tag the message carried
  size_t received_bytes = 0;
  // Receives: filled by UCX's completion callback (it outlives any move of the Transfer).
  std::shared_ptr<ucp_tag_recv_info_t> info;
  std::string peer_address;     // the endpoint's key: sends drop it if the peer fails
  ucp_ep_h endpoint = nullptr;  // sends: the one used, so that only it is dropped
  // Receives from one peer: the endpoint to that peer when posted. A receive is not bound to an
  // endpoint in UCX, so without this one from a dead peer would wait out the group's timeout.
  std::shared_ptr<const EndpointHealth> sender_health;
  // Receives: whether the endpoint was made again once. A live peer that closed its side (it
  // cancelled a send after some other failure) resets ours; only a second failure means gone.
  bool reconnected = false;
};

class UcxWorker {
 public:
  // Starts UCX on first use (reading UCX_* variables such as UCX_TLS and UCX_NET_DEVICES), its
  // network devices restricted to socket_interfaces (comma-separated names; NULL or "": UCX's
  // own choice) plus every active RDMA port, unless the user set UCX_NET_DEVICES. UCX reads its
  // devices once: a later call whose non-empty socket_interfaces differ from the first call's
  // throws TransportError (DOMINO_ERR_INVALID) naming both. Throws TransportError with UCX's
  // reason when UCX cannot start.
  static UcxWorker& instance(const char* socket_interfaces = nullptr);

  const std::string& address() const { return address_; }
  // What this worker's UCX was given as NET_DEVICES; "" when UCX chose (or UCX_NET_DEVICES).
  const std::string& net_devices() const { return net_devices_; }

  // Communicators share the worker and tell their messages apart by an id in the tag: two live
  // ones in one process must not share it. Returns false when id is taken.
  bool claim_id(uint64_t id);
  void release_id(uint64_t id);

  Transfer post_send(const std::string& peer_address, int peer, ucp_tag_t tag, const void* data,
                     size_t bytes);
  // peer_address: the sender's, or "" for a receive from any rank.
  Transfer post_receive(const std::string& peer_address, int peer, ucp_tag_t tag, ucp_tag_t mask,
                        void* data, size_t bytes);
  // Sends an empty message with tag to the peer and forgets it: nobody waits for it, and a peer
  // that cannot be reached simply does not get it.
  void notify(const std::string& peer_address, ucp_tag_t tag);
  // Progresses until what this process sent to these peers has left it (handed to the transport:
  // the socket, over TCP), UCX's own connection handshakes included, or deadline passes; peers
  // it never reached are skipped. A process that leaves with a handshake half done makes the
  // peer's UCX 1.13 connect back to a closed port, and that peer aborts (tcp_ep.c:478) instead
  // of failing the connection. The endpoints are shared: other groups' sends to these peers
  // are waited for too.
  void flush(const std::vector<std::string>& peer_addresses,
             std::chrono::steady_clock::time_point deadline);
  // Whether the posted receive t has landed (then its request is freed and sender_tag set).
  bool landed(Transfer& t);
  // Cancels the posted receive t, if it is still pending.
  void cancel(Transfer& t);
  // Progresses until every transfer has completed or deadline passes. Returns the indexes of
  // those still incomplete (already cancelled, their endpoints closed); completed ones carry
  // their status. A failed transfer ends the wait at once (the rest are cancelled), and so does
  // a receive whose sender's tag, under check_mask, is neither check_value nor 0. *stop, once
  // set (from any thread), ends it as the deadline does; so does *notice (a posted receive) once
  // it has landed, which then fails the wait like a failed transfer.
  std::vector<size_t> wait(std::vector<Transfer>& transfers,
                           std::chrono::steady_clock::time_point deadline, ucp_tag_t check_mask = 0,
                           ucp_tag_t check_value = 0, const std::atomic<bool>* stop = nullptr,
                           Transfer* notice = nullptr);

 private:
  explicit UcxWorker(const std::string& socket_interfaces);
  struct Endpoint {
    ucp_ep_h ep = nullptr;
    // Also the error callback's argument: it lives until the endpoint is closed.
    std::shared_ptr<EndpointHealth> health;
  };
  // Cached or new (a cached one that failed is replaced); null (with the reason in status) when
  // the peer cannot be reached. Under mutex_.
  const Endpoint* endpoint(const std::string& peer_address, ucs_status_t* status);
  // Under mutex_; only if it is still `expected` (when given): a newer one to the same peer
  // serves other groups.
  void drop_endpoint(const std::string& peer_address, ucp_ep_h expected = nullptr);
  void drop_failed_endpoints();                 // under mutex_: those UCX reported failed
  bool poll(std::vector<Transfer>& transfers);  // under mutex_; true when all done
  bool landed_locked(Transfer& t);              // under mutex_
  // Under mutex_: records a finished request's status (and a receive's tag and length), frees it.
  void take_completion(Transfer& t, ucs_status_t status);
  // Under mutex_: cancels a pending receive; its request is null afterwards. Returns its final
  // status: UCS_OK where the message landed meanwhile.
  ucs_status_t cancel_receive(Transfer& t);
  // Under mutex_: drains the worker's events; when any moved, wakes every sleeper.
  void progress();
  // Takes this thread's wake descriptor off the sleepers and empties it.
  void stop_sleeping(int wake_fd);

  std::mutex mutex_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
  std::string socket_interfaces_;  // as the first caller named them
  std::string net_devices_;
  int event_fd_ = -1;  // -1: UCX offers no wake-up here, waiters poll with short sleeps
  // Wake descriptors of the threads asleep on event_fd_ (under mutex_): completions another
  // thread handles for them will not signal event_fd_ again.
  std::vector<int> sleeping_;
  std::map<std::string, Endpoint> endpoints_;
  std::map<uint64_t, int> ids_;
};

}  // namespace domino::ucx
