#include "Registration.h"

#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace domino::algorithms {

namespace {
std::map<std::pair<std::string, std::string>, Body, std::less<>>& bodies() {
  static std::map<std::pair<std::string, std::string>, Body, std::less<>> registered;
  return registered;
}
}  // namespace

bool register_algorithm(topology::AlgorithmEntry entry, Body body) {
  if (entry.ops.size() != 1 || entry.home != topology::AlgorithmHome::kLinks ||
      entry.seconds == nullptr || body == nullptr) {
    throw std::logic_error("algorithm '" + std::string(entry.name) +
                           "' must serve one op over links, with a cost and a body");
  }
  std::pair<std::string, std::string> key{std::string(entry.ops.front()), std::string(entry.name)};
  topology::add_algorithm(std::move(entry));
  bodies()[std::move(key)] = body;
  return true;
}

Body find_body(std::string_view op, std::string_view name) {
  for (const auto& [key, body] : bodies()) {
    if (key.first == op && key.second == name) return body;
  }
  return nullptr;
}

}  // namespace domino::algorithms
