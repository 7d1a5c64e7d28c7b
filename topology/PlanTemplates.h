// The two-level plans, as data: one template per (kind, op), its steps without algorithms. The
// router takes every template that serves an op in the group's layout as a candidate, prices it
// step by step and fills in each step's algorithm from the table; the executor runs any of them
// with no code of its own per plan. A new two-level plan is one more template (add_plan_template);
// the flat plans (one collective over the whole group) need none. Torch-free.
#pragma once

#include <deque>

#include "Plan.h"

namespace domino::topology {

// Every template, built-in and added, in the order added (a deque: adding keeps the others'
// addresses).
const std::deque<Plan>& plan_templates();
// Adds a template. Throws std::invalid_argument for a flat kind, a (kind, op) that has one, a
// step that reads a scratch buffer nothing wrote before it, a rooted step with no root, a rail
// step in a template that does not need a uniform layout, a leaders step that not only the
// leaders take, or a pipelined template whose rail steps are not one run of steps. Add templates
// before any process group is made: a lane builds the communicators its router's plans step on
// when it starts, and routing does not lock the list.
void add_plan_template(Plan plan);
// The template of kind for op; nullptr if none.
const Plan* find_plan_template(PlanKind kind, Collective op);

}  // namespace domino::topology
