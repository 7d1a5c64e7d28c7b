// The executor of RoutedComm: runs any plan (topology/Plan.h) step by step, with no code of its
// own per plan. A flat plan is one call with the caller's arguments. Any other plan's steps run
// over views of the call's buffers and of scratch, cut in the plan's units; a pipelined plan in
// host memory goes in the router's chunks through RailPipeline, its rail steps on the rail's
// thread while the calling thread does the steps before and after them for the neighbouring
// chunks (devices' communicators are stream-ordered and never pipelined here).
#include <algorithm>
#include <stdexcept>

#include "RoutedComm.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/TransportError.h"

namespace domino {

using topology::Action;
using topology::Blocks;
using topology::Buffer;
using topology::Collective;
using topology::Level;
using topology::Members;
using topology::RootIs;

namespace {

// A message of `count` units cut into at most `chunks` pieces of `per` units each, the last one
// shorter; an empty message is one empty piece, so that every step still meets its peers.
struct Cut {
  Cut(size_t count, size_t chunks_wanted)
      : per(std::max<size_t>(1, (count + std::max<size_t>(chunks_wanted, 1) - 1) /
                                    std::max<size_t>(chunks_wanted, 1))),
        chunks(count == 0 ? 1 : (count + per - 1) / per),
        count(count) {}
  size_t size(size_t c) const { return count == 0 ? 0 : std::min(per, count - c * per); }
  size_t per;
  size_t chunks;
  size_t count;
};

// Where this rank sits, for the views, the members and the roots of a plan's steps.
struct Place {
  Place(const topology::GroupLayout& layout, int rank)
      : rank(rank),
        host(layout.host_of_rank[static_cast<size_t>(rank)]),
        local(layout.local_rank[static_cast<size_t>(rank)]),
        host_ranks(layout.host_ranks[static_cast<size_t>(host)].size()),
        hosts(layout.host_ranks.size()),
        group(layout.host_of_rank.size()) {
    for (const auto& ranks : layout.host_ranks) most = std::max(most, ranks.size());
  }
  size_t blocks(Blocks b) const {
    switch (b) {
      case Blocks::kOne:
        return 1;
      case Blocks::kHostRanks:
        return host_ranks;
      case Blocks::kMostHostRanks:
        return most;
      case Blocks::kHosts:
        return hosts;
      case Blocks::kHostsByMost:
        return hosts * most;
      case Blocks::kGroup:
        return group;
    }
    return 1;
  }
  int rank, host, local;
  size_t host_ranks, hosts, group, most = 1;
};

bool takes_part(Members members, const Place& me, const topology::GroupLayout& layout, int root) {
  const size_t r = static_cast<size_t>(std::max(root, 0));
  switch (members) {
    case Members::kAll:
      return true;
    case Members::kLeaders:
      return me.local == 0;
    case Members::kRootHost:
      return me.host == layout.host_of_rank[r];
    case Members::kOtherHosts:
      return me.host != layout.host_of_rank[r];
    case Members::kRootRail:
      return me.local == layout.local_rank[r];
    case Members::kRoot:
      return me.rank == root;
  }
  return false;
}

int root_on_level(RootIs root, const topology::GroupLayout& layout, int call_root) {
  const size_t r = static_cast<size_t>(std::max(call_root, 0));
  switch (root) {
    case RootIs::kNone:
    case RootIs::kFirst:
      return 0;
    case RootIs::kCallRoot:
      return call_root;
    case RootIs::kRootLocal:
      return layout.local_rank[r];
    case RootIs::kRootHost:  // hosts are numbered by their first rank: rail and leaders' order
      return layout.host_of_rank[r];
  }
  return 0;
}

}  // namespace

RailPipeline& RoutedComm::rail_pipeline() {
  if (!rail_pipeline_) rail_pipeline_ = std::make_unique<RailPipeline>(*rail_, rail_thread_);
  return *rail_pipeline_;
}

size_t RoutedComm::pipeline_chunks(const topology::Plan& plan, int device) {
  return device < 0 ? plan.chunks : 1;
}

Communicator* RoutedComm::level_comm(Level level) {
  switch (level) {
    case Level::kGroup:
      return flat_inter_ ? flat_inter_.get() : flat_intra_.get();
    case Level::kHost:
      return local_.get();
    case Level::kRail:
      return rail_.get();
    case Level::kLeaders:
      return leaders_.get();
  }
  return nullptr;
}

void RoutedComm::run(const topology::Plan& plan, const Call& call) {
  last_plan_ = plan.shape;
  if (plan.flat()) {
    run_flat(plan, call);
    return;
  }
  try {
    run_steps(plan, call);
  } catch (const TransportError& e) {
    // A step that broke (a peer died or never came) leaves the other steps' partners waiting
    // on this rank: ending them here tells them now, not at their timeout.
    if (e.status() == DOMINO_ERR_TIMEOUT || e.status() == DOMINO_ERR_PEER) abort();
    // The failing step names its own sub-group; say which collective it was part of.
    throw TransportError(e.status(), std::string(topology::entry_name(call.op)) + " (" +
                                         std::string(plan.shape) +
                                         " plan across hosts: " + plan.describe() +
                                         ") failed in one of its steps: " + e.what());
  }
}

void RoutedComm::run_flat(const topology::Plan& plan, const Call& call) {
  if (call.op == Collective::kAllToAll) {
    throw std::logic_error("an all-to-all runs with its counts, not as a flat plan's call");
  }
  domino_buffer_t recv = call.recv;
  level_comm(Level::kGroup)
      ->collective(make_call(call.op, call.send, recv, call.redop, call.root),
                   plan.steps.front().algorithm);
}

void RoutedComm::run_steps(const topology::Plan& plan, const Call& call) {
  const topology::GroupLayout& layout = router_.layout();
  const Place me(layout, rank_);
  const bool by_output = topology::sized_by_output(call.op);
  const domino_dtype_t dtype = by_output ? call.recv.dtype : call.send.dtype;
  // A scatter's input, like a gather's output, is the root's alone.
  const int device = call.op == Collective::kScatter ? call.recv.device : call.send.device;
  const size_t element = dtype_size(dtype);
  // The plan's unit: a piece of the message (all-reduce), one rank's block, or the message.
  const size_t count = by_output ? call.recv.count : call.send.count;
  const size_t pieces = me.blocks(plan.data_blocks);
  const size_t unit = (count + pieces - 1) / pieces;

  // The buffers by role. An all-reduce works in place in recv, through a padded copy where the
  // message does not cut into whole units.
  void* base[topology::kScratchBuffers + 2] = {call.send.ptr, call.recv.ptr};
  std::shared_ptr<void> held[topology::kScratchBuffers + 1];
  if (call.op == Collective::kAllReduce) {
    if (unit * pieces != count) {
      held[topology::kScratchBuffers] = memory_->allocate(unit * pieces * element, device);
      base[static_cast<int>(Buffer::kRecv)] = held[topology::kScratchBuffers].get();
    }
    if (count > 0 && base[static_cast<int>(Buffer::kRecv)] != call.send.ptr) {
      memory_->copy(base[static_cast<int>(Buffer::kRecv)], call.send.ptr, count * element, device);
    }
  }
  for (int s = 0; s < topology::kScratchBuffers; ++s) {
    const auto buffer = static_cast<Buffer>(static_cast<int>(Buffer::kScratch0) + s);
    size_t units = 0;
    // Only the steps this rank runs: a leaders' gather's grid lives on the root's host alone.
    for (const topology::Step& step : plan.steps) {
      if (!takes_part(step.members, me, layout, call.root)) continue;
      if (step.in.buffer == buffer) units = std::max(units, me.blocks(step.in.blocks));
      if (step.out.buffer == buffer) units = std::max(units, me.blocks(step.out.blocks));
    }
    if (units == 0) continue;
    held[s] = memory_->allocate(std::max<size_t>(1, units * unit) * element, device);
    base[static_cast<int>(buffer)] = held[s].get();
  }

  // AVG is a sum until the end: a step would divide by its own sub-group's size.
  const domino_redop_t step_op = call.redop == DOMINO_AVG ? DOMINO_SUM : call.redop;
  const Cut cut(unit, pipeline_chunks(plan, device));
  auto view = [&](const topology::View& v, size_t c) {
    const size_t m = me.blocks(v.blocks);
    return domino_buffer_t{
        static_cast<char*>(base[static_cast<int>(v.buffer)]) + c * cut.per * m * element,
        cut.size(c) * m, dtype, device};
  };
  // The blocks of a buffer in group-rank order (rank r's at r * unit) against a view in the
  // step's host order, for chunk c.
  auto reorder = [&](const topology::Step& step, size_t c) {
    const bool to_host = step.action == Action::kToHostOrder;
    const topology::View& ordered_view = to_host ? step.out : step.in;
    const topology::View& group_view = to_host ? step.in : step.out;
    char* in_group = static_cast<char*>(base[static_cast<int>(group_view.buffer)]);
    char* ordered = static_cast<char*>(view(ordered_view, c).ptr);
    const size_t bytes = cut.size(c) * element;
    if (bytes == 0) return;
    for (size_t h = 0; h < me.hosts; ++h) {
      const std::vector<int>& ranks = layout.host_ranks[h];
      for (size_t l = 0; l < ranks.size(); ++l) {
        const size_t at =
            step.order == topology::BlockOrder::kRailMajor ? l * me.hosts + h : h * me.most + l;
        char* group_block =
            in_group + (static_cast<size_t>(ranks[l]) * unit + c * cut.per) * element;
        char* ordered_block = ordered + at * bytes;
        memory_->copy(to_host ? ordered_block : group_block, to_host ? group_block : ordered_block,
                      bytes, device);
      }
    }
  };
  auto run_step = [&](const topology::Step& step, size_t c) {
    if (!takes_part(step.members, me, layout, call.root)) return;
    if (step.action == Action::kToHostOrder || step.action == Action::kFromHostOrder) {
      reorder(step, c);
      return;
    }
    const domino_buffer_t in = view(step.in, c);
    domino_buffer_t out = view(step.out, c);
    Communicator* comm = step.action == Action::kCollective ? level_comm(step.level) : nullptr;
    if (comm == nullptr) {
      // A local copy, or a collective among this rank alone (a host of one rank).
      if (step.action == Action::kCollective && (step.level != Level::kHost || me.host_ranks > 1)) {
        throw std::logic_error(std::string("plan step on ") + topology::level_name(step.level) +
                               " reached rank " + std::to_string(rank_) + ", which has none");
      }
      const size_t bytes = std::min(in.count, out.count) * element;
      if (bytes > 0 && in.ptr != out.ptr) memory_->copy(out.ptr, in.ptr, bytes, device);
      return;
    }
    if (step.op == Collective::kAllToAll) {
      throw std::logic_error("a plan step cannot run an all-to-all");
    }
    // A broadcast step sends its output: where the plan gives it an input apart, that goes first.
    if (step.op == Collective::kBroadcast && in.ptr != out.ptr && out.count > 0) {
      memory_->copy(out.ptr, in.ptr, out.count * element, device);
    }
    comm->collective(
        make_call(step.op, in, out, step_op, root_on_level(step.root, layout, call.root)),
        step.algorithm);
  };

  auto on_rail = [](const topology::Step& s) {
    return s.action == Action::kCollective && s.level == Level::kRail;
  };
  if (cut.chunks >= 2) {
    const auto first = std::find_if(plan.steps.begin(), plan.steps.end(), on_rail);
    const auto past = std::find_if_not(first, plan.steps.end(), on_rail);
    auto stage = [&](auto from, auto to) {
      return [&, from, to](size_t c) {
        for (auto it = from; it != to; ++it) run_step(*it, c);
      };
    };
    const auto before = stage(plan.steps.begin(), first), after = stage(past, plan.steps.end());
    const auto rail = stage(first, past);
    rail_pipeline().run(
        cut.chunks, before, [&](size_t c, Communicator&) { rail(c); }, after);
  } else {
    for (const topology::Step& step : plan.steps) run_step(step, 0);
  }

  if (call.op == Collective::kAllReduce && base[1] != call.recv.ptr && count > 0) {
    memory_->copy(call.recv.ptr, base[1], count * element, device);
  }
  const bool reduced = call.op == Collective::kAllReduce || call.op == Collective::kReduceScatter ||
                       (call.op == Collective::kReduce && call.root == rank_);
  if (call.redop == DOMINO_AVG && reduced) memory_->divide(call.recv, size_);
}

}  // namespace domino
