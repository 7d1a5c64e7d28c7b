// The split-rail plans ("hierarchical"): steps inside each host and along the rails (the ranks
// with the same local rank on every host), the rails' steps pipelined in chunks; uniform layouts.
// By rail every block crosses to each other host once, whatever the rank order.
#include "PlanShapes.h"

namespace domino::topology {
namespace {

std::vector<Plan> templates() {
  using enum Buffer;
  using enum Blocks;
  return {
      // Each rank reduces 1/L of the message inside the host, all-reduces that slice with the
      // ranks of its rail, and gathers the slices back inside the host.
      two_level_template(Collective::kAllReduce,
                         {collective_step(Level::kHost, Collective::kReduceScatter,
                                          {kRecv, kHostRanks}, {kScratch0, kOne}),
                          collective_step(Level::kRail, Collective::kAllReduce, {kScratch0, kOne},
                                          {kScratch0, kOne}),
                          collective_step(Level::kHost, Collective::kAllGather, {kScratch0, kOne},
                                          {kRecv, kHostRanks})},
                         true, Blocks::kHostRanks),
      // Every block crosses the link once, along its rail, then spreads inside each host.
      two_level_template(Collective::kAllGather,
                         {collective_step(Level::kRail, Collective::kAllGather, {kSend, kOne},
                                          {kScratch0, kHosts}),
                          collective_step(Level::kHost, Collective::kAllGather, {kScratch0, kHosts},
                                          {kScratch1, kHostsByMost}),
                          local_step(Action::kFromHostOrder, BlockOrder::kRailMajor,
                                     {kScratch1, kHostsByMost}, {kRecv, kGroup})},
                         true),
      two_level_template(Collective::kReduceScatter,
                         {local_step(Action::kToHostOrder, BlockOrder::kRailMajor, {kSend, kGroup},
                                     {kScratch0, kHostsByMost}),
                          collective_step(Level::kHost, Collective::kReduceScatter,
                                          {kScratch0, kHostsByMost}, {kScratch1, kHosts}),
                          collective_step(Level::kRail, Collective::kReduceScatter,
                                          {kScratch1, kHosts}, {kRecv, kOne})},
                         true),
      // Along the root's rail, then inside every host; the rail's chunks overlap the hosts'.
      two_level_template(Collective::kBroadcast,
                         {collective_step(Level::kRail, Collective::kBroadcast, {kRecv, kOne},
                                          {kRecv, kOne}, Members::kRootRail, RootIs::kRootHost),
                          collective_step(Level::kHost, Collective::kBroadcast, {kRecv, kOne},
                                          {kRecv, kOne}, Members::kAll, RootIs::kRootLocal)},
                         true),
      // Inside every host to the rank on the root's rail, then along that rail to the root.
      two_level_template(Collective::kReduce,
                         {collective_step(Level::kHost, Collective::kReduce, {kSend, kOne},
                                          {kScratch0, kOne}, Members::kAll, RootIs::kRootLocal),
                          collective_step(Level::kRail, Collective::kReduce, {kScratch0, kOne},
                                          {kScratch0, kOne}, Members::kRootRail, RootIs::kRootHost),
                          local_step(Action::kCopy, BlockOrder::kRailMajor, {kScratch0, kOne},
                                     {kRecv, kOne}, Members::kRoot)},
                         true),
  };
}

const bool registered = add_plan_shape(
    {"hierarchical", "split-rail: inside each host and along the rails, pipelined; uniform layouts",
     "", across_hosts, templates()});

}  // namespace
}  // namespace domino::topology
