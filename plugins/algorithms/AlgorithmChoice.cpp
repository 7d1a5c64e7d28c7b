#include "AlgorithmChoice.h"

#include "PeerLinks.h"
#include "Registration.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/TransportError.h"
#include "topology/AlgorithmTable.h"

namespace domino::algorithms {

namespace {
// The message an op's algorithm is chosen on, as the router sizes it (AlgorithmTable.h): one
// rank's block, or the whole buffer, by the op's facts. An all-to-all's ranks send different
// amounts, so it is chosen by the number of ranks alone (or ranks could choose differently); a
// barrier moves nothing.
size_t choice_bytes(const domino_call_t& call) {
  const auto op = static_cast<topology::Collective>(call.op);
  if (op == topology::Collective::kAllToAll || op == topology::Collective::kBarrier) return 0;
  const domino_buffer_t* sized = topology::sized_by_output(op) ? call.recv : call.send;
  return sized != nullptr ? sized->count * dtype_size(sized->dtype) : 0;
}

std::string no_such(const char* op, std::string_view name) {
  return std::string("has no ") + op + " algorithm '" + std::string(name) + "'; it runs " +
         topology::algorithm_names(op, topology::AlgorithmHome::kLinks);
}
}  // namespace

std::string parse_allreduce_algorithm(const char* name, const char* transport) {
  if (name == nullptr || name[0] == '\0') return {};
  if (find_body("all_reduce", name) == nullptr) {
    throw TransportError(DOMINO_ERR_INVALID, std::string("the ") + transport + " transport " +
                                                 no_such("all_reduce", name));
  }
  return name;
}

std::string_view resolve_algorithm(const domino_call_t& call, std::string_view handed_down,
                                   std::string_view forced, int ranks, size_t small_message_bytes) {
  if (!handed_down.empty()) return handed_down;
  const auto op = static_cast<topology::Collective>(call.op);
  if (op == topology::Collective::kAllReduce) {
    if (!forced.empty()) return forced;
    // Not the table's cheapest: no cost makes its entries reproduce this rule at every size (for
    // 2 ranks recursive doubling is always cheapest; for 9 to 15, Rabenseifner for a band above
    // the threshold), and the router prices the transports that choose for themselves by it.
    return topology::auto_links_allreduce(call.recv->count * dtype_size(call.recv->dtype), ranks,
                                          small_message_bytes);
  }
  static const topology::TransportCost kCost = topology::CostModel{}.inter;
  double seconds = 0;
  const topology::AlgorithmEntry* cheapest = topology::cheapest_algorithm(
      topology::collective_name(op), topology::AlgorithmHome::kLinks, ranks,
      static_cast<double>(choice_bytes(call)), 1, kCost, &seconds);
  return cheapest != nullptr ? cheapest->name : std::string_view();
}

bool runs_over_links(topology::Collective op, std::string_view name) {
  return !name.empty() && find_body(topology::collective_name(op), name) != nullptr;
}

void run_algorithm(PeerLinks& links, std::string_view algorithm, const domino_call_t& call) {
  const char* op = topology::collective_name(static_cast<topology::Collective>(call.op));
  const Body body = find_body(op, algorithm);
  if (body == nullptr) {
    throw TransportError(DOMINO_ERR_UNSUPPORTED, links.where() + " " + no_such(op, algorithm));
  }
  body(links, call);
}

}  // namespace domino::algorithms
