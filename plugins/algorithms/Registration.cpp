#include "Registration.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace domino::algorithms {

namespace {
std::map<std::string, AllreduceBody, std::less<>>& bodies() {
  static std::map<std::string, AllreduceBody, std::less<>> registered;
  return registered;
}
}  // namespace

bool register_allreduce(topology::AlgorithmEntry entry, AllreduceBody body) {
  const bool serves =
      std::find(entry.ops.begin(), entry.ops.end(), "all_reduce") != entry.ops.end();
  if (!serves || entry.home != topology::AlgorithmHome::kLinks || entry.seconds == nullptr ||
      body == nullptr) {
    throw std::logic_error("all-reduce algorithm '" + std::string(entry.name) +
                           "' must serve all_reduce over links, with a cost and a body");
  }
  const std::string name(entry.name);
  topology::add_algorithm(std::move(entry));
  bodies()[name] = body;
  return true;
}

bool register_algorithm(topology::AlgorithmEntry entry) {
  const bool allreduce =
      std::find(entry.ops.begin(), entry.ops.end(), "all_reduce") != entry.ops.end();
  if (allreduce && entry.home == topology::AlgorithmHome::kLinks) {
    throw std::logic_error("all-reduce algorithm '" + std::string(entry.name) +
                           "' needs its body: register it with register_allreduce");
  }
  topology::add_algorithm(std::move(entry));
  return true;
}

AllreduceBody find_allreduce(std::string_view name) {
  const auto found = bodies().find(name);
  return found == bodies().end() ? nullptr : found->second;
}

}  // namespace domino::algorithms
