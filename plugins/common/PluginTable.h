// The plugin ABI table for a communicator class: each entry turns the C call into a method call
// and any TransportError into a status code and message. Every collective entry, per op or
// named, becomes one collective(call, algorithm) call. Built-in transports use it; an external
// plugin may too, or write its table by hand.
#pragma once

#include <chrono>

#include "CallDescriptor.h"
#include "TransportError.h"
#include "TransportSurface.h"
#include "domino/plugin.h"

namespace domino {

// domino_comm_t stays opaque: it is always an Impl in disguise.
template <TransportCommunicator Impl>
struct PluginTable {
  using Collective = topology::Collective;
  static Impl& self(domino_comm_t* c) { return *reinterpret_cast<Impl*>(c); }

  static int create(const domino_comm_config_t* config, domino_comm_t** comm, char* err, size_t n) {
    return guard_abi(err, n, [&] { *comm = reinterpret_cast<domino_comm_t*>(new Impl(*config)); });
  }
  static void destroy(domino_comm_t* comm) { delete reinterpret_cast<Impl*>(comm); }
  static int allreduce(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv,
                       domino_redop_t op, char* err, size_t n) {
    return run(c, make_call(Collective::kAllReduce, *send, *recv, op), nullptr, err, n);
  }
  static int allreduce_with(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv,
                            domino_redop_t op, const char* algorithm, char* err, size_t n) {
    return run(c, make_call(Collective::kAllReduce, *send, *recv, op), algorithm, err, n);
  }
  static int collective_with(domino_comm_t* c, const domino_call_t* call, const char* algorithm,
                             char* err, size_t n) {
    return run(c, *call, algorithm, err, n);
  }
  static int barrier(domino_comm_t* c, char* err, size_t n) {
    domino_buffer_t none{nullptr, 0, DOMINO_UINT8, -1};
    return run(c, make_call(Collective::kBarrier, none, none), nullptr, err, n);
  }
  static int broadcast(domino_comm_t* c, domino_buffer_t* buffer, int32_t root, char* err,
                       size_t n) {
    return run(c, make_call(Collective::kBroadcast, *buffer, *buffer, DOMINO_SUM, root), nullptr,
               err, n);
  }
  static int reduce(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv,
                    domino_redop_t op, int32_t root, char* err, size_t n) {
    return run(c, make_call(Collective::kReduce, *send, *recv, op, root), nullptr, err, n);
  }
  static int allgather(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv,
                       char* err, size_t n) {
    return run(c, make_call(Collective::kAllGather, *send, *recv), nullptr, err, n);
  }
  static int reduce_scatter(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv,
                            domino_redop_t op, char* err, size_t n) {
    return run(c, make_call(Collective::kReduceScatter, *send, *recv, op), nullptr, err, n);
  }
  static int gather(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv,
                    int32_t root, char* err, size_t n) {
    return run(c, make_call(Collective::kGather, *send, *recv, DOMINO_SUM, root), nullptr, err, n);
  }
  static int scatter(domino_comm_t* c, const domino_buffer_t* send, domino_buffer_t* recv,
                     int32_t root, char* err, size_t n) {
    return run(c, make_call(Collective::kScatter, *send, *recv, DOMINO_SUM, root), nullptr, err, n);
  }
  static int alltoall(domino_comm_t* c, const domino_buffer_t* send, const uint64_t* send_counts,
                      const uint64_t* send_offsets, domino_buffer_t* recv,
                      const uint64_t* recv_counts, const uint64_t* recv_offsets, char* err,
                      size_t n) {
    domino_call_t call = make_call(Collective::kAllToAll, *send, *recv);
    call.send_counts = send_counts;
    call.send_offsets = send_offsets;
    call.recv_counts = recv_counts;
    call.recv_offsets = recv_offsets;
    return run(c, call, nullptr, err, n);
  }
  static int send(domino_comm_t* c, const domino_buffer_t* buffer, int32_t peer, int32_t tag,
                  char* err, size_t n) {
    return guard_abi(err, n, [&] { self(c).send(*buffer, peer, tag); });
  }
  static int recv(domino_comm_t* c, domino_buffer_t* buffer, int32_t peer, int32_t tag,
                  int32_t* source, char* err, size_t n) {
    return guard_abi(err, n, [&] {
      const int from = self(c).recv(*buffer, peer, tag);
      if (source != nullptr) *source = from;
    });
  }

