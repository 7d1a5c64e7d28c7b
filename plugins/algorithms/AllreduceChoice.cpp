#include "AllreduceChoice.h"

#include <iterator>
#include <string>
#include <string_view>

#include "Algorithms.h"
#include "plugins/common/TransportError.h"
#include "topology/AlgorithmTable.h"

namespace domino::algorithms {

namespace {
// Indexed by AllreduceAlgorithm.
constexpr const char* kNames[] = {"auto", "ring", "recursive_doubling", "rabenseifner"};

AllreduceAlgorithm from_name(std::string_view name) {
  for (size_t i = 1; i < std::size(kNames); ++i) {
    if (name == kNames[i]) return static_cast<AllreduceAlgorithm>(i);
  }
  return AllreduceAlgorithm::kAuto;
}
}  // namespace

AllreduceAlgorithm parse_allreduce_algorithm(const char* name, const char* transport) {
  if (name == nullptr || name[0] == '\0') return AllreduceAlgorithm::kAuto;
  const AllreduceAlgorithm algorithm = from_name(name);
  if (algorithm == AllreduceAlgorithm::kAuto ||
      topology::find_algorithm(name, "all_reduce", topology::AlgorithmHome::kLinks) == nullptr) {
    throw TransportError(
        DOMINO_ERR_INVALID,
        std::string("the ") + transport + " transport has no all-reduce algorithm '" + name +
            "'; it runs " +
            topology::algorithm_names("all_reduce", topology::AlgorithmHome::kLinks));
  }
  return algorithm;
}

const char* allreduce_algorithm_name(AllreduceAlgorithm algorithm) {
  return kNames[static_cast<size_t>(algorithm)];
}

AllreduceAlgorithm auto_allreduce_algorithm(size_t bytes, int ranks, size_t small_message_bytes) {
  return from_name(topology::auto_links_allreduce(bytes, ranks, small_message_bytes));
}

AllreduceAlgorithm resolve_allreduce_algorithm(AllreduceAlgorithm forced, size_t bytes, int ranks,
                                               size_t small_message_bytes) {
  return forced != AllreduceAlgorithm::kAuto
             ? forced
             : auto_allreduce_algorithm(bytes, ranks, small_message_bytes);
}

void run_allreduce(PeerLinks& links, AllreduceAlgorithm algorithm, void* data, size_t count,
                   int dtype, int op) {
  const auto d = static_cast<domino_dtype_t>(dtype);
  const auto o = static_cast<domino_redop_t>(op);
  switch (algorithm) {
    case AllreduceAlgorithm::kRing:
      return allreduce_ring(links, data, count, d, o);
    case AllreduceAlgorithm::kRabenseifner:
      return allreduce_rabenseifner(links, data, count, d, o);
    case AllreduceAlgorithm::kRecursiveDoubling:
      return allreduce_recursive_doubling(links, data, count, d, o);
    case AllreduceAlgorithm::kAuto:
      break;
  }
  throw TransportError(DOMINO_ERR_INVALID,
                       links.where() + ": no all-reduce algorithm chosen (kAuto reached the run)");
}

}  // namespace domino::algorithms
