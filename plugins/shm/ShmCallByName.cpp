// Shared memory running a call: by the path the router named (ABI collective_with), or handed no
// name, by the algorithm table's cheapest for it. Either way a path registered from its own file
// (ShmAlgorithms.h) runs it.
#include <string>
#include <string_view>

#include "ShmAlgorithms.h"
#include "ShmCommunicator.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/TransportError.h"

namespace domino::shm {

void ShmCommunicator::refuse(Op op, const std::string& why) const {
  throw TransportError(DOMINO_ERR_UNSUPPORTED, std::string("shm ") + topology::entry_name(op) +
                                                   " on " + group_label_ + " " + why);
}

void ShmCommunicator::collective(const domino_call_t& call, const char* algorithm) {
  const auto op = static_cast<Op>(call.op);
  if (call.op >= topology::kCollectiveCount) refuse(op, "cannot run op " + std::to_string(call.op));
  auto body_named = [&](std::string_view name) {
    const ShmBody body = find_shm_body(op, name);
    if (body == nullptr) refuse(op, "has no algorithm '" + std::string(name) + "'");
    return body;
  };
  if (algorithm != nullptr && algorithm[0] != '\0') return body_named(algorithm)(*this, call);
  // The message as the router sizes it (AlgorithmTable.h); a buffer the op has none of is NULL.
  const domino_buffer_t* sized = topology::sized_by_output(op) ? call.recv : call.send;
  const double bytes =
      sized == nullptr ? 0.0 : static_cast<double>(sized->count * dtype_size(sized->dtype));
  const uint64_t version = topology::algorithm_table_version();
  if (own_choice_.op != call.op || own_choice_.bytes != bytes ||
      own_choice_.table_version != version) {
    const topology::AlgorithmEntry* own = shm_own_choice(op, size_, bytes, own_cost_);
    if (own == nullptr) refuse(op, "has no priced algorithm");
    own_choice_ = {call.op, bytes, version, body_named(own->name)};
  }
  own_choice_.body(*this, call);
}

}  // namespace domino::shm
