// The flat plans: one collective over the whole group with the call's own arguments, on the
// intra-host transport for a group on one host (flat_intra), or on the inter-host one
// (flat_inter). DOMINO_ALGO=flat forces the one the group's layout takes.
#include "PlanShapes.h"

namespace domino::topology {
namespace {

std::vector<Plan> one_collective_for_each_op(bool inter) {
  std::vector<Plan> plans;
  for (Collective op : kCollectives) {
    Step step;
    step.inter = inter;
    step.op = op;
    step.in = {Buffer::kSend, Blocks::kOne};
    step.out = {Buffer::kRecv, Blocks::kOne};
    step.root = rooted(op) ? RootIs::kCallRoot : RootIs::kNone;
    Plan plan;
    plan.op = op;
    plan.steps = {step};
    plans.push_back(std::move(plan));
  }
  return plans;
}

const bool registered =
    add_plan_shape({"flat_intra", "one collective over the group on the intra-host transport",
                    "flat", [](const GroupLayout& layout, bool) { return layout.single_host(); },
                    one_collective_for_each_op(false)}) &&
    add_plan_shape(
        {"flat_inter", "one collective over the group on the inter-host transport", "flat",
         // On one host the inter-host transport runs only where forced, never on a
         // cost guess.
         [](const GroupLayout& layout, bool forced) { return !layout.single_host() || forced; },
         one_collective_for_each_op(true)});

}  // namespace
}  // namespace domino::topology
