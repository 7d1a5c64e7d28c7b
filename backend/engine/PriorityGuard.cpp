#include "backend/PriorityGuard.h"

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

}  // namespace domino
