// What a transport runs over its links when the router hands it no name (resolve_algorithm):
// the same, for every op, size and group of 2 to 16 ranks, as the rule it replaced, written out
// here; and a name handed down or forced comes first.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugins/algorithms/AlgorithmChoice.h"
#include "plugins/common/CallDescriptor.h"
#include "topology/AlgorithmTable.h"
#include "topology/CostModel.h"

namespace domino {
namespace {

using topology::Collective;

// The rule before the table was asked for the cheapest: an all-reduce forced at creation ran
// that; else recursive doubling at or below the threshold and, above it, Rabenseifner for a power
// of two ranks and ring otherwise. Any other op ran the table's first algorithm over links for it,
// in table order.
std::string previous_choice(Collective op, size_t bytes, int ranks, size_t small_message_bytes,
                            const std::string& forced) {
  if (op == Collective::kAllReduce) {
    if (!forced.empty()) return forced;
    if (bytes <= small_message_bytes) return "recursive_doubling";
    return (ranks & (ranks - 1)) == 0 ? "rabenseifner" : "ring";
  }
  for (const topology::AlgorithmEntry& entry : topology::algorithm_table()) {
    if (entry.home != topology::AlgorithmHome::kLinks) continue;
    for (std::string_view served : entry.ops) {
      if (served == topology::collective_name(op)) return std::string(entry.name);
    }
  }
  return "";
}

// 8 B to 1 GiB: every power of two, its neighbours, and the point halfway to the next.
std::vector<size_t> message_sizes() {
  std::vector<size_t> sizes;
  for (size_t bytes = 8; bytes <= (size_t{1} << 30); bytes *= 2) {
    for (size_t b : {bytes - 1, bytes, bytes + 1, bytes + bytes / 2}) {
      if (b <= (size_t{1} << 30)) sizes.push_back(b);
    }
  }
  return sizes;
}

// The thresholds transports are handed: the router's for links between hosts at each of these
// costs (recursive_doubling_limit), and the default where it hands none (0 in the config).
std::vector<size_t> thresholds(int ranks) {
  std::vector<size_t> out = {algorithms::kDefaultSmallMessageBytes};
  for (const topology::TransportCost& cost :
       {topology::CostModel{}.inter, topology::CostModel{}.intra, topology::TransportCost{2, 12.5},
        topology::TransportCost{300, 1.2}, topology::TransportCost{1, 400}}) {
    const size_t limit = topology::recursive_doubling_limit(ranks, cost);
    out.push_back(limit != 0 ? limit : algorithms::kDefaultSmallMessageBytes);
  }
  return out;
}

TEST(AlgorithmChoice, HandedNoNameEveryOpRunsWhatItRanBeforeAtEverySizeAndGroup) {
  const std::vector<size_t> sizes = message_sizes();
  size_t compared = 0;
  for (Collective op : topology::kCollectives) {
    for (int ranks = 2; ranks <= 16; ++ranks) {
      for (size_t small : thresholds(ranks)) {
        for (size_t bytes : sizes) {
          // Only sizes are read: no memory behind the buffers. The op's facts say which one
          // gives its size; both do here.
          domino_buffer_t message{nullptr, bytes, DOMINO_UINT8, -1};
          domino_call_t call = make_call(op, message, message, DOMINO_SUM, 0);
          for (const char* forced : {"", "ring"}) {
            ASSERT_EQ(algorithms::resolve_algorithm(call, "", forced, ranks, small),
                      previous_choice(op, bytes, ranks, small, forced))
                << topology::collective_name(op) << " of " << bytes << " bytes among " << ranks
                << " ranks, threshold " << small << ", forced '" << forced << "'";
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 100000u);
}

TEST(AlgorithmChoice, ANameHandedDownComesFirstThenOneForcedAtCreation) {
  std::vector<char> data(4096);
  domino_buffer_t message{data.data(), data.size(), DOMINO_UINT8, -1};
  const domino_call_t all_reduce = make_call(Collective::kAllReduce, message, message);
  EXPECT_EQ(algorithms::resolve_algorithm(all_reduce, "", "", 4, 65536), "recursive_doubling");
  EXPECT_EQ(algorithms::resolve_algorithm(all_reduce, "", "ring", 4, 65536), "ring");
  EXPECT_EQ(algorithms::resolve_algorithm(all_reduce, "rabenseifner", "ring", 4, 65536),
            "rabenseifner");
  // A name forced at creation is an all-reduce's: other ops keep their own.
  const domino_call_t all_gather = make_call(Collective::kAllGather, message, message);
  EXPECT_EQ(algorithms::resolve_algorithm(all_gather, "", "recursive_doubling", 4, 65536), "ring");
}

}  // namespace
}  // namespace domino
