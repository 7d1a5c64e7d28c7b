#include "CostModel.h"

#include <stdexcept>

namespace domino::topology {

TransportCost parse_link_cost(const std::string& variable, const std::string& value) {
  const std::string expected = variable + "='" + value +
                               "' is not a cost: expected 'LATENCY_US,GBYTES_PER_S' with both "
                               "positive, e.g. '25,1.1'";
  const size_t comma = value.find(',');
  if (comma == std::string::npos) throw std::invalid_argument(expected);
  TransportCost cost;
  try {
    size_t used = 0;
    cost.latency_us = std::stod(value.substr(0, comma), &used);
    if (used != comma) throw std::invalid_argument(expected);
    const std::string rest = value.substr(comma + 1);
    cost.gbytes_per_s = std::stod(rest, &used);
    if (used != rest.size()) throw std::invalid_argument(expected);
  } catch (const std::logic_error&) {
    throw std::invalid_argument(expected);
  }
  if (!(cost.latency_us >= 0) || !(cost.gbytes_per_s > 0)) throw std::invalid_argument(expected);
  cost.source = "configured";
  return cost;
}

}  // namespace domino::topology
