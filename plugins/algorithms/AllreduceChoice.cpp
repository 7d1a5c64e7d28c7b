#include "AllreduceChoice.h"

#include "PeerLinks.h"
#include "Registration.h"
#include "plugins/common/TransportError.h"
#include "topology/AlgorithmTable.h"

namespace domino::algorithms {

namespace {
std::string no_such(std::string_view name) {
  return "has no all-reduce algorithm '" + std::string(name) + "'; it runs " +
         topology::algorithm_names("all_reduce", topology::AlgorithmHome::kLinks);
}
}  // namespace

std::string parse_allreduce_algorithm(const char* name, const char* transport) {
  if (name == nullptr || name[0] == '\0') return {};
  if (find_allreduce(name) == nullptr) {
    throw TransportError(DOMINO_ERR_INVALID,
                         std::string("the ") + transport + " transport " + no_such(name));
  }
  return name;
}

std::string_view resolve_allreduce_algorithm(std::string_view handed_down, std::string_view forced,
                                             size_t bytes, int ranks, size_t small_message_bytes) {
  if (!handed_down.empty()) return handed_down;
  if (!forced.empty()) return forced;
  return topology::auto_links_allreduce(bytes, ranks, small_message_bytes);
}

void run_allreduce(PeerLinks& links, std::string_view algorithm, void* data, size_t count,
                   int dtype, int op) {
  const AllreduceBody body = find_allreduce(algorithm);
  if (body == nullptr) {
    throw TransportError(DOMINO_ERR_UNSUPPORTED, links.where() + " " + no_such(algorithm));
  }
  body(links, data, count, static_cast<domino_dtype_t>(dtype), static_cast<domino_redop_t>(op));
}

}  // namespace domino::algorithms
