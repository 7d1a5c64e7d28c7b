#include "RoutingReport.h"

namespace domino::topology {

std::vector<RoutingRow> routing_report(const Router& router, const std::vector<size_t>& sizes) {
  std::vector<RoutingRow> rows;
  for (Collective op : all_collectives()) {
    for (size_t bytes : sizes) {
      rows.push_back({op, bytes, router.choose(op, bytes), router.candidates(op, bytes)});
    }
  }
  return rows;
}

}  // namespace domino::topology
