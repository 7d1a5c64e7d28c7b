#include "Plan.h"

#include <iterator>

namespace domino::topology {

const char* plan_name(PlanKind kind) {
  switch (kind) {
    case PlanKind::kFlatIntra:
      return "flat_intra";
    case PlanKind::kFlatInter:
      return "flat_inter";
    case PlanKind::kHierarchical:
      return "hierarchical";
    case PlanKind::kLeader:
      return "leader";
  }
  return "?";
}

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

const std::string& Plan::algorithm_of(Level level, Collective op) const {
  static const std::string none;
  for (const Step& step : steps) {
    if (step.level == level && step.op == op) return step.algorithm;
  }
  return none;
}

std::string Plan::describe() const {
  std::string out;
  for (const Step& step : steps) {
    out += (out.empty() ? "" : " > ") + std::string(collective_name(step.op)) + "@" +
           level_name(step.level) + (step.algorithm.empty() ? "" : ":" + step.algorithm);
  }
  if (chunks > 1) out += " x" + std::to_string(chunks);
  return out;
}

}  // namespace domino::topology
