// What a transport's communicator class offers, stated once: the plugin table (PluginTable.h)
// turns exactly these methods into ABI entries, so shm, UCX and NCCL are checked against it at
// compile time. Optional parts (links, collective_with, abort) are detected by the table itself.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>

#include "domino/plugin.h"

namespace domino {

// A method per op (UCX, NCCL), each entry calling its own.
template <class Impl>
concept PerOpCollectives = requires(Impl& comm, const domino_buffer_t& in, domino_buffer_t& out,
                                    domino_redop_t op, const uint64_t* counts) {
  comm.allreduce(in, out, op);
  comm.barrier();
  comm.broadcast(out, 0);
  comm.reduce(in, out, op, 0);
  comm.allgather(in, out);
  comm.reduce_scatter(in, out, op);
  comm.gather(in, out, 0);
  comm.scatter(in, out, 0);
  comm.alltoall(in, counts, counts, out, counts, counts);
};

// One collective(call, algorithm) for every op (shared memory): each entry builds its call and
// hands no name, leaving the choice to the transport.
template <class Impl>
concept CallCollectives = requires(Impl& comm, const domino_call_t& call) {
  comm.collective(call, static_cast<const char*>(nullptr));
};

template <class Impl>
concept RunsCollectives = PerOpCollectives<Impl> || CallCollectives<Impl>;

template <class Impl>
concept TransportCommunicator = std::constructible_from<Impl, const domino_comm_config_t&> &&
    RunsCollectives<Impl> && requires(Impl& comm, const domino_buffer_t& in, domino_buffer_t& out,
                                      std::chrono::milliseconds timeout) {
  comm.send(in, 0, int32_t{0});
  { comm.recv(out, 0, int32_t{0}) } -> std::convertible_to<int>;
  comm.set_timeout(timeout);
};

}  // namespace domino
