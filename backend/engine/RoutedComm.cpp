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

PlanKind RoutedComm::plan_for(Collective op, size_t bytes) {
  // One communicator, nothing to choose: keep the router off the hot path.
  const PlanKind kind = flat_inter_ ? router_.choose(op, bytes).kind : PlanKind::kFlatIntra;
  last_plan_ = topology::plan_name(kind);
  return kind;
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
  return flat_comm(plan_for(op, bytes));
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
    flat_comm(kind).allreduce(send, recv, op);
    return;
  }
  const size_t bytes = recv.count * dtype_size(recv.dtype);
  if (send.ptr != recv.ptr && bytes > 0) memory_->copy(recv.ptr, send.ptr, bytes, recv.device);
  // AVG is a sum until the end: a mean of per-host means would weigh hosts, not ranks.
  const domino_redop_t step_op = op == DOMINO_AVG ? DOMINO_SUM : op;
  run_two_level("allreduce", kind, [&] {
    if (kind == PlanKind::kHierarchical) {
      allreduce_hierarchical(recv, step_op);
    } else {
      allreduce_leader(recv, step_op);
    }
  });
  if (op == DOMINO_AVG) memory_->divide(recv, size_);
}

template <class Steps>
void RoutedComm::run_two_level(const char* op, PlanKind kind, Steps&& steps) {
  try {
    steps();
  } catch (const TransportError& e) {
    // The failing step names its own sub-group; say which collective it was part of.
    throw TransportError(e.status(),
                         std::string(op) + " (" + topology::plan_name(kind) +
                             " plan across hosts) failed in one of its steps: " + e.what());
  }
}

void RoutedComm::permute_blocks(char* group_order, char* host_order, size_t block_bytes,
                                bool to_host_order, int device) {
  if (block_bytes == 0) return;
  const topology::GroupLayout& layout = router_.layout();
  const size_t hosts = layout.host_ranks.size();
  for (size_t h = 0; h < hosts; ++h) {
    const std::vector<int>& ranks = layout.host_ranks[h];
    for (size_t l = 0; l < ranks.size(); ++l) {
      char* in_group = group_order + static_cast<size_t>(ranks[l]) * block_bytes;
      char* in_host = host_order + (l * hosts + h) * block_bytes;
      memory_->copy(to_host_order ? in_host : in_group, to_host_order ? in_group : in_host,
                    block_bytes, device);
    }
  }
}

void RoutedComm::allgather_hierarchical(const domino_buffer_t& send, domino_buffer_t recv) {
  if (!local_) {  // one rank per host: the rail is the whole group, in group-rank order
    rail_->allgather(send, recv);
    return;
  }
  const topology::GroupLayout& layout = router_.layout();
  const size_t hosts = layout.host_ranks.size(), local = layout.host_ranks.front().size();
  const size_t block = send.count * dtype_size(send.dtype);
  const std::shared_ptr<void> rail_part = memory_->allocate(hosts * block, recv.device);
  domino_buffer_t rail_blocks{rail_part.get(), hosts * send.count, send.dtype, recv.device};
  rail_->allgather(send, rail_blocks);
  const std::shared_ptr<void> host_part = memory_->allocate(local * hosts * block, recv.device);
  domino_buffer_t host_blocks{host_part.get(), local * hosts * send.count, send.dtype, recv.device};
  local_->allgather(rail_blocks, host_blocks);
  permute_blocks(static_cast<char*>(recv.ptr), static_cast<char*>(host_part.get()), block, false,
                 recv.device);
}

