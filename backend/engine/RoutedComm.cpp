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
                       std::shared_ptr<Memory> memory)
    : router_(router),
      rank_(rank),
      size_(static_cast<int>(router.layout().host_of_rank.size())),
      memory_(memory ? std::move(memory) : std::make_shared<HostMemory>()) {
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

Communicator& RoutedComm::flat(Collective op, size_t bytes) {
  if (!flat_inter_) {  // one communicator, nothing to choose: keep the router off the hot path
    last_plan_ = topology::plan_name(PlanKind::kFlatIntra);
    return *flat_intra_;
  }
  const topology::Plan plan = router_.choose(op, bytes);
  last_plan_ = topology::plan_name(plan.kind);
  if (plan.kind == PlanKind::kFlatIntra && flat_intra_) return *flat_intra_;
  return flat_inter_ ? *flat_inter_ : *flat_intra_;
}

void RoutedComm::allreduce(const domino_buffer_t& send, const domino_buffer_t& recv_buffer,
                           domino_redop_t op) {
  domino_buffer_t recv = recv_buffer;
  const size_t bytes = recv.count * dtype_size(recv.dtype);
  if (!flat_inter_) {
    run_allreduce(PlanKind::kFlatIntra, send, recv, op);
    return;
  }
  PlanKind kind = router_.choose(Collective::kAllReduce, bytes).kind;
  PlanTrial* trial =
      small_allreduce_trial_ && bytes <= PlanTrial::kMaxBytes ? &*small_allreduce_trial_ : nullptr;
  if (trial != nullptr) kind = trial->decided() ? trial->winner() : trial->next();
  const bool timed = trial != nullptr && !trial->decided();
  const auto began = std::chrono::steady_clock::now();
  run_allreduce(kind, send, recv, op);
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

void RoutedComm::run_allreduce(PlanKind kind, const domino_buffer_t& send, domino_buffer_t& recv,
                               domino_redop_t op) {
  last_plan_ = topology::plan_name(kind);
  if (kind != PlanKind::kHierarchical && kind != PlanKind::kLeader) {
    (flat_intra_ && kind == PlanKind::kFlatIntra ? *flat_intra_ : *flat_inter_)
        .allreduce(send, recv, op);
    return;
  }
  const size_t bytes = recv.count * dtype_size(recv.dtype);
  if (send.ptr != recv.ptr && bytes > 0) memory_->copy(recv.ptr, send.ptr, bytes, recv.device);
  // AVG is a sum until the end: a mean of per-host means would weigh hosts, not ranks.
  const domino_redop_t step_op = op == DOMINO_AVG ? DOMINO_SUM : op;
  try {
    if (kind == PlanKind::kHierarchical) {
      allreduce_hierarchical(recv, step_op);
    } else {
      allreduce_leader(recv, step_op);
    }
  } catch (const TransportError& e) {
    // The failing step names its own sub-group; say which collective it was part of.
    throw TransportError(e.status(),
                         std::string("allreduce (") + topology::plan_name(kind) +
                             " plan across hosts) failed in one of its steps: " + e.what());
  }
  if (op == DOMINO_AVG) memory_->divide(recv, size_);
}

void RoutedComm::allreduce_hierarchical(domino_buffer_t& data, domino_redop_t op) {
  if (!local_) {
    rail_->allreduce(data, data, op);
    return;
  }
  const size_t local_size = router_.layout().host_ranks.front().size();
  const size_t element = dtype_size(data.dtype);
  const size_t slice = (data.count + local_size - 1) / local_size;
  const size_t padded = slice * local_size;
  // Reduce-scatter needs equal slices: a message that does not divide goes through a padded
  // copy whose tail nobody reads.
  std::shared_ptr<void> padded_copy;
  domino_buffer_t whole = data;
  if (padded != data.count) {
    padded_copy = memory_->allocate(padded * element, data.device);
    if (data.count > 0)
      memory_->copy(padded_copy.get(), data.ptr, data.count * element, data.device);
    whole = {padded_copy.get(), padded, data.dtype, data.device};
  }
  const std::shared_ptr<void> part = memory_->allocate(slice * element, data.device);
  domino_buffer_t mine{part.get(), slice, data.dtype, data.device};
  local_->reduce_scatter(whole, mine, op);
  rail_->allreduce(mine, mine, op);
  local_->allgather(mine, whole);
  if (padded_copy && data.count > 0) {
    memory_->copy(data.ptr, padded_copy.get(), data.count * element, data.device);
  }
}

void RoutedComm::allreduce_leader(domino_buffer_t& data, domino_redop_t op) {
  if (local_) local_->reduce(data, data, op, 0);
  if (leaders_) leaders_->allreduce(data, data, op);
  if (local_) local_->broadcast(data, 0);
}

void RoutedComm::barrier() {
  flat(Collective::kBarrier, 0).barrier();
}

void RoutedComm::broadcast(const domino_buffer_t& buffer_in, int root) {
  domino_buffer_t buffer = buffer_in;
  flat(Collective::kBroadcast, buffer.count * dtype_size(buffer.dtype)).broadcast(buffer, root);
}

void RoutedComm::reduce(const domino_buffer_t& send, const domino_buffer_t& recv_buffer,
                        domino_redop_t op, int root) {
  domino_buffer_t recv = recv_buffer;
  flat(Collective::kReduce, send.count * dtype_size(send.dtype)).reduce(send, recv, op, root);
}

void RoutedComm::allgather(const domino_buffer_t& send, const domino_buffer_t& recv_buffer) {
  domino_buffer_t recv = recv_buffer;
  flat(Collective::kAllGather, send.count * dtype_size(send.dtype)).allgather(send, recv);
}

void RoutedComm::reduce_scatter(const domino_buffer_t& send, const domino_buffer_t& recv_buffer,
                                domino_redop_t op) {
  domino_buffer_t recv = recv_buffer;
  flat(Collective::kReduceScatter, recv.count * dtype_size(recv.dtype))
      .reduce_scatter(send, recv, op);
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

}  // namespace domino
