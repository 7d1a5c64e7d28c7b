#include "PlanShapes.h"

#include <algorithm>
#include <stdexcept>

#include "AlgorithmTable.h"

namespace domino::topology {

namespace {

std::vector<PlanShape>& shapes() {
  static std::vector<PlanShape> all;
  return all;
}

bool is_scratch(Buffer buffer) {
  return buffer != Buffer::kSend && buffer != Buffer::kRecv;
}

void check(const Plan& plan, const std::string& what) {
  if (plan.steps.empty()) throw std::invalid_argument(what + " has no steps");
  bool written[kScratchBuffers] = {false, false, false};
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    const std::string where = what + ", step " + std::to_string(i + 1);
    if (is_scratch(step.in.buffer) &&
        !written[static_cast<int>(step.in.buffer) - static_cast<int>(Buffer::kScratch0)]) {
      throw std::invalid_argument(where + " reads a scratch buffer no earlier step wrote");
    }
    if (step.action == Action::kCollective && rooted(step.op) && step.root == RootIs::kNone) {
      throw std::invalid_argument(where + " is a " + collective_name(step.op) + " with no root");
    }
    // The whole group's communicator takes the call as it is: a flat plan's one step.
    if (step.action == Action::kCollective && step.level == Level::kGroup && !plan.flat()) {
      throw std::invalid_argument(where +
                                  " runs on the whole group: a two-level plan's steps "
                                  "run on host, rail or leaders");
    }
    // Rails of an uneven layout have different lengths, and not every host has every rail.
    if (step.action == Action::kCollective && step.level == Level::kRail && !plan.needs_uniform) {
      throw std::invalid_argument(where +
                                  " runs on a rail, which needs a uniform layout: set "
                                  "needs_uniform");
    }
    if (step.action == Action::kCollective && step.level == Level::kLeaders &&
        step.members != Members::kLeaders) {
      throw std::invalid_argument(where +
                                  " runs on the leaders, so only the leaders take part: "
                                  "set members to Members::kLeaders");
    }
    if (is_scratch(step.out.buffer))
      written[static_cast<int>(step.out.buffer) - static_cast<int>(Buffer::kScratch0)] = true;
  }
  if (plan.pipelined) {
    auto on_rail = [](const Step& s) {
      return s.action == Action::kCollective && s.level == Level::kRail;
    };
    const auto first = std::find_if(plan.steps.begin(), plan.steps.end(), on_rail);
    const auto past = std::find_if_not(first, plan.steps.end(), on_rail);
    if (first == plan.steps.end() || std::any_of(past, plan.steps.end(), on_rail)) {
      throw std::invalid_argument(what +
                                  " is pipelined, so its rail steps must be one run of "
                                  "steps (the pipeline's middle stage)");
    }
    if (!plan.needs_uniform) {
      throw std::invalid_argument(what + " is pipelined along rails, which need a uniform layout");
    }
  }
}

// Whether word names a shape or is some shape's DOMINO_ALGO word.
bool answers_to(std::string_view word) {
  return std::any_of(shapes().begin(), shapes().end(), [&](const PlanShape& shape) {
    return shape.name == word || shape.forced_name() == word;
  });
}

}  // namespace

const Plan* PlanShape::template_for(Collective op) const {
  for (const Plan& plan : templates) {
    if (plan.op == op) return &plan;
  }
  return nullptr;
}

bool PlanShape::flat() const {
  return std::all_of(templates.begin(), templates.end(), [](const Plan& p) { return p.flat(); });
}

const std::vector<PlanShape>& plan_shapes() {
  return shapes();
}

