#include "AlgorithmChoice.h"

#include "PeerLinks.h"
#include "Registration.h"
#include "plugins/common/TransportError.h"
#include "topology/AlgorithmTable.h"

namespace domino::algorithms {

namespace {
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

std::string_view resolve_algorithm(topology::Collective op, std::string_view handed_down,
                                   std::string_view forced, size_t bytes, int ranks,
                                   size_t small_message_bytes) {
  if (!handed_down.empty()) return handed_down;
  if (op == topology::Collective::kAllReduce) {
    if (!forced.empty()) return forced;
    return topology::auto_links_allreduce(bytes, ranks, small_message_bytes);
  }
  const char* name = topology::collective_name(op);
  for (const topology::AlgorithmEntry& e : topology::algorithm_table()) {
    if (topology::find_algorithm(e.name, name, topology::AlgorithmHome::kLinks) == &e)
      return e.name;
  }
  return {};
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
