// The plugin ABI's descriptor of one collective call, built in one place: the backend's callers,
// the registry and each transport's per-op ABI entries (PluginTable.h) all describe a call so.
// Torch-free, header only.
#pragma once

#include <cstdint>

#include "domino/plugin.h"
#include "topology/Collectives.h"

namespace domino {

// The descriptor of one collective over the caller's buffers (which must outlive it). An
// all-to-all's counts and offsets are set by the caller afterwards.
inline domino_call_t make_call(topology::Collective op, const domino_buffer_t& send,
                               domino_buffer_t& recv, domino_redop_t redop = DOMINO_SUM,
                               int root = -1) {
  domino_call_t call{};
  call.op = static_cast<uint32_t>(op);
  call.send = &send;
  call.recv = &recv;
  call.redop = redop;
  call.root = static_cast<int32_t>(root);
  return call;
}

}  // namespace domino
