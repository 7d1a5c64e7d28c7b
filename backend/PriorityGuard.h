// Per-thread choice of lane: collectives issued on a domino group while a guard lives run on its
// lane. Lanes are high, normal and low; a group's default comes from DOMINO_PRIORITY or its
// options. Torch-free.
#pragma once

#include <optional>

#include "Priority.h"

namespace domino {

class PriorityGuard {
 public:
  explicit PriorityGuard(Priority priority);
  PriorityGuard(const PriorityGuard&) = delete;
  PriorityGuard& operator=(const PriorityGuard&) = delete;
  ~PriorityGuard();

 private:
  std::optional<Priority> previous_;
};

// The innermost guard's priority on this thread, if any.
std::optional<Priority> current_priority();

}  // namespace domino
