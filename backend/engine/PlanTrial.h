// Small all-reduces across hosts cost a few wire latencies whichever plan they take, and which
// plan wins depends on how the ranks get scheduled (how many cores they share, who sleeps while
// whom talks), which no alpha-beta model captures. So the first small all-reduces of a group
// try each feasible plan (Trial.h), by its shape's name. Torch-free.
#pragma once

#include <cstddef>
#include <string>

#include "Trial.h"
#include "topology/Router.h"

namespace domino {

using PlanTrial = Trial<std::string>;  // the plan shapes' names
// Larger all-reduces across hosts follow the cost model.
inline constexpr size_t kPlanTrialMaxBytes = 16 * 1024;

}  // namespace domino
