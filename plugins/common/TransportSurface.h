// What a transport's communicator class offers, stated once: one collective entry for every op,
// point-to-point messages and a timeout. The plugin table (PluginTable.h) builds every ABI entry
// from exactly these methods, so shm, UCX and NCCL are checked against it at compile time.
// Optional parts (links, abort) are detected by the table itself.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>

#include "domino/plugin.h"

namespace domino {

// collective(call, algorithm): any op of the ABI's domino_call_t; algorithm is the router's
// choice by its table name, or nullptr for the transport's own. A name the transport lacks for
// the op is refused with TransportError(DOMINO_ERR_UNSUPPORTED) before any message.
template <class Impl>
concept TransportCommunicator = std::constructible_from<Impl, const domino_comm_config_t&> &&
    requires(Impl& comm, const domino_call_t& call, const char* algorithm,
             const domino_buffer_t& in, domino_buffer_t& out, std::chrono::milliseconds timeout) {
  comm.collective(call, algorithm);
  comm.send(in, 0, int32_t{0});
  { comm.recv(out, 0, int32_t{0}) } -> std::convertible_to<int>;
  comm.set_timeout(timeout);
};

}  // namespace domino
