#include "DeviceCollectives.h"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <thread>

#include "DeviceMemory.h"
#include "DeviceRuntime.h"
#include "PriorityGuard.h"
#include "StoreBootstrap.h"
#include "TensorBuffer.h"
#include "Work.h"
#include "config/Log.h"
#include "engine/DevicePath.h"
#include "engine/DeviceWatchdog.h"
#include "engine/RoutedComm.h"
#include "plugins/registry/Communicator.h"
#include "topology/PlanShapes.h"

namespace domino {

InheritedDeviceComms::InheritedDeviceComms() = default;
InheritedDeviceComms::~InheritedDeviceComms() = default;

DeviceCollectives::DeviceCollectives(Group group)
    : group_(std::move(group)), device_health_(std::make_shared<DeviceHealth>()) {
  if (group_.inherited == nullptr || group_.inherited->comms.empty()) return;
  std::lock_guard<std::mutex> lock(device_mutex_);
  // The parent decided NCCL for these ranks; a subset of them decides the same.
  device_path_ = DevicePath::kNccl;
  comm_streams_ = group_.inherited->streams;
  for (const auto& [key, stream] : comm_streams_) device_runtime().adopt(stream);
  inherited_comms_ = std::move(group_.inherited->comms);
  for (auto& [key, comm] : inherited_comms_) {
    // They were made with the parent's timeout; this group's may differ (pg_options).
    group_.timeout_applies(comm->set_timeout(timeout().count()));
    device_communicators_.push_back(comm.get());
  }
}

void DeviceCollectives::finish_device_work(const std::string& what) {
  std::vector<c10::Stream> streams;
  {
    std::lock_guard<std::mutex> lock(device_mutex_);
    for (const auto& [key, stream] : comm_streams_) streams.push_back(stream);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout();
  for (const c10::Stream& stream : streams) {
    while (!stream.query()) {
      TORCH_CHECK(std::chrono::steady_clock::now() < deadline, what,
                  ": CUDA collectives of this group are still running on the device after ",
                  timeout().count(),
                  " ms; wait for them (work.wait() and torch.cuda.synchronize()), or pass "
                  "shrink_flags=SHRINK_ABORT to end them");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

std::shared_ptr<InheritedDeviceComms> DeviceCollectives::shrink(
    c10d::Store& meeting, const std::vector<int32_t>& excluded, bool abort_first, int new_rank,
    const std::vector<int64_t>& remaining, const std::string& new_name, uint64_t attempt) {
  auto inherited = std::make_shared<InheritedDeviceComms>();
  // This rank's flat NCCL communicator per lane, where the lane has one device and NCCL can
  // shrink it.
  std::map<int, std::pair<int, Communicator*>> mine;
  // A child sharing the parent's resources would die with the parent, which is aborted next.
  // NCCL shares them on a graceful shrink where the parent's config (or this variable) says so;
  // the parent was made without shrinkShare, so the variable is what would.
  const char* shared = std::getenv("NCCL_COMM_SHRINK_SHARE_RESOURCES");
  const bool sharing = shared != nullptr && std::string(shared) != "0" && !abort_first;
  {
    std::lock_guard<std::mutex> lock(device_mutex_);
    for (const auto& [key, slot] : device_comms_) {
      // Only healthy ones: an aborted communicator (watchdog, abort(), a failed op) cannot
      // shrink, and the new group makes that lane's own.
      if (sharing || !device_health_->ok() || slot.flat == nullptr || slot.broken ||
          !slot.flat->can_shrink()) {
        continue;
      }
      const bool again = mine.count(key.first) != 0;
      mine[key.first] = {key.second, again ? nullptr : slot.flat};
    }
  }
  std::erase_if(mine, [](const auto& entry) { return entry.second.second == nullptr; });
  std::set<int> common;
  std::string lanes;
  for (const auto& [lane, held] : mine) {
    common.insert(lane);
    lanes += std::to_string(lane) + ",";
  }
  // The remaining ranks shrink the lanes they all hold, in one order (each shrink is collective).
  const std::string round = std::to_string(attempt) + "/";
  meeting.set("nccl-lanes/" + round + std::to_string(new_rank),
              std::vector<uint8_t>(lanes.begin(), lanes.end()));
  for (size_t r = 0; r < remaining.size() && !common.empty(); ++r) {
    if (static_cast<int>(r) == new_rank) continue;
    const std::string key = "nccl-lanes/" + round + std::to_string(r);
    meeting.wait({key}, timeout());
    const std::vector<uint8_t> theirs = meeting.get(key);
    std::set<int> both;
    size_t begin = 0;
    const std::string text(theirs.begin(), theirs.end());
    for (size_t comma; (comma = text.find(',', begin)) != std::string::npos; begin = comma + 1) {
      const int lane = std::stoi(text.substr(begin, comma - begin));
      if (common.count(lane)) both.insert(lane);
    }
    common = std::move(both);
  }
  for (int lane : common) {
    const auto [device, flat] = mine.at(lane);
    const Priority priority = static_cast<Priority>(lane);
    const std::string name =
        new_name + "/cuda/flat" +
        (priority == Priority::kNormal ? "" : std::string(":") + priority_name(priority));
    c10::Stream stream = comm_stream(
        lane, c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device)));
    domino_comm_config_t config{};
    config.rank = new_rank;
    config.size = static_cast<int32_t>(remaining.size());
    config.global_ranks = remaining.data();
    config.group_name = name.c_str();
    config.timeout_ms = timeout().count();
    config.device = device;
    {
      std::lock_guard<std::mutex> lock(device_mutex_);
      config.stream = device_runtime_->native_handle(stream);
    }
    try {
      inherited->comms[{lane, device}] = flat->shrink(excluded, abort_first, config);
    } catch (...) {
      // Its communicator is aborted now: a second attempt leaves the lane to the new group.
      std::lock_guard<std::mutex> lock(device_mutex_);
      device_comms_.at({lane, device}).broken = true;
      throw;
    }
    {
      // The new group owns the stream from here: this group must not hand it back for reuse.
      std::lock_guard<std::mutex> lock(device_mutex_);
      device_runtime_->release(stream);
    }
    inherited->streams.emplace(std::make_pair(lane, device), stream);
    log_line(LogLevel::kInfo, group_.rank,
             label() + ": the " + priority_name(priority) +
                 " lane's NCCL communicator was shrunk (ncclCommShrink) for " + new_name);
  }
  return inherited;
}

DeviceCollectives::~DeviceCollectives() = default;

DeviceCollectives::Issue DeviceCollectives::issue(Work& work, c10::Device device, Route route,
                                                  int lane, int peer, bool host_only) {
  work.set_device(device, group_.settings.blocking_wait, timeout(), device_health_);
  // What the caller has queued so far on its stream must land before the transfer reads it.
  auto ready = std::make_shared<c10::Event>(device.type());
  ready->record(c10::impl::VirtualGuardImpl(device.type()).getStream(device));
  // Each peer gets a stream of its own, so a send that waits for its receiver on the device
  // never holds up a transfer with another peer (rings of sends and receives would deadlock).
  const int stream_lane = route == Route::kCollective ? lane
                          : peer < 0                  ? kPeerLane + 2 * group_.size
                                     : kPeerLane + 2 * peer + (route == Route::kRecv);
  return Issue{device, std::move(ready), stream_lane, host_only, route, peer};
}

void DeviceCollectives::run(Work& work, c10::function_ref<void(Work&, RoutedComm&)> body, int lane,
                            const Issue& issue) {
  TORCH_CHECK(device_health_->ok(), device_health_->failure());
  const c10::Device device = issue.device;
  const c10::Stream stream = comm_stream(issue.stream_lane, device);
  issue.ready->block(stream);
  publish_gpu_identity(device);  // whatever this op is, peers deciding may wait for it
  const bool staged = issue.host_only || (issue.route == Route::kCollective
                                              ? decide_device_path(device) == DevicePath::kStaged
                                              : pair_staged(issue.peer, device));
  const DeviceSession session{stream, staged};
  DeviceSessionScope in_session(&session);
  c10::StreamGuard on_comm_stream(stream);
  // Sends and receives over NCCL use pair communicators (their bodies ask for them).
  const bool over_nccl = !staged && issue.route == Route::kCollective;
  try {
    RoutedComm& comm =
        over_nccl ? device_communicator(lane, device, stream) : group_.host_communicator(lane);
    body(work, comm);
  } catch (...) {
    // Its NCCL communicators may be aborted now (a failed op or set-up aborts them): a shrink
    // must not count on them.
    if (over_nccl) {
      std::lock_guard<std::mutex> lock(device_mutex_);
      auto found = device_comms_.find({lane, device.index()});
      if (found != device_comms_.end()) found->second.broken = true;
    }
    throw;
  }
  auto done = std::make_shared<c10::Event>(device.type());
  done->record(stream);
  if (!staged) watch(done, device, work.retrieveOpType());
  work.set_device_done(std::move(done));
  work.complete();  // with the comm stream current: the future's events go there
}

void DeviceCollectives::watch(const std::shared_ptr<c10::Event>& done, c10::Device device,
                              c10d::OpType type) {
  std::lock_guard<std::mutex> lock(device_mutex_);
  if (!watchdog_) {
    watchdog_ = std::make_unique<DeviceWatchdog>(
        timeout(), [this](const std::string& what) { abort_device_communicators(what); });
  }
  // The watchdog's thread makes the event's device current first, so that it never creates a
  // context on device 0 of a rank that uses another GPU.
  watchdog_->watch(
      [done, device] {
        c10::impl::VirtualGuardImpl(device.type()).setDevice(device);
        return done->query();
      },
      c10d::opTypeToString(type));
}

void DeviceCollectives::track(Communicator* comm) {
  std::lock_guard<std::mutex> lock(device_mutex_);
  if (comm == nullptr) return;
  // setTimeout may have run meanwhile.
  group_.timeout_applies(comm->set_timeout(timeout().count()));
  device_communicators_.push_back(comm);
}

void DeviceCollectives::abort_device_communicators(const std::string& what) {
  abort("domino: " + label() + ": a CUDA " + what +
        " was enqueued but did not finish within the group timeout of " +
        std::to_string(timeout().count()) +
        " ms (a peer died, hangs, or issued other collectives); its NCCL communicators were "
        "aborted, so CUDA collectives on this group now fail. Destroy the group and create a new "
        "one.");
  log_line(LogLevel::kError, group_.rank, device_health_->failure());
}

void DeviceCollectives::abort(const std::string& why) {
  std::vector<Communicator*> comms;
  {
    std::lock_guard<std::mutex> lock(device_mutex_);
    device_health_->fail(why);
    comms = device_communicators_;
  }
  for (Communicator* comm : comms) comm->abort();
}

DeviceRuntime& DeviceCollectives::device_runtime() {
  if (!device_runtime_) device_runtime_ = make_device_runtime();
  TORCH_CHECK(device_runtime_ != nullptr, "domino: ", label(),
              " was given a CUDA tensor, but this build or process has no CUDA device; move the "
              "tensor to the CPU or build torch-domino against a CUDA torch");
  return *device_runtime_;
}

c10::Stream DeviceCollectives::comm_stream(int lane, c10::Device device) {
  std::lock_guard<std::mutex> lock(device_mutex_);
  const std::pair<int, int> key{lane, device.index()};
  auto found = comm_streams_.find(key);
  if (found != comm_streams_.end()) return found->second;
  DeviceRuntime& runtime = device_runtime();
  // High-priority work gets the device's most urgent stream; everything else its least.
  const auto [least, greatest] = runtime.priority_range(device.index());
  const int priority = lane == static_cast<int>(Priority::kHigh) ? greatest : least;
  return comm_streams_.emplace(key, runtime.create_stream(device.index(), priority)).first->second;
}

std::vector<CommStream> DeviceCollectives::comm_streams() const {
  std::lock_guard<std::mutex> lock(device_mutex_);
  std::vector<CommStream> out;
  for (const auto& [key, stream] : comm_streams_) {
    const auto [least, greatest] = device_runtime_->priority_range(stream.device_index());
    const int peer_slot = key.first - kPeerLane;
    const std::string lane =
        peer_slot < 0 ? std::string(priority_name(static_cast<Priority>(key.first)))
        : peer_slot == 2 * group_.size
            ? std::string("recv:any")
            : std::string(peer_slot % 2 ? "recv:" : "send:") + std::to_string(peer_slot / 2);
    out.push_back({lane, key.second, device_runtime_->priority_of(stream), least, greatest});
  }
  return out;
}

const char* DeviceCollectives::device_path() const {
  switch (device_path_.load()) {
    case DevicePath::kNccl:
      return "nccl";
    case DevicePath::kStaged:
      return "staged";
    default:
      return "undecided";
  }
}

namespace {
constexpr const char* kGpuIdentityPrefix = "domino/cuda/identity/";
}  // namespace

void DeviceCollectives::publish_gpu_identity(c10::Device device) {
  if (gpu_identity_published_.load()) return;
  const topology::GroupLayout& layout = group_.layout;
  std::string mine =
      layout.hosts[static_cast<size_t>(layout.host_of_rank[static_cast<size_t>(group_.rank)])] +
      " GPU ";
  {
    std::lock_guard<std::mutex> lock(device_mutex_);
    mine += device_runtime().identity(device.index());
  }
  // Idempotent: two lanes racing here write the same value.
  group_.store->set(kGpuIdentityPrefix + std::to_string(group_.rank),
                    std::vector<uint8_t>(mine.begin(), mine.end()));
  gpu_identity_published_ = true;
}

bool DeviceCollectives::pair_staged(int peer, c10::Device device) {
  // Nothing to ask the peer when the answer cannot be NCCL (and nobody forced it).
  if (group_.settings.gpu_transport == GpuTransport::kStaged ||
      (group_.nccl == nullptr && group_.settings.gpu_transport == GpuTransport::kAuto)) {
    return true;
  }
  publish_gpu_identity(device);
  // Its own lock: waiting here for the peer must not hold up other lanes' streams.
  std::lock_guard<std::mutex> lock(device_path_mutex_);
  auto found = pair_staged_.find(peer);
  if (found != pair_staged_.end()) return found->second;
  auto identity = [&](int rank) {
    const std::string key = kGpuIdentityPrefix + std::to_string(rank);
    try {
      group_.store->wait({key}, timeout());
    } catch (const std::exception& e) {
      TORCH_CHECK(false, "domino: ", label(), ": rank ", rank,
                  " did not name its GPU within the "
                  "timeout for a CUDA send/recv with it (",
                  e.what(), ")");
    }
    const std::vector<uint8_t> value = group_.store->get(key);
    return std::string(value.begin(), value.end());
  };
  DevicePathChoice choice;
  try {
    choice = choose_device_path({{group_.rank, identity(group_.rank)}, {peer, identity(peer)}},
                                group_.nccl != nullptr, group_.settings.gpu_transport);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK(false, "domino: ", label(), ": CUDA send/recv with rank ", peer, ": ", e.what());
  }
  pair_staged_[peer] = !choice.nccl;
  return !choice.nccl;
}

DeviceCollectives::DevicePath DeviceCollectives::decide_device_path(c10::Device device) {
  const DevicePath known = device_path_.load();
  if (known != DevicePath::kUndecided) return known;
  publish_gpu_identity(device);
  std::lock_guard<std::mutex> lock(device_path_mutex_);
  if (device_path_.load() != DevicePath::kUndecided) return device_path_.load();
  const std::string prefix = kGpuIdentityPrefix;
  std::vector<std::string> keys;
  for (int r = 0; r < group_.size; ++r) keys.push_back(prefix + std::to_string(r));
  try {
    group_.store->wait(keys, timeout());
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "domino: ", label(),
                ": the first CUDA collective waits for every rank to "
                "name its GPU, and not all did within the timeout (",
                e.what(), "); every rank must issue the same collectives");
  }
  std::vector<std::pair<int, std::string>> gpus;
  for (int r = 0; r < group_.size; ++r) {
    const std::vector<uint8_t> value = group_.store->get(keys[static_cast<size_t>(r)]);
    gpus.emplace_back(r, std::string(value.begin(), value.end()));
  }
  DevicePathChoice choice;
  try {
    choice = choose_device_path(gpus, group_.nccl != nullptr, group_.settings.gpu_transport);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK(false, "domino: ", label(), ": ", e.what());
  }
  const bool nccl = choice.nccl;
  device_path_ = nccl ? DevicePath::kNccl : DevicePath::kStaged;
  const std::string& why = choice.why;
  if (nccl) {
    log_line(LogLevel::kInfo, group_.rank, label() + ": CUDA tensors go through NCCL");
  } else {
    log_line(group_.rank == 0 ? LogLevel::kWarn : LogLevel::kInfo, group_.rank,
             label() + ": CUDA tensors are staged through host memory over " +
                 group_.intra_transport +
                 (group_.layout.single_host() ? "" : std::string("/") + group_.inter_transport) +
                 ", because " + why);
  }
  return device_path_.load();
}

RoutedComm& DeviceCollectives::device_communicator(int lane, c10::Device device,
                                                   const c10::Stream& stream) {
  DeviceComm* slot;
  {
    std::lock_guard<std::mutex> lock(device_mutex_);
    for (const auto& [key, made] : device_comms_) {
      // The rendezvous of a lane's communicators is per lane: one device per lane and rank.
      TORCH_CHECK(key.first != lane || key.second == device.index(), "domino: ", label(),
                  ": CUDA collectives on the ", priority_name(static_cast<Priority>(lane)),
                  " lane used cuda:", key.second, " and now ", device,
                  "; a rank uses one GPU per group (call torch.cuda.set_device and keep its "
                  "tensors there)");
    }
    slot = &device_comms_[{lane, device.index()}];  // map nodes stay put; one lane per slot
  }
  if (slot->comm) return *slot->comm;
  const Priority priority = static_cast<Priority>(lane);
  // NCCL sees the hierarchy itself, so flat (DOMINO_ALGO's word) unless the user forced a plan
  // through the hosts.
  topology::RouterOptions options = group_.router.options();
  const topology::PlanShape* forced = group_.router.forced_shape();
  if (forced == nullptr || forced->flat()) options.forced_plan = "flat";
  options.rail_chunk_bytes = 0;  // stream-ordered steps: NCCL pipelines within each
  options.inter_runs_table = group_.nccl_runs_table;
  options.forced_intra_algorithm.clear();  // DOMINO_ALGO's in-host algorithms are for host memory
  options.intra_home = std::nullopt;       // NCCL chooses for itself
  slot->router = std::make_unique<topology::Router>(group_.layout, group_.router.costs(), options);
  void* native = device_runtime_->native_handle(stream);
  Communicator* root = nullptr;
  std::vector<Communicator*> made_here;
  // The first communicator over every rank ("" on one host, "inter" across hosts) is the one a
  // shrink carries over.
  Communicator* flat_comm = nullptr;
  Communicator* inherited_comm = nullptr;
  auto make = [&](const RoutedComm::Spec& spec) -> std::unique_ptr<Communicator> {
    const bool flat =
        flat_comm == nullptr && spec.members.size() == static_cast<size_t>(group_.size);
    if (flat) {
      std::lock_guard<std::mutex> lock(device_mutex_);
      auto found = inherited_comms_.find({lane, device.index()});
      if (found != inherited_comms_.end()) {  // shrunk from the parent's: no rendezvous
        std::unique_ptr<Communicator> inherited = std::move(found->second);
        inherited_comms_.erase(found);
        if (root == nullptr) root = inherited.get();
        flat_comm = inherited_comm = inherited.get();
        return inherited;
      }
    }
    const std::string part = spec.name.empty() ? "flat" : spec.name;
    slot->bootstraps.push_back(std::make_unique<StoreBootstrap>(
        group_.store, std::string("domino/cuda/") + priority_name(priority) + "/" + part + "/"));
    const std::string name =
        group_.name + "/cuda/" + part +
        (priority == Priority::kNormal ? "" : std::string(":") + priority_name(priority));
    std::vector<int64_t> members;
    domino_comm_config_t config =
        group_.comm_config(spec.members, name, *slot->bootstraps.back(), &members);
    config.device = device.index();
    config.stream = native;
    // Topology levels split from the group's communicator where every rank takes part in the
    // same splits (uniform layouts); otherwise each gets its own rendezvous.
    const bool local = spec.name.rfind("local", 0) == 0;
    const bool rail = spec.name.rfind("rail", 0) == 0;
    if (root != nullptr && (local || rail) && group_.layout.uniform &&
        group_.nccl->comm_split != nullptr) {
      const int color = local ? group_.layout.host_of_rank[static_cast<size_t>(group_.rank)]
                              : group_.layout.local_rank[static_cast<size_t>(group_.rank)];
      // The key orders the new communicator: its rank must be the position in spec.members.
      auto part_comm = root->split(color, config.rank, config);
      made_here.push_back(part_comm.get());
      return part_comm;
    }
    auto made = std::make_unique<Communicator>(group_.nccl, config);
    if (root == nullptr) root = made.get();
    if (flat) flat_comm = made.get();
    made_here.push_back(made.get());
    return made;
  };
  try {
    slot->comm = std::make_unique<RoutedComm>(*slot->router, group_.rank, make,
                                              std::make_shared<DeviceMemory>());
  } catch (...) {
    // The inherited communicator went with the half-built set-up: the watchdog and abort() must
    // not reach it.
    std::lock_guard<std::mutex> lock(device_mutex_);
    std::erase(device_communicators_, inherited_comm);
    throw;
  }
  // Only now: had the set-up failed half-way, the communicators made so far would be gone.
  for (Communicator* comm : made_here) track(comm);
  {
    std::lock_guard<std::mutex> lock(device_mutex_);
    slot->flat = flat_comm;
  }
  return *slot->comm;
}

Communicator& DeviceCollectives::peer_communicator(int peer, bool sending, c10::Device device,
                                                   const c10::Stream& stream,
                                                   std::unique_lock<std::mutex>* hold) {
  PeerComm* slot;
  {
    std::lock_guard<std::mutex> lock(peer_mutex_);
    slot = &peer_comms_[{peer, sending}];  // map nodes stay put
  }
  // One lock per direction, held through set-up and the call: set-up with one peer, or in one
  // direction, must not wait for another (both ranks sending first would deadlock).
  *hold = std::unique_lock<std::mutex>(slot->mutex);
  if (slot->comm) {
    TORCH_CHECK(slot->device == device.index(), "domino: ", label(), ": CUDA ",
                sending ? "sends to" : "receives from", " rank ", peer, " used cuda:", slot->device,
                " and now ", device, "; use one device per peer and direction");
    return *slot->comm;
  }
  const int from = sending ? group_.rank : peer, to = sending ? peer : group_.rank;
  const std::string direction = std::to_string(from) + "to" + std::to_string(to);
  slot->bootstrap =
      std::make_unique<StoreBootstrap>(group_.store, "domino/cuda/p2p/" + direction + "/");
  const std::string name = group_.name + "/cuda/p2p/" + direction;
  std::vector<int64_t> members;
  domino_comm_config_t config = group_.comm_config({std::min(from, to), std::max(from, to)}, name,
                                                   *slot->bootstrap, &members);
  config.device = device.index();
  {
    std::lock_guard<std::mutex> lock(device_mutex_);
    config.stream = device_runtime_->native_handle(stream);
  }
  slot->comm = std::make_unique<Communicator>(group_.nccl, config);
  slot->device = device.index();
  track(slot->comm.get());
  return *slot->comm;
}

void DeviceCollectives::set_timeout(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(device_mutex_);
  for (Communicator* comm : device_communicators_) {
    group_.timeout_applies(comm->set_timeout(timeout.count()));
  }
}

void DeviceCollectives::stop_watchdog() {
  watchdog_.reset();
}

void DeviceCollectives::destroy_communicators() {
  stop_watchdog();  // first, whoever calls: it aborts the communicators going here
  {
    std::lock_guard<std::mutex> lock(device_mutex_);
    device_communicators_.clear();
  }
  device_comms_.clear();
  inherited_comms_.clear();
  std::lock_guard<std::mutex> lock(peer_mutex_);
  peer_comms_.clear();
}

}  // namespace domino
