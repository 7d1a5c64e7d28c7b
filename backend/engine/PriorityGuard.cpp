#include "backend/PriorityGuard.h"

#include <algorithm>
#include <cctype>

namespace domino {

namespace {
thread_local std::optional<Priority> t_priority;
}

PriorityGuard::PriorityGuard(Priority priority) : previous_(t_priority) {
  t_priority = priority;
}

PriorityGuard::~PriorityGuard() {
  t_priority = previous_;
}

std::optional<Priority> current_priority() {
  return t_priority;
}

Priority parse_priority(const std::string& name, const std::string& what) {
  std::string lowered = name;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lowered == "high") return Priority::kHigh;
  if (lowered == "normal") return Priority::kNormal;
  if (lowered == "low") return Priority::kLow;
  throw ConfigError(what + "='" + name + "' is not valid; accepted values: high, normal, low");
}

const char* priority_name(Priority priority) {
  switch (priority) {
    case Priority::kHigh:
      return "high";
    case Priority::kNormal:
      return "normal";
    case Priority::kLow:
      return "low";
  }
  return "normal";
}

}  // namespace domino