bool add_plan_shape(PlanShape shape) {
  const std::string what = "plan shape '" + std::string(shape.name) + "'";
  if (shape.name.empty()) throw std::invalid_argument("a plan shape needs a name");
  if (!is_algo_word(shape.name) || !is_algo_word(shape.forced_name())) {
    throw std::invalid_argument(what + " or its DOMINO_ALGO word '" +
                                std::string(shape.forced_name()) +
                                "' is not made of lowercase letters, digits and '_' (DOMINO_ALGO "
                                "lowercases what it is given, so it could never name it); "
                                "rename it");
  }
  // A word that already forces other shapes would take this one in with them, or be taken.
  if (answers_to(shape.name) || find_plan_shape(shape.forced_name()) != nullptr) {
    throw std::invalid_argument(what + " or its DOMINO_ALGO word '" +
                                std::string(shape.forced_name()) +
                                "' is another plan shape's already; rename it");
  }
  // DOMINO_ALGO reads a word as a plan before an algorithm: one would hide the other.
  for (AlgorithmHome home : {AlgorithmHome::kLinks, AlgorithmHome::kShm}) {
    if (find_algorithm(shape.forced_name(), "all_reduce", home) != nullptr) {
      throw std::invalid_argument(what + " or its DOMINO_ALGO word '" +
                                  std::string(shape.forced_name()) +
                                  "' names an all-reduce algorithm already; rename it");
    }
  }
  if (shape.feasible == nullptr) {
    throw std::invalid_argument(what + " says nothing of the layouts it serves (feasible)");
  }
  if (shape.templates.empty()) throw std::invalid_argument(what + " serves no op");
  for (Plan& plan : shape.templates) {
    const std::string of = "the template of " + what + " for " + collective_name(plan.op);
    if (&plan != shape.template_for(plan.op)) throw std::invalid_argument(of + " is there twice");
    check(plan, of);
    plan.shape = shape.name;
    for (Step& step : plan.steps) step.algorithm.clear();  // the router's to choose
  }
  std::vector<PlanShape>& all = shapes();
  all.push_back(std::move(shape));
  std::stable_sort(all.begin(), all.end(),
                   [](const PlanShape& a, const PlanShape& b) { return a.name < b.name; });
  return true;
}

const PlanShape* find_plan_shape(std::string_view name) {
  for (const PlanShape& shape : shapes()) {
    if (shape.name == name) return &shape;
  }
  return nullptr;
}

const PlanShape* forced_plan_shape(std::string_view word, const GroupLayout& layout) {
  if (const PlanShape* named = find_plan_shape(word)) return named;
  const PlanShape* first = nullptr;
  for (const PlanShape& shape : shapes()) {
    if (shape.forced_name() != word) continue;
    if (shape.feasible(layout, false)) return &shape;
    if (first == nullptr) first = &shape;
  }
  if (first == nullptr) {
    throw std::invalid_argument("no plan '" + std::string(word) + "' to force; there are " +
                                forced_plan_words());
  }
  return first;
}

bool forces_a_plan(std::string_view word) {
  return std::any_of(shapes().begin(), shapes().end(),
                     [&](const PlanShape& shape) { return shape.forced_name() == word; });
}

std::string forced_plan_words() {
  std::vector<std::string_view> words;
  for (const PlanShape& shape : shapes()) {
    if (std::find(words.begin(), words.end(), shape.forced_name()) == words.end())
      words.push_back(shape.forced_name());
  }
  std::string out;
  for (std::string_view word : words) out += (out.empty() ? "" : ", ") + std::string(word);
  return out;
}

bool across_hosts(const GroupLayout& layout, bool) {
  return !layout.single_host();
}

Step collective_step(Level level, Collective op, View in, View out, Members members, RootIs root) {
  const bool inter = level == Level::kRail || level == Level::kLeaders;
  return {.level = level,
          .inter = inter,
          .op = op,
          .in = in,
          .out = out,
          .members = members,
          .root = root};
}

Step local_step(Action action, BlockOrder order, View in, View out, Members members) {
  return {.action = action, .in = in, .out = out, .members = members, .order = order};
}

Plan two_level_template(Collective op, std::vector<Step> steps, bool uniform_and_pipelined,
                        Blocks data_blocks) {
  Plan plan;
  plan.op = op;
  plan.steps = std::move(steps);
  plan.needs_uniform = uniform_and_pipelined;
  plan.pipelined = uniform_and_pipelined;
  plan.data_blocks = data_blocks;
  return plan;
}

}  // namespace domino::topology