  static int link_send(domino_comm_t* c, const void* data, size_t bytes, int32_t peer, char* err,
                       size_t n) {
    return guard_abi(err, n, [&] { self(c).link_send(data, bytes, peer); });
  }
  static int link_recv(domino_comm_t* c, void* data, size_t bytes, int32_t peer, char* err,
                       size_t n) {
    return guard_abi(err, n, [&] { self(c).link_recv(data, bytes, peer); });
  }
  static int link_wait(domino_comm_t* c, char* err, size_t n) {
    return guard_abi(err, n, [&] { self(c).link_wait(); });
  }

  static int set_timeout(domino_comm_t* c, int64_t timeout_ms, char* err, size_t n) {
    return guard_abi(err, n, [&] {
      if (timeout_ms <= 0) {
        throw TransportError(DOMINO_ERR_INVALID, "a timeout of " + std::to_string(timeout_ms) +
                                                     " ms; it must be positive");
      }
      self(c).set_timeout(std::chrono::milliseconds(timeout_ms));
    });
  }

  static constexpr domino_plugin_t table(const char* name, uint32_t devices) {
    return {DOMINO_PLUGIN_ABI_VERSION,
            name,
            devices,
            create,
            destroy,
            allreduce,
            barrier,
            broadcast,
            reduce,
            allgather,
            reduce_scatter,
            gather,
            scatter,
            alltoall,
            send,
            recv,
            nullptr,
            abort_entry(),
            set_timeout,
            link_send_entry(),
            link_recv_entry(),
            link_wait_entry(),
            named_allreduce_entry(),
            nullptr,
            collective_with};
  }

 private:
  // Every collective entry describes its call and hands it to the one collective method: the
  // per-op entries with no name (the transport's own choice), the named ones with the router's.
  static int run(domino_comm_t* c, const domino_call_t& call, const char* algorithm, char* err,
                 size_t n) {
    return guard_abi(err, n, [&] { self(c).collective(call, algorithm); });
  }
  static constexpr bool kHasLinks = requires(Impl & impl, void* data) {
    impl.link_send(static_cast<const void*>(data), size_t{0}, 0);
    impl.link_recv(data, size_t{0}, 0);
    impl.link_wait();
  };
  // Impls with links (the backend then runs its shared algorithms over them); NULL otherwise.
  // Each entry is named only inside its branch, so an Impl without links never instantiates it.
  static constexpr auto link_send_entry() {
    using Entry = decltype(domino_plugin_t::link_send);
    if constexpr (kHasLinks) {
      return static_cast<Entry>(link_send);
    } else {
      return static_cast<Entry>(nullptr);
    }
  }
  static constexpr auto link_recv_entry() {
    using Entry = decltype(domino_plugin_t::link_recv);
    if constexpr (kHasLinks) {
      return static_cast<Entry>(link_recv);
    } else {
      return static_cast<Entry>(nullptr);
    }
  }
  static constexpr auto link_wait_entry() {
    using Entry = decltype(domino_plugin_t::link_wait);
    if constexpr (kHasLinks) {
      return static_cast<Entry>(link_wait);
    } else {
      return static_cast<Entry>(nullptr);
    }
  }
  // allreduce_with (ABI 6) is how a backend older than collective_with hands an all-reduce's
  // name to a transport without links; one with links gets the name run over them instead, so
  // the entry would only add a refusal there.
  static constexpr auto named_allreduce_entry() {
    using Entry = decltype(domino_plugin_t::allreduce_with);
    if constexpr (kHasLinks) {
      return static_cast<Entry>(nullptr);
    } else {
      return static_cast<Entry>(allreduce_with);
    }
  }
  // Impls that can end what is in flight from another thread (abort(), shrink with abort).
  static constexpr auto abort_entry() {
    using Entry = decltype(domino_plugin_t::comm_abort);
    if constexpr (requires(Impl & impl) { impl.abort(); }) {
      // No exception may cross the C ABI; an abort that could not even be noted changes nothing.
      return static_cast<Entry>([](domino_comm_t* c) {
        try {
          self(c).abort();
        } catch (...) {
        }
      });
    } else {
      return static_cast<Entry>(nullptr);
    }
  }
};

}  // namespace domino
