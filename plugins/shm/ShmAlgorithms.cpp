#include "ShmAlgorithms.h"

#include <array>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace domino::shm {

namespace {
struct Registered {
  std::string name;
  ShmBody body;
};
// Per op (by its place in the list), its paths: found by name on every call, among a few.
std::array<std::vector<Registered>, topology::kCollectiveCount>& bodies() {
  static std::array<std::vector<Registered>, topology::kCollectiveCount> registered;
  return registered;
}
}  // namespace

bool register_shm_algorithm(topology::AlgorithmEntry entry, ShmBody body) {
  if (entry.ops.size() != 1 || entry.home != topology::AlgorithmHome::kShm ||
      entry.seconds == nullptr || body == nullptr) {
    throw std::logic_error("shared-memory path '" + std::string(entry.name) +
                           "' must serve one op at home shm, with a cost and a body");
  }
  const std::string_view op = entry.ops.front();
  for (topology::Collective known : topology::kCollectives) {
    if (op != topology::collective_name(known)) continue;
    Registered path{std::string(entry.name), body};
    topology::add_algorithm(std::move(entry));
    bodies()[static_cast<size_t>(known)].push_back(std::move(path));
    return true;
  }
  throw std::logic_error("shared-memory path '" + std::string(entry.name) + "' serves '" +
                         std::string(op) + "', which is no collective");
}

ShmBody find_shm_body(topology::Collective op, std::string_view name) {
  const auto i = static_cast<size_t>(op);
  if (i >= topology::kCollectiveCount) return nullptr;
  for (const Registered& path : bodies()[i]) {
    if (path.name == name) return path.body;
  }
  return nullptr;
}

topology::TransportCost shm_own_cost(int cpus, bool single_copy) {
  topology::TransportCost cost = topology::CostModel{}.intra;
  cost.cpus = cpus;
  cost.single_copy = single_copy;
  return cost;
}

const topology::AlgorithmEntry* shm_own_choice(topology::Collective op, int ranks, double bytes,
                                               const topology::TransportCost& cost) {
  // As the router chooses (Router.cpp): an uneven all-to-all's ranks send different amounts, so
  // its path goes by the number of ranks alone, or two ranks could take different ones.
  const double choice_bytes = op == topology::Collective::kAllToAll ? 0 : bytes;
  double seconds = 0;
  return topology::cheapest_algorithm(topology::collective_name(op), topology::AlgorithmHome::kShm,
                                      ranks, choice_bytes, 1, cost, &seconds);
}

}  // namespace domino::shm
