#include "Plan.h"

#include <iterator>

namespace domino::topology {

const char* level_name(Level level) {
  switch (level) {
    case Level::kGroup:
      return "group";
    case Level::kHost:
      return "host";
    case Level::kRail:
      return "rail";
    case Level::kLeaders:
      return "leaders";
  }
  return "?";
}

const std::vector<Collective>& all_collectives() {
  static const std::vector<Collective> ops(std::begin(kCollectives), std::end(kCollectives));
  return ops;
}

const std::string& Plan::inter_algorithm() const {
  static const std::string none;
  for (const Step& step : steps) {
    if (step.inter && !step.algorithm.empty()) return step.algorithm;
  }
  return none;
}

const std::string& Plan::algorithm_of(Level level, Collective step_op) const {
  static const std::string none;
  for (const Step& step : steps) {
    if (step.action == Action::kCollective && step.level == level && step.op == step_op)
      return step.algorithm;
  }
  return none;
}

bool Plan::flat() const {
  return steps.size() == 1 && steps.front().action == Action::kCollective &&
         steps.front().level == Level::kGroup && steps.front().op == op;
}

std::string Plan::describe() const {
  std::string out;
  for (const Step& step : steps) {
    std::string part;
    switch (step.action) {
      case Action::kCollective:
        part = std::string(collective_name(step.op)) + "@" + level_name(step.level) +
               (step.algorithm.empty() ? "" : ":" + step.algorithm);
        break;
      case Action::kToHostOrder:
        part = "to_host_order";
        break;
      case Action::kFromHostOrder:
        part = "from_host_order";
        break;
      case Action::kCopy:
        // A copy onto itself does nothing.
        if (step.in.buffer == step.out.buffer && step.in.blocks == step.out.blocks) continue;
        part = "copy";
        break;
    }
    out += (out.empty() ? "" : " > ") + part;
  }
  if (chunks > 1) out += " x" + std::to_string(chunks);
  return out;
}

}  // namespace domino::topology
