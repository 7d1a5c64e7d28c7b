// Plan shapes, registered by name like the algorithms (AlgorithmTable.h). A shape is one way of
// taking collectives across a group's communicators: its name, what it does, the word
// DOMINO_ALGO forces it by, the group layouts it can serve, and a template of steps for each op it
// serves. The router's candidates for an op are every registered shape that serves it in the
// group's layout, each priced step by step with its algorithms filled in (Router.h); the report
// and the plan trial carry the shape's name, and the executor runs any template with no code of
// its own per shape. The built-in shapes register from their own files (FlatPlans.cpp,
// HierarchicalPlans.cpp, LeaderPlans.cpp), and a new one is one more file:
//
//   namespace {
//   const bool registered = topology::add_plan_shape(
//       {"my_shape", "what it does", "", topology::across_hosts, {my_gather_template()}});
//   }
//
// Their library is linked whole (CMake's WHOLE_ARCHIVE), so a file nothing calls still
// registers. Torch-free.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "GroupLayout.h"
#include "Plan.h"

namespace domino::topology {

struct PlanShape {
  // The report's and the plan trial's name for its plans; static storage (a literal), since
  // every plan made from it points at it.
  std::string_view name;
  std::string_view description;
  // DOMINO_ALGO's word for it; empty: its name. Shapes that share one stand in for each other in
  // different layouts, and the word forces the one the group's layout takes ("flat": flat_intra
  // on one host, flat_inter across hosts).
  std::string_view forced_as;
  // Whether it can serve a group laid out so; forced: the group forces it. Each template also
  // needs a uniform layout where it says so (Plan::needs_uniform).
  bool (*feasible)(const GroupLayout& layout, bool forced);
  // Its plan for each op it serves, one per op: steps without algorithms (the router's to
  // choose), or the flat shapes' one collective over the whole group.
  std::vector<Plan> templates;

  // The template for op; nullptr where it does not serve op.
  const Plan* template_for(Collective op) const;
  // Whether every template is one collective over the whole group.
  bool flat() const;
  std::string_view forced_name() const { return forced_as.empty() ? name : forced_as; }
};

// Every shape, by name: the same order on every rank of one build, which equal prices keep.
// Complete once static initialization is over.
const std::vector<PlanShape>& plan_shapes();
// Adds shape (during static initialization, or at least before any router is made: routers
// keep pointers to the shapes, and routing does not lock the list). Returns true, for a
// namespace-scope initializer. Throws std::invalid_argument for an empty or taken name (or
// DOMINO_ALGO word), a name or word DOMINO_ALGO cannot spell (is_algo_word), a word that names
// an all-reduce algorithm, no feasibility rule, no template, two templates for one op, or a malformed
// template: a step that reads a scratch buffer nothing wrote before it, a rooted step with no
// root, a step on the whole group in a template that is not that one step, a rail step in a
// template that does not need a uniform layout, a leaders step that not only the leaders take,
// or a pipelined template whose rail steps are not one run of steps.
bool add_plan_shape(PlanShape shape);
// The shape named `name`; nullptr if none.
const PlanShape* find_plan_shape(std::string_view name);
// The shape that forcing `word` (a shape's name or DOMINO_ALGO's word) takes in layout: the shape
// of that name, else the first of those forced as word that the layout takes unforced, else the
// first of them. Throws std::invalid_argument where no shape answers to word.
const PlanShape* forced_plan_shape(std::string_view word, const GroupLayout& layout);
// Whether DOMINO_ALGO's word forces some shape.
bool forces_a_plan(std::string_view word);
// DOMINO_ALGO's words for the shapes, each once, in shape order: "flat, hierarchical, leader".
std::string forced_plan_words();

// PlanShape::feasible for a shape that steps inside hosts and between them: several hosts.
bool across_hosts(const GroupLayout& layout, bool forced);

// Building blocks of templates. The views of the call's buffers that they use most:
inline constexpr View kSendOne{Buffer::kSend, Blocks::kOne};
inline constexpr View kRecvOne{Buffer::kRecv, Blocks::kOne};
inline constexpr View kSendGroup{Buffer::kSend, Blocks::kGroup};
inline constexpr View kRecvGroup{Buffer::kRecv, Blocks::kGroup};
// A collective step on level: on the inter-host transport for the rail and the leaders, else on
// the intra-host one.
Step collective_step(Level level, Collective op, View in, View out, Members members = Members::kAll,
                     RootIs root = RootIs::kNone);
// A local step (kToHostOrder, kFromHostOrder, kCopy).
Step local_step(Action action, BlockOrder order, View in, View out,
                Members members = Members::kAll);
// A two-level template: a uniform one is pipelined along its rails.
Plan two_level_template(Collective op, std::vector<Step> steps, bool uniform_and_pipelined,
                        Blocks data_blocks = Blocks::kOne);

}  // namespace domino::topology