void RoutedComm::reduce_scatter_hierarchical(const domino_buffer_t& send, domino_buffer_t recv,
                                             domino_redop_t op) {
  if (!local_) {
    rail_->reduce_scatter(send, recv, op);
    return;
  }
  const topology::GroupLayout& layout = router_.layout();
  const size_t hosts = layout.host_ranks.size(), local = layout.host_ranks.front().size();
  const size_t block = recv.count * dtype_size(recv.dtype);
  // AVG is a sum until the end: the steps would divide by their own sizes.
  const domino_redop_t step_op = op == DOMINO_AVG ? DOMINO_SUM : op;
  const std::shared_ptr<void> ordered = memory_->allocate(local * hosts * block, recv.device);
  permute_blocks(static_cast<char*>(send.ptr), static_cast<char*>(ordered.get()), block, true,
                 recv.device);
  const std::shared_ptr<void> host_sums = memory_->allocate(hosts * block, recv.device);
  domino_buffer_t host_blocks{host_sums.get(), hosts * recv.count, recv.dtype, recv.device};
  local_->reduce_scatter({ordered.get(), local * hosts * recv.count, recv.dtype, recv.device},
                         host_blocks, step_op);
  rail_->reduce_scatter(host_blocks, recv, step_op);
  if (op == DOMINO_AVG) memory_->divide(recv, size_);
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

void RoutedComm::allreduce_hierarchical(domino_buffer_t& data, domino_redop_t op) {
  if (!local_) {
    rail_->allreduce(data, data, op);
    return;
  }
  const size_t local_size = router_.layout().host_ranks.front().size();
  const size_t element = dtype_size(data.dtype);
  // Host memory goes in the router's pipeline of chunks (RailPipeline.h); device routers ask
  // for none: their communicators are stream-ordered, and NCCL pipelines within each step.
  const size_t chunks = data.device < 0 ? router_.rail_chunks(data.count * element) : 1;
  const size_t padded = (data.count + local_size - 1) / local_size * local_size;
  const size_t slice = padded / local_size;
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
  if (chunks >= 2) {
    if (!rail_pipeline_) {
      rail_pipeline_ = std::make_unique<RailPipeline>(*local_, *rail_, static_cast<int>(local_size),
                                                      rail_thread_);
    }
    rail_pipeline_->allreduce(whole, part.get(), chunks, op);
  } else {
    domino_buffer_t mine{part.get(), slice, data.dtype, data.device};
    local_->reduce_scatter(whole, mine, op);
    rail_->allreduce(mine, mine, op);
    local_->allgather(mine, whole);
  }
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
  const PlanKind kind = plan_for(Collective::kBroadcast, buffer.count * dtype_size(buffer.dtype));
  // A bad root is the flat communicator's to refuse.
  if (two_level(kind) && root >= 0 && root < size_) {
    run_two_level("broadcast", kind, [&] { broadcast_leader(buffer, root); });
    return;
  }
  flat_comm(kind).broadcast(buffer, root);
}

void RoutedComm::reduce(const domino_buffer_t& send, const domino_buffer_t& recv_buffer,
                        domino_redop_t op, int root) {
  domino_buffer_t recv = recv_buffer;
  flat(Collective::kReduce, send.count * dtype_size(send.dtype)).reduce(send, recv, op, root);
}

void RoutedComm::allgather(const domino_buffer_t& send, const domino_buffer_t& recv_buffer) {
  domino_buffer_t recv = recv_buffer;
  const PlanKind kind = plan_for(Collective::kAllGather, send.count * dtype_size(send.dtype));
  if (two_level(kind)) {
    run_two_level("allgather", kind, [&] { allgather_hierarchical(send, recv); });
    return;
  }
  flat_comm(kind).allgather(send, recv);
}

void RoutedComm::reduce_scatter(const domino_buffer_t& send, const domino_buffer_t& recv_buffer,
                                domino_redop_t op) {
  domino_buffer_t recv = recv_buffer;
  const PlanKind kind = plan_for(Collective::kReduceScatter, recv.count * dtype_size(recv.dtype));
  if (two_level(kind)) {
    run_two_level("reduce_scatter", kind, [&] { reduce_scatter_hierarchical(send, recv, op); });
    return;
  }
  flat_comm(kind).reduce_scatter(send, recv, op);
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

bool RoutedComm::set_timeout(int64_t timeout_ms) {
  bool all = true;
  for (auto* comm : {&flat_intra_, &flat_inter_, &local_, &rail_, &leaders_}) {
    if (*comm && !(*comm)->set_timeout(timeout_ms)) all = false;
  }
  return all;
}

}  // namespace domino
