// The leaders' plans ("leader"): through each host's first rank, for any layout, a host of one
// rank included: fewest messages across the link, more traffic inside the hosts.
#include "PlanShapes.h"

namespace domino::topology {
namespace {

std::vector<Plan> templates() {
  using enum Buffer;
  using enum Blocks;
  return {
      // To each host's first rank, among those, back inside the host: fewest messages.
      two_level_template(Collective::kAllReduce,
                         {collective_step(Level::kHost, Collective::kReduce, {kRecv, kOne},
                                          {kRecv, kOne}, Members::kAll, RootIs::kFirst),
                          collective_step(Level::kLeaders, Collective::kAllReduce, {kRecv, kOne},
                                          {kRecv, kOne}, Members::kLeaders),
                          collective_step(Level::kHost, Collective::kBroadcast, {kRecv, kOne},
                                          {kRecv, kOne}, Members::kAll, RootIs::kFirst)},
                         false),
      // Each host's blocks gathered on its first rank, exchanged among those (hosts padded to
      // the largest), and broadcast inside every host.
      two_level_template(
          Collective::kAllGather,
          {collective_step(Level::kHost, Collective::kGather, {kSend, kOne},
                           {kScratch0, kHostRanks}, Members::kAll, RootIs::kFirst),
           collective_step(Level::kLeaders, Collective::kAllGather, {kScratch0, kMostHostRanks},
                           {kScratch1, kHostsByMost}, Members::kLeaders),
           collective_step(Level::kHost, Collective::kBroadcast, {kScratch1, kHostsByMost},
                           {kScratch1, kHostsByMost}, Members::kAll, RootIs::kFirst),
           local_step(Action::kFromHostOrder, BlockOrder::kHostMajor, {kScratch1, kHostsByMost},
                      {kRecv, kGroup})},
          false),
      two_level_template(
          Collective::kReduceScatter,
          {local_step(Action::kToHostOrder, BlockOrder::kHostMajor, {kSend, kGroup},
                      {kScratch0, kHostsByMost}),
           collective_step(Level::kHost, Collective::kReduce, {kScratch0, kHostsByMost},
                           {kScratch1, kHostsByMost}, Members::kAll, RootIs::kFirst),
           collective_step(Level::kLeaders, Collective::kReduceScatter, {kScratch1, kHostsByMost},
                           {kScratch2, kMostHostRanks}, Members::kLeaders),
           collective_step(Level::kHost, Collective::kScatter, {kScratch2, kHostRanks},
                           {kRecv, kOne}, Members::kAll, RootIs::kFirst)},
          false),
      // Each host's blocks gathered on its first rank, those gathered on the root host's first
      // rank (hosts padded to the largest), which hands them on inside the root's host; the root
      // puts them in group order. One message per host crosses the link, where the flat gather
      // sends one per rank.
      two_level_template(
          Collective::kGather,
          {collective_step(Level::kHost, Collective::kGather, {kSend, kOne},
                           {kScratch0, kHostRanks}, Members::kAll, RootIs::kFirst),
           collective_step(Level::kLeaders, Collective::kGather, {kScratch0, kMostHostRanks},
                           {kScratch1, kHostsByMost}, Members::kLeaders, RootIs::kRootHost),
           collective_step(Level::kHost, Collective::kBroadcast, {kScratch1, kHostsByMost},
                           {kScratch1, kHostsByMost}, Members::kRootHost, RootIs::kFirst),
           local_step(Action::kFromHostOrder, BlockOrder::kHostMajor, {kScratch1, kHostsByMost},
                      {kRecv, kGroup}, Members::kRoot)},
          false),
      // The gather backwards: the root's blocks in host order, to its host's first rank, from
      // there one host's share to each other host's first rank, which scatters it inside.
      two_level_template(
          Collective::kScatter,
          {local_step(Action::kToHostOrder, BlockOrder::kHostMajor, {kSend, kGroup},
                      {kScratch0, kHostsByMost}, Members::kRoot),
           collective_step(Level::kHost, Collective::kBroadcast, {kScratch0, kHostsByMost},
                           {kScratch0, kHostsByMost}, Members::kRootHost, RootIs::kRootLocal),
           collective_step(Level::kLeaders, Collective::kScatter, {kScratch0, kHostsByMost},
                           {kScratch1, kMostHostRanks}, Members::kLeaders, RootIs::kRootHost),
           collective_step(Level::kHost, Collective::kScatter, {kScratch1, kHostRanks},
                           {kRecv, kOne}, Members::kAll, RootIs::kFirst)},
          false),
      // Inside the root's host, among the hosts' first ranks, inside every other host.
      two_level_template(Collective::kBroadcast,
                         {collective_step(Level::kHost, Collective::kBroadcast, {kRecv, kOne},
                                          {kRecv, kOne}, Members::kRootHost, RootIs::kRootLocal),
                          collective_step(Level::kLeaders, Collective::kBroadcast, {kRecv, kOne},
                                          {kRecv, kOne}, Members::kLeaders, RootIs::kRootHost),
                          collective_step(Level::kHost, Collective::kBroadcast, {kRecv, kOne},
                                          {kRecv, kOne}, Members::kOtherHosts, RootIs::kFirst)},
                         false),
      // To each host's first rank, among those to the root's host, then to the root.
      two_level_template(Collective::kReduce,
                         {collective_step(Level::kHost, Collective::kReduce, {kSend, kOne},
                                          {kScratch0, kOne}, Members::kAll, RootIs::kFirst),
                          collective_step(Level::kLeaders, Collective::kReduce, {kScratch0, kOne},
                                          {kScratch0, kOne}, Members::kLeaders, RootIs::kRootHost),
                          collective_step(Level::kHost, Collective::kBroadcast, {kScratch0, kOne},
                                          {kScratch0, kOne}, Members::kRootHost, RootIs::kFirst),
                          local_step(Action::kCopy, BlockOrder::kRailMajor, {kScratch0, kOne},
                                     {kRecv, kOne}, Members::kRoot)},
                         false),
  };
}

const bool registered = add_plan_shape(
    {"leader", "through each host's first rank; any layout", "", across_hosts, templates()});

}  // namespace
}  // namespace domino::topology
