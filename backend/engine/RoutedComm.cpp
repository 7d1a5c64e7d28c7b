#include "RoutedComm.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

#include "config/Log.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"
#include "plugins/common/TransportError.h"

namespace domino {

using topology::Collective;
using topology::Level;

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
  // The communicators of the levels some plan of this layout steps on, in an order every rank
  // shares.
  const int host = layout.host_of_rank[static_cast<size_t>(rank)];
  const std::vector<int>& mine = layout.host_ranks[static_cast<size_t>(host)];
  if (router.steps_on(Level::kHost) && mine.size() > 1) {
    local_ = make({"local" + std::to_string(host), false, mine});
  }
  if (router.steps_on(Level::kRail)) {
    const int local_rank = layout.local_rank[static_cast<size_t>(rank)];
    std::vector<int> rail;
    for (const auto& ranks : layout.host_ranks)
      rail.push_back(ranks[static_cast<size_t>(local_rank)]);
    rail_ = make({"rail" + std::to_string(local_rank), true, rail});
  }
  if (router.forced_shape() == nullptr) {
    std::vector<std::string> shapes;
    for (const auto& plan : router.candidates(Collective::kAllReduce, 8))
      shapes.emplace_back(plan.shape);
    if (!shapes.empty()) small_allreduce_trial_.emplace(shapes);
  }
  if (router.steps_on(Level::kLeaders) && mine.front() == rank) {
    std::vector<int> leaders;
    for (const auto& ranks : layout.host_ranks) leaders.push_back(ranks.front());
    std::sort(leaders.begin(), leaders.end());
    leaders_ = make({"leaders", true, leaders});
  }
}

const topology::Plan& RoutedComm::plan_for(Collective op, size_t bytes, uint64_t pick) {
  // Bytes past 2^48 share keys; their plans are the same in all but a report's figures.
  const uint64_t key = (static_cast<uint64_t>(op) << 56) | (pick << 48) |
                       std::min<uint64_t>(bytes, (uint64_t{1} << 48) - 1);
  // A loop of one op and size, the common case, skips the map.
  if (last_plan_key_ == key && last_found_ != nullptr) return *last_found_;
  auto found = plans_.find(key);
  if (found == plans_.end()) {
    if (plans_.size() >= kCachedPlans) plans_.clear();
    found = plans_.emplace(key, routed_plan(op, bytes, pick)).first;
  }
  last_plan_key_ = key;
  last_found_ = &found->second;  // the map's nodes stay put until it is cleared, above
  return found->second;
}

topology::Plan RoutedComm::routed_plan(Collective op, size_t bytes, uint64_t pick) const {
  if (pick == kChosen) return router_.choose(op, bytes);
  if (pick == kWholeGroup) return router_.whole_group(op, bytes);
  return router_.plan(small_allreduce_trial_->candidates()[pick - kTrialCandidate], op, bytes);
}

const topology::Plan& RoutedComm::trial_plan(const PlanTrial& trial, size_t bytes) {
  const std::string& shape = trial.decided() ? trial.winner() : trial.next();
  const auto candidate = static_cast<uint64_t>(&shape - trial.candidates().data());
  return plan_for(Collective::kAllReduce, bytes, kTrialCandidate + candidate);
}

void RoutedComm::collective(const domino_call_t& k) {
  const auto op = static_cast<Collective>(k.op);
  const domino_buffer_t none{nullptr, 0, DOMINO_UINT8, -1};
  const Call call{op, k.send != nullptr ? *k.send : none, k.recv != nullptr ? *k.recv : none,
                  k.redop, k.root};
  const domino_buffer_t& sized = topology::sized_by_output(op) ? call.recv : call.send;
  const size_t bytes = sized.count * dtype_size(sized.dtype);
  if (op == Collective::kAllToAll) {
    // Counts and offsets per peer: no plan but the flat one takes them. The router chooses an
    // all-to-all's algorithm by the number of ranks alone (ranks send different amounts), so
    // one cached plan serves every size.
    const topology::Plan& plan = plan_for(Collective::kAllToAll, 0, kWholeGroup);
    last_plan_ = plan.shape;
    level_comm(Level::kGroup)->collective(k, plan.steps.front().algorithm);
    return;
  }
  if (op == Collective::kAllReduce) {
    allreduce(call, bytes);
    return;
  }
  // A bad root is the flat communicator's to refuse, as it would be on one host.
  const bool valid = !topology::rooted(op) || (call.root >= 0 && call.root < size_);
  run(plan_for(op, bytes, valid ? kChosen : kWholeGroup), call);
}

