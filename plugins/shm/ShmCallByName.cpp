// Shared memory running a call the way the router chose (ABI collective_with): the algorithm
// table's names for this transport map onto its paths; the costs the router weighs them by are
// topology/ShmCosts.h's.
#include <string>
#include <string_view>

#include "ShmCommunicator.h"
#include "plugins/common/TransportError.h"

namespace domino::shm {

void ShmCommunicator::collective(const domino_call_t& call, const char* algorithm) {
  const auto op = static_cast<Op>(call.op);
  const std::string_view name = algorithm != nullptr ? algorithm : "";
  auto refuse = [&](const std::string& why) {
    throw TransportError(DOMINO_ERR_UNSUPPORTED, std::string("shm ") + topology::entry_name(op) +
                                                     " on " + group_label_ + " " + why);
  };
  Path path = Path::kSegment;
  if (name.empty()) {
    path = Path::kOwn;  // the plugin ABI's per-op entries: the transport's own choice
  } else if (name == "single_copy" &&
             (op == Op::kAllReduce || op == Op::kAllGather || op == Op::kReduceScatter)) {
    // Every rank's probe found the same, so every rank refuses alike.
    if (!single_copy_) refuse("cannot read its peers' memory (single_copy)");
    path = Path::kSingleCopy;
  } else if (op == Op::kAllReduce && (name == "direct" || name == "rsag")) {
    path = name == "direct" ? Path::kDirect : Path::kRsag;
  } else if (name != "segment" || op == Op::kAllReduce) {
    refuse("has no algorithm '" + std::string(name) + "'");
  }
  switch (op) {
    case Op::kAllReduce:
      reduce_to(*call.send, *call.recv, call.redop, -1, Op::kAllReduce, path);
      return;
    case Op::kAllGather:
      allgather_by(*call.send, *call.recv, path);
      return;
    case Op::kReduceScatter:
      reduce_scatter_by(*call.send, *call.recv, call.redop, path);
      return;
    case Op::kBroadcast:
      broadcast(*call.recv, call.root);
      return;
    case Op::kReduce:
      reduce(*call.send, *call.recv, call.redop, call.root);
      return;
    case Op::kGather:
      gather(*call.send, *call.recv, call.root);
      return;
    case Op::kScatter:
      scatter(*call.send, *call.recv, call.root);
      return;
    case Op::kAllToAll:
      alltoall(*call.send, call.send_counts, call.send_offsets, *call.recv, call.recv_counts,
               call.recv_offsets);
      return;
    case Op::kBarrier:
      barrier();
      return;
  }
  refuse("cannot run op " + std::to_string(call.op));
}

}  // namespace domino::shm
