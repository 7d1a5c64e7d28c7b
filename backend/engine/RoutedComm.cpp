#include "RoutedComm.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "config/Log.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"
#include "plugins/common/TransportError.h"

namespace domino {

using topology::Collective;
using topology::PlanKind;

namespace {
class HostMemory : public RoutedComm::Memory {
 public:
  std::shared_ptr<void> allocate(size_t bytes, int) override {
    return std::shared_ptr<void>(new char[bytes](), std::default_delete<char[]>());
  }
  void copy(void* dst, const void* src, size_t bytes, int) override {
    std::memcpy(dst, src, bytes);
  }
  void divide(const domino_buffer_t& buffer, int divisor) override {
    divide_buffer(buffer.ptr, buffer.count, buffer.dtype, divisor);
  }
};
}  // namespace

RoutedComm::RoutedComm(const topology::Router& router, int rank, const Factory& make,
                       std::shared_ptr<Memory> memory, ThreadPlacement rail_thread)
    : router_(router),
      rank_(rank),
      size_(static_cast<int>(router.layout().host_of_rank.size())),
      memory_(memory ? std::move(memory) : std::make_shared<HostMemory>()),
      rail_thread_(std::move(rail_thread)) {
  const topology::GroupLayout& layout = router.layout();
  std::vector<int> everyone(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) everyone[static_cast<size_t>(r)] = r;
  if (!router.multi_host() && !router.uses_inter()) {
    flat_intra_ = make({"", false, everyone});
    return;
  }
  flat_inter_ = make({"inter", true, everyone});
  if (!router.multi_host()) return;
  // A plan forced flat never uses the levels: do not hold their resources.
  const auto forced = router.options().forced_plan;
  if (forced && (*forced == PlanKind::kFlatInter || *forced == PlanKind::kFlatIntra)) return;
  const int host = layout.host_of_rank[static_cast<size_t>(rank)];
  const std::vector<int>& mine = layout.host_ranks[static_cast<size_t>(host)];
  if (mine.size() > 1) local_ = make({"local" + std::to_string(host), false, mine});
  if (layout.uniform) {
    const int local_rank = layout.local_rank[static_cast<size_t>(rank)];
    std::vector<int> rail;
    for (const auto& ranks : layout.host_ranks)
      rail.push_back(ranks[static_cast<size_t>(local_rank)]);
    rail_ = make({"rail" + std::to_string(local_rank), true, rail});
  }
  if (!router.options().forced_plan) {
    std::vector<PlanKind> kinds;
    for (const auto& plan : router.candidates(Collective::kAllReduce, 8))
      kinds.push_back(plan.kind);
    small_allreduce_trial_.emplace(kinds);
  }
  if (mine.front() == rank) {
    std::vector<int> leaders;
    for (const auto& ranks : layout.host_ranks) leaders.push_back(ranks.front());
    std::sort(leaders.begin(), leaders.end());
    leaders_ = make({"leaders", true, leaders});
  }
}

topology::Plan RoutedComm::plan_for(Collective op, size_t bytes) {
  // One communicator, nothing to choose: keep the router off the hot path.
  topology::Plan plan;
  if (flat_inter_) plan = router_.choose(op, bytes);
  last_plan_ = topology::plan_name(plan.kind);
  return plan;
}

bool RoutedComm::two_level(PlanKind kind) const {
  return (kind == PlanKind::kHierarchical && rail_) ||
         (kind == PlanKind::kLeader && (leaders_ || local_));
}

Communicator& RoutedComm::flat_comm(PlanKind kind) {
  if (kind == PlanKind::kFlatIntra && flat_intra_) return *flat_intra_;
  return flat_inter_ ? *flat_inter_ : *flat_intra_;
}

Communicator& RoutedComm::flat(Collective op, size_t bytes) {
  return flat_comm(plan_for(op, bytes).kind);
}

void RoutedComm::allreduce(const domino_buffer_t& send, const domino_buffer_t& recv_buffer,
                           domino_redop_t op) {
  domino_buffer_t recv = recv_buffer;
  const size_t bytes = recv.count * dtype_size(recv.dtype);
  if (!flat_inter_) {
    last_plan_ = topology::plan_name(PlanKind::kFlatIntra);
    flat_intra_->allreduce(send, recv, op);
    return;
  }
  PlanTrial* trial =
      small_allreduce_trial_ && bytes <= PlanTrial::kMaxBytes ? &*small_allreduce_trial_ : nullptr;
  const topology::Plan plan = trial == nullptr
                                  ? router_.choose(Collective::kAllReduce, bytes)
                                  : router_.plan(trial->decided() ? trial->winner() : trial->next(),
                                                 Collective::kAllReduce, bytes);
  const bool timed = trial != nullptr && !trial->decided();
  const auto began = std::chrono::steady_clock::now();
  run_allreduce(plan, send, recv, op);
  if (!timed) return;
  trial->record(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  if (trial->measured()) {
    // Agree on the slowest rank's time per plan, so every rank adopts the same one.
    std::vector<double> medians = trial->medians();
    domino_buffer_t times{medians.data(), medians.size(), DOMINO_FLOAT64, -1};
    flat_inter_->allreduce(times, times, DOMINO_MAX);
    trial->adopt(medians);
    std::string summary;
    for (size_t i = 0; i < medians.size(); ++i) {
      summary += (i ? ", " : "") + std::string(topology::plan_name(trial->candidates()[i])) + " " +
                 std::to_string(static_cast<int>(medians[i] * 1e6)) + " us";
    }
    log_line(LogLevel::kInfo, rank_,
             std::string("all-reduces up to ") + std::to_string(PlanTrial::kMaxBytes) +
                 " bytes across hosts take plan " + topology::plan_name(trial->winner()) +
                 " (measured: " + summary + ")");
  }
}

void RoutedComm::run_allreduce(const topology::Plan& plan, const domino_buffer_t& send,
                               domino_buffer_t& recv, domino_redop_t op) {
  const PlanKind kind = plan.kind;
  last_plan_ = topology::plan_name(kind);
  if (kind != PlanKind::kHierarchical && kind != PlanKind::kLeader) {
    flat_comm(kind).allreduce(send, recv, op,
                              plan.algorithm_of(topology::Level::kGroup, Collective::kAllReduce));
    return;
  }
  const size_t bytes = recv.count * dtype_size(recv.dtype);
  if (send.ptr != recv.ptr && bytes > 0) memory_->copy(recv.ptr, send.ptr, bytes, recv.device);
  // AVG is a sum until the end: a mean of per-host means would weigh hosts, not ranks.
  const domino_redop_t step_op = op == DOMINO_AVG ? DOMINO_SUM : op;
  run_two_level("allreduce", plan, [&] {
    if (kind == PlanKind::kHierarchical) {
      allreduce_hierarchical(plan, recv, step_op);
    } else {
      allreduce_leader(plan, recv, step_op);
    }
  });
  if (op == DOMINO_AVG) memory_->divide(recv, size_);
}

template <class Steps>
void RoutedComm::run_two_level(const char* op, const topology::Plan& plan, Steps&& steps) {
  try {
    steps();
  } catch (const TransportError& e) {
    // A step that broke (a peer died or never came) leaves the other steps' partners waiting
    // on this rank: ending them here tells them now, not at their timeout.
    if (e.status() == DOMINO_ERR_TIMEOUT || e.status() == DOMINO_ERR_PEER) abort();
    // The failing step names its own sub-group; say which collective it was part of.
    throw TransportError(e.status(), std::string(op) + " (" + topology::plan_name(plan.kind) +
                                         " plan across hosts: " + plan.describe() +
                                         ") failed in one of its steps: " + e.what());
  }
}

void RoutedComm::broadcast_leader(domino_buffer_t buffer, int root) {
  const topology::GroupLayout& layout = router_.layout();
  const int root_host = layout.host_of_rank[static_cast<size_t>(root)];
  const bool root_side = layout.host_of_rank[static_cast<size_t>(rank_)] == root_host;
  if (root_side && local_) local_->broadcast(buffer, layout.local_rank[static_cast<size_t>(root)]);
  // Hosts are numbered by their first rank, so host h's first rank is leader h.
  if (leaders_) leaders_->broadcast(buffer, root_host);
  if (!root_side && local_) local_->broadcast(buffer, 0);
}

void RoutedComm::allreduce_leader(const topology::Plan& plan, domino_buffer_t& data,
                                  domino_redop_t op) {
  if (local_) local_->reduce(data, data, op, 0);
  if (leaders_)
    leaders_->allreduce(data, data, op,
                        plan.algorithm_of(topology::Level::kLeaders, Collective::kAllReduce));
  if (local_) local_->broadcast(data, 0);
}

void RoutedComm::barrier() {
  flat(Collective::kBarrier, 0).barrier();
}

void RoutedComm::broadcast(const domino_buffer_t& buffer_in, int root) {
  domino_buffer_t buffer = buffer_in;
  const topology::Plan plan =
      plan_for(Collective::kBroadcast, buffer.count * dtype_size(buffer.dtype));
  // A bad root is the flat communicator's to refuse.
  if (two_level(plan.kind) && root >= 0 && root < size_) {
    run_two_level("broadcast", plan, [&] { broadcast_leader(buffer, root); });
    return;
  }
  flat_comm(plan.kind).broadcast(buffer, root);
}

void RoutedComm::reduce(const domino_buffer_t& send, const domino_buffer_t& recv_buffer,
                        domino_redop_t op, int root) {
  domino_buffer_t recv = recv_buffer;
  flat(Collective::kReduce, send.count * dtype_size(send.dtype)).reduce(send, recv, op, root);
}

void RoutedComm::allgather(const domino_buffer_t& send, const domino_buffer_t& recv_buffer) {
  domino_buffer_t recv = recv_buffer;
  const topology::Plan plan = plan_for(Collective::kAllGather, send.count * dtype_size(send.dtype));
  if (two_level(plan.kind)) {
    run_two_level("allgather", plan, [&] { allgather_hierarchical(plan, send, recv); });
    return;
  }
  flat_comm(plan.kind).allgather(send, recv);
}

void RoutedComm::reduce_scatter(const domino_buffer_t& send, const domino_buffer_t& recv_buffer,
                                domino_redop_t op) {
  domino_buffer_t recv = recv_buffer;
  const topology::Plan plan =
      plan_for(Collective::kReduceScatter, recv.count * dtype_size(recv.dtype));
  if (two_level(plan.kind)) {
    run_two_level("reduce_scatter", plan,
                  [&] { reduce_scatter_hierarchical(plan, send, recv, op); });
    return;
  }
  flat_comm(plan.kind).reduce_scatter(send, recv, op);
}

void RoutedComm::gather(const domino_buffer_t& send, const domino_buffer_t& recv_buffer, int root) {
  domino_buffer_t recv = recv_buffer;
  flat(Collective::kGather, send.count * dtype_size(send.dtype)).gather(send, recv, root);
}

void RoutedComm::scatter(const domino_buffer_t& send, const domino_buffer_t& recv_buffer,
                         int root) {
  domino_buffer_t recv = recv_buffer;
  flat(Collective::kScatter, recv.count * dtype_size(recv.dtype)).scatter(send, recv, root);
}

void RoutedComm::alltoall(const domino_buffer_t& send, const uint64_t* send_counts,
                          const uint64_t* send_offsets, const domino_buffer_t& recv_buffer,
                          const uint64_t* recv_counts, const uint64_t* recv_offsets) {
  domino_buffer_t recv = recv_buffer;
  flat(Collective::kAllToAll, send.count * dtype_size(send.dtype))
      .alltoall(send, send_counts, send_offsets, recv, recv_counts, recv_offsets);
}

void RoutedComm::send(const domino_buffer_t& buffer_in, int peer, int tag) {
  domino_buffer_t buffer = buffer_in;
  (flat_inter_ ? *flat_inter_ : *flat_intra_).send(buffer, peer, tag);
}

int RoutedComm::recv(const domino_buffer_t& buffer_in, int peer, int tag) {
  domino_buffer_t buffer = buffer_in;
  return (flat_inter_ ? *flat_inter_ : *flat_intra_).recv(buffer, peer, tag);
}

bool RoutedComm::abort() {
  bool all = true;
  for (auto* comm : {&flat_intra_, &flat_inter_, &local_, &rail_, &leaders_}) {
    if (*comm && !(*comm)->abort()) all = false;
  }
  return all;
}

bool RoutedComm::set_timeout(int64_t timeout_ms) {
  bool all = true;
  for (auto* comm : {&flat_intra_, &flat_inter_, &local_, &rail_, &leaders_}) {
    if (*comm && !(*comm)->set_timeout(timeout_ms)) all = false;
  }
  return all;
}

}  // namespace domino