void RoutedComm::allreduce(const Call& call, size_t bytes) {
  if (flat_intra_ && bytes >= kAlgorithmTrialFromBytes) {
    large_one_host_allreduce(call, bytes);
    return;
  }
  PlanTrial* trial =
      small_allreduce_trial_ && bytes <= kPlanTrialMaxBytes ? &*small_allreduce_trial_ : nullptr;
  const topology::Plan& plan =
      trial == nullptr ? plan_for(Collective::kAllReduce, bytes) : trial_plan(*trial, bytes);
  if (trial == nullptr || trial->decided()) {
    run(plan, call);
    return;
  }
  const auto began = std::chrono::steady_clock::now();
  run(plan, call);
  trial->record(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  if (trial->measured()) {
    // Agree on the slowest rank's time per plan, so every rank adopts the same one.
    std::vector<double> medians = trial->medians();
    domino_buffer_t times{medians.data(), medians.size(), DOMINO_FLOAT64, -1};
    flat_inter_->collective(make_call(Collective::kAllReduce, times, times, DOMINO_MAX));
    trial->adopt(medians);
    std::string summary;
    for (size_t i = 0; i < medians.size(); ++i) {
      summary += (i ? ", " : "") + trial->candidates()[i] + " " +
                 std::to_string(static_cast<int>(medians[i] * 1e6)) + " us";
    }
    log_line(LogLevel::kInfo, rank_,
             std::string("all-reduces up to ") + std::to_string(kPlanTrialMaxBytes) +
                 " bytes across hosts take plan " + trial->winner() + " (measured: " + summary +
                 ")");
  }
}

void RoutedComm::large_one_host_allreduce(const Call& call, size_t bytes) {
  const int size_class = static_cast<int>(std::bit_width(bytes)) - 1;
  auto found = large_allreduce_trials_.find(size_class);
  if (found == large_allreduce_trials_.end()) {
    // Priced at the class's middle, not at whichever size came first: the table's regimes end
    // on powers of two, and the candidates must not depend on the order of sizes.
    const size_t middle = (size_t{1} << size_class) + (size_t{1} << size_class) / 2;
    found =
        large_allreduce_trials_.emplace(size_class, router_.intra_allreduce_candidates(middle, 2))
            .first;
  }
  Trial<std::string>& trial = found->second;
  const topology::Plan& chosen = plan_for(Collective::kAllReduce, bytes);
  if (trial.candidates().size() < 2 || chosen.steps.size() != 1) {
    last_large_algorithm_ = chosen.steps.empty() ? "" : chosen.steps.front().algorithm;
    run(chosen, call);
    return;
  }
  topology::Plan plan = chosen;
  plan.steps.front().algorithm = trial.decided() ? trial.winner() : trial.next();
  last_large_algorithm_ = plan.steps.front().algorithm;
  if (trial.decided()) {
    run(plan, call);
    return;
  }
  const auto began = std::chrono::steady_clock::now();
  run(plan, call);
  trial.record(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  if (!trial.measured()) return;
  // Agree on the slowest rank's time per algorithm, so every rank adopts the same one.
  std::vector<double> medians = trial.medians();
  domino_buffer_t times{medians.data(), medians.size(), DOMINO_FLOAT64, -1};
  flat_intra_->collective(make_call(Collective::kAllReduce, times, times, DOMINO_MAX));
  trial.adopt(medians);
  std::string summary;
  for (size_t i = 0; i < medians.size(); ++i) {
    summary += (i ? ", " : "") + trial.candidates()[i] + " " +
               std::to_string(static_cast<int>(medians[i] * 1e6)) + " us";
  }
  log_line(LogLevel::kInfo, rank_,
           "all-reduces of " + std::to_string(size_t{1} << size_class) + " to " +
               std::to_string((size_t{1} << (size_class + 1)) - 1) + " bytes on this host take " +
               trial.winner() + " (measured: " + summary + ")");
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
