// What torch_domino.topology() and `python -m torch_domino.topology` report of a group's
// routing: for every op at each size, the plan the router takes (named by its shape), with its
// steps and their algorithms (the names handed to the transports), and the alternatives it
// weighed.
// Torch-free.
#pragma once

#include <cstddef>
#include <vector>

#include "Router.h"

namespace domino::topology {

struct RoutingRow {
  Collective op;
  size_t bytes;
  Plan chosen;
  std::vector<Plan> alternatives;  // every feasible plan, cheapest first (chosen among them)
};

std::vector<RoutingRow> routing_report(const Router& router, const std::vector<size_t>& sizes);

}  // namespace domino::topology
