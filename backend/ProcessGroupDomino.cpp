#include "ProcessGroupDomino.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/record_function.h>
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <sched.h>

#include <torch/version.h>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "DeviceRuntime.h"
#include "HandleScope.h"
#include "MonitoredBarrier.h"
#include "OpChecks.h"
#include "PriorityGuard.h"
#include "SparseAllreduce.h"
#include "StoreBootstrap.h"
#include "TensorBuffer.h"
#include "Work.h"
#include "config/Log.h"
#include "config/WireSettings.h"
#include "engine/DeviceWatchdog.h"
#include "engine/LinkProbe.h"
#include "engine/ProgressLane.h"
#include "engine/RoutedComm.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/TransportError.h"
#include "plugins/registry/Communicator.h"
#include "plugins/registry/PluginRegistry.h"

namespace domino {

namespace {
constexpr uint64_t kDirectOnlyBytes = ~0ull;

// Every rank publishes its host identity; every rank then reads all of them.
topology::GroupLayout exchange_layout(c10d::Store& store, int rank, int size,
                                      const std::string& host_override,
                                      std::chrono::milliseconds timeout) {
  const std::string mine = topology::local_host_id(host_override);
  const std::string prefix = "domino/host/";
  store.set(prefix + std::to_string(rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::vector<std::string> keys, ids;
  for (int r = 0; r < size; ++r) keys.push_back(prefix + std::to_string(r));
  store.wait(keys, timeout);
  for (const auto& key : keys) {
    const std::vector<uint8_t> value = store.get(key);
    ids.emplace_back(value.begin(), value.end());
  }
  return topology::layout_from_host_ids(ids);
}
constexpr uint64_t kAlwaysChunked = 1;
// Niceness of the low lane's thread: on contended cores it yields most of its share to the
// threads issuing high-priority work, without starving (measured with bench --suite priority).
constexpr int kLowLaneNice = 10;

std::exception_ptr as_backend_error(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

// What a failed job reports: torch's checks already say "domino: ..." (and carry a C++
// backtrace the user does not need); transport errors get the prefix, and timeouts c10d's
// "Timed out" wording, which users' log scanners and PyTorch's own tests look for.
std::exception_ptr job_error(const std::exception& e, std::chrono::milliseconds timeout) {
  if (const auto* checked = dynamic_cast<const c10::Error*>(&e)) {
    return as_backend_error(checked->what_without_backtrace());
  }
  const auto* transport = dynamic_cast<const TransportError*>(&e);
  if (transport != nullptr && transport->status() == DOMINO_ERR_TIMEOUT) {
    return as_backend_error("domino: Timed out after " + std::to_string(timeout.count()) +
                            " ms (the group's timeout): " + e.what());
  }
  return as_backend_error(std::string("domino: ") + e.what());
}
// What a profiler on the caller's thread needs to see an op on the lane: its RecordFunction
// callbacks and its debug info (where the profiler keeps its state); nothing else of the
// caller's thread-local state reaches the lane.
struct ProfilerContext {
  at::RecordFunctionTLS callbacks;
  std::shared_ptr<c10::ThreadLocalDebugInfo> debug_info;
};

class ProfilerContextGuard {
 public:
  explicit ProfilerContextGuard(const ProfilerContext& context)
      : saved_(at::get_record_function_tls_()), debug_info_(context.debug_info) {
    at::set_record_function_tls_(context.callbacks);
  }
  ~ProfilerContextGuard() { at::set_record_function_tls_(saved_); }
  ProfilerContextGuard(const ProfilerContextGuard&) = delete;
  ProfilerContextGuard& operator=(const ProfilerContextGuard&) = delete;

 private:
  at::RecordFunctionTLS saved_;
  c10::DebugInfoGuard debug_info_;
};

// A domino:<op> event over the op's tensors, as Gloo's: a trace with record_shapes shows their
// sizes. Left empty when no callback wants it.
void record_op(std::optional<at::RecordFunction>& record, const char* op, Work& work) {
  record.emplace(at::RecordScope::USER_SCOPE);
  if (!record->isActive()) return;
  const std::string title = std::string("domino:") + op;
  std::vector<c10::IValue> tensors;
  for (const at::Tensor& t : work.result()) tensors.emplace_back(t);
  record->before(title.c_str(), c10::ArrayRef<const c10::IValue>(tensors.data(), tensors.size()));
}
}  // namespace

ProcessGroupDomino::ProcessGroupDomino(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                       int size, c10::intrusive_ptr<Options> options)
    : c10d::Backend(rank, size), options_(std::move(options)), store_(store) {
  timeout_.store(options_->timeout);
  ParsedSettings parsed;
  std::vector<std::string> differences;
  try {
    const std::map<std::string, std::string> env = domino_environment();
    parse_settings(env);  // this rank's own mistakes are told here, before anyone waits for it
    const AdoptedEnvironment adopted = agree_on_wire_settings(env);
    differences = adopted.differences;
    for (const std::string& name : wire_variables()) {
      const auto found = adopted.env.find(name);
      if (found != adopted.env.end()) wire_settings_[name] = found->second;
    }
    parsed = parse_settings(adopted.env);
    default_priority_ =
        options_->priority.empty()
            ? parsed.settings.priority
            : parse_priority(options_->priority, "ProcessGroupDomino.Options.priority");
  } catch (const ConfigError& e) {
    TORCH_CHECK_VALUE(false, "domino: init of ", label(), " failed: ", e.what());
  }
  settings_ = parsed.settings;
  set_log_level(settings_.log_level);
  for (const std::string& warning : parsed.warnings) log_line(LogLevel::kWarn, rank, warning);
  for (const std::string& difference : differences) {
    log_line(LogLevel::kWarn, rank, label() + ": " + difference);
  }

  global_ranks_.assign(options_->global_ranks_in_group.begin(),
                       options_->global_ranks_in_group.end());
  if (global_ranks_.size() != static_cast<size_t>(size)) {
    global_ranks_.resize(static_cast<size_t>(size));
    for (int i = 0; i < size; ++i) global_ranks_[static_cast<size_t>(i)] = i;
  }
  group_name_ = options_->group_name.empty() ? "default" : options_->group_name;

  try {
    layout_ = exchange_layout(*store_, rank, size, settings_.host_id, timeout());
  } catch (const std::exception& e) {
    C10_THROW_ERROR(DistBackendError,
                    std::string("domino: init of ") + label() +
                        " failed while ranks exchanged host identities: " + e.what());
  }
  std::string hosts;
  for (size_t h = 0; h < layout_.hosts.size(); ++h) {
    hosts += (h ? "; " : "") + layout_.hosts[h] + ": ranks";
    for (int r : layout_.host_ranks[h]) hosts += " " + std::to_string(r);
  }

  try {
    registry_ = std::make_unique<PluginRegistry>(settings_.plugin_path);
    plugin_ = loaded_transport("DOMINO_INTRA_TRANSPORT", settings_.intra_transport, "shm");
    inter_plugin_ = loaded_transport("DOMINO_INTER_TRANSPORT", settings_.inter_transport, "ucx");
    device_plugin_ = registry_->find("nccl");
    bind();  // before anything starts UCX, which reads UCX_NET_DEVICES once
    router_ = std::make_unique<topology::Router>(agree_on_routing(hosts));
    // The normal lane's communicator also carries point-to-point traffic; make it now so that
    // set-up errors surface at init.
    communicator(static_cast<int>(Priority::kNormal));
  } catch (const TransportError& e) {
    C10_THROW_ERROR(DistBackendError,
                    std::string("domino: init of ") + label() + " failed: " + e.what());
  }
  for (int lane = 0; lane < kLanes; ++lane) {
    lanes_[static_cast<size_t>(lane)] = std::make_unique<ProgressLane>(
        static_cast<Priority>(lane) == Priority::kLow ? kLowLaneNice : 0, binding_.cpus);
  }
  send_lane_ = std::make_unique<ProgressLane>(0, binding_.cpus);
  recv_lane_ = std::make_unique<ProgressLane>(0, binding_.cpus);
  log_line(LogLevel::kInfo, rank,
           label() + " ready: " + std::to_string(layout_.hosts.size()) + " host(s) (" + hosts +
               "), intra-host transport " + plugin_->name + ", inter-host transport " +
               inter_transport() + ", default lane " + priority_name(default_priority_));
}

ProcessGroupDomino::~ProcessGroupDomino() {
  shutdown();
}

void ProcessGroupDomino::shutdown() {
  for (auto& lane : lanes_) lane.reset();
  send_lane_.reset();
  recv_lane_.reset();
  watchdog_.reset();  // before the communicators it may abort
  {
    std::lock_guard<std::mutex> lock(timeout_mutex_);  // a setTimeout may be walking them
    for (auto& lane : comms_) {
      lane.comm.reset();
      lane.bootstraps.clear();
    }
  }
  {
    std::lock_guard<std::mutex> lock(device_mutex_);
    device_communicators_.clear();
  }
  device_comms_.clear();
  std::lock_guard<std::mutex> lock(peer_mutex_);
  peer_comms_.clear();
}

const char* ProcessGroupDomino::intra_transport() const {
  return plugin_ != nullptr ? plugin_->name : "none";
}

const domino_plugin_v1_t* ProcessGroupDomino::loaded_transport(const char* variable,
                                                               const std::string& chosen,
                                                               const char* automatic) const {
  const std::string name = chosen == "auto" ? std::string(automatic) : chosen;
  const domino_plugin_v1_t* plugin = registry_->find(name);
  if (plugin == nullptr) {
    std::string known;
    for (const auto& n : registry_->names()) known += (known.empty() ? "" : ", ") + n;
    TORCH_CHECK_VALUE(false, "domino: ", variable, "='", name,
                      "' names no loaded transport; accepted values: auto, ", known,
                      ". Fix the name or add its plugin directory to DOMINO_PLUGIN_PATH.");
  }
  return plugin;
}

const char* ProcessGroupDomino::inter_transport() const {
  return router_ && router_->uses_inter() && inter_plugin_ != nullptr ? inter_plugin_->name
                                                                      : "none";
}

topology::LinkCost ProcessGroupDomino::measure_link(const domino_plugin_v1_t* plugin, int peer,
                                                    const std::string& what, bool by_collectives) {
  std::vector<int64_t> members = {global_ranks_[0], global_ranks_[static_cast<size_t>(peer)]};
  StoreBootstrap bootstrap(store_, "domino/probe-" + what + "/");
  const std::string name = group_name_ + "/probe-" + what;
  domino_comm_config_t config{};
  config.rank = rank_ == 0 ? 0 : 1;
  config.size = 2;
  config.global_ranks = members.data();
  config.group_name = name.c_str();
  // Short: a peer that cannot answer must not hold up the group's creation for long.
  config.timeout_ms = std::min<int64_t>(timeout().count(), 10000);
  config.bootstrap = bootstrap.table();
  Communicator comm(plugin, config);
  return by_collectives ? probe_collective_link(comm) : probe_link(comm, config.rank);
}

std::string ProcessGroupDomino::rank0s(const std::string& key, const std::string& mine) {
  if (rank_ == 0) {
    store_->set(key, std::vector<uint8_t>(mine.begin(), mine.end()));
    return mine;
  }
  store_->wait({key}, timeout());
  const std::vector<uint8_t> value = store_->get(key);
  return std::string(value.begin(), value.end());
}

AdoptedEnvironment ProcessGroupDomino::agree_on_wire_settings(
    const std::map<std::string, std::string>& env) {
  std::string record;
  try {
    record = rank0s("domino/settings", wire_record(env));
  } catch (const std::exception& e) {
    C10_THROW_ERROR(DistBackendError,
                    std::string("domino: init of ") + label() +
                        " failed while ranks agreed on DOMINO_* settings: " + e.what());
  }
  try {
    return adopt_wire_settings(env, record, rank_);
  } catch (const std::invalid_argument& e) {
    C10_THROW_ERROR(DistBackendError,
                    std::string("domino: init of ") + label() + " failed: " + e.what());
  }
}

topology::Router ProcessGroupDomino::agree_on_routing(const std::string& host_list) {
  topology::CostModel costs;
  // Rank 0 and one peer measure each link the router weighs; everyone adopts rank 0's figures.
  auto measure = [&](topology::LinkCost& cost, const domino_plugin_v1_t* plugin, int peer,
                     const char* what, const char* variable, bool by_collectives) {
    if (rank_ != 0 && rank_ != peer) return;
    try {
      cost = measure_link(plugin, peer, what, by_collectives);
    } catch (const std::exception& e) {
      log_line(LogLevel::kWarn, rank_,
               label() + ": could not measure the " + what + "-host link (" + e.what() +
                   "); the router keeps its default costs. Set " + variable +
                   " to this machine's figures.");
    }
  };
  if (settings_.cost_inter) {
    costs.inter = *settings_.cost_inter;
  } else if (!layout_.single_host()) {
    measure(costs.inter, inter_plugin_, layout_.host_ranks[1].front(), "inter", "DOMINO_COST_INTER",
            false);
  }
  // Only groups across hosts weigh in-host steps against the network; one host has one plan.
  if (settings_.cost_intra) {
    costs.intra = *settings_.cost_intra;
  } else if (!layout_.single_host() && layout_.host_ranks[0].size() > 1) {
    // The router prices in-host steps as collectives (single-copy reads), not as sends.
    measure(costs.intra, plugin_, layout_.host_ranks[0][1], "intra", "DOMINO_COST_INTRA", true);
  }
  auto encode = [](const topology::LinkCost& c) {
    return std::to_string(c.latency_us) + ";" + std::to_string(c.gbytes_per_s) + ";" + c.source;
  };
  // The plan settings are rank 0's already (agree_on_wire_settings); the measured costs are
  // rank 0's too, where nothing was configured.
  const std::string mine = encode(costs.intra) + ";" + encode(costs.inter);
  const std::string agreed = rank0s("domino/routing", mine);
  std::vector<std::string> fields;
  for (size_t start = 0;;) {
    const size_t end = agreed.find(';', start);
    fields.push_back(agreed.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  TORCH_CHECK(fields.size() == 6, "domino: init of ", label(), ": malformed routing record '",
              agreed, "' from rank 0 (mixed torch-domino versions?)");
  topology::RouterOptions options;
  if (settings_.plan == "flat") {
    // One communicator over the group: the intra-host transport on one host (name another with
    // DOMINO_INTRA_TRANSPORT), the inter-host one across hosts.
    options.forced_plan =
        layout_.single_host() ? topology::PlanKind::kFlatIntra : topology::PlanKind::kFlatInter;
  } else if (settings_.plan == "hierarchical") {
    options.forced_plan = topology::PlanKind::kHierarchical;
  } else if (settings_.plan == "leader") {
    options.forced_plan = topology::PlanKind::kLeader;
  }
  options.forced_inter_algorithm = settings_.inter_algorithm;
  costs.intra = {std::stod(fields[0]), std::stod(fields[1]), fields[2]};
  costs.inter = {std::stod(fields[3]), std::stod(fields[4]), fields[5]};
  log_line(LogLevel::kDebug, rank_, label() + ": host layout " + host_list);
  return topology::Router(layout_, costs, options);
}

const topology::HostTopology& ProcessGroupDomino::host() const {
  // One hwloc scan per process and file: every group of the process asks at init.
  static std::mutex mutex;
  static std::map<std::string, topology::HostTopology> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(settings_.topology_file);
  if (found == loaded.end()) {
    found =
        loaded
            .emplace(settings_.topology_file, topology::load_host_topology(settings_.topology_file))
            .first;
  }
  return found->second;
}

void ProcessGroupDomino::bind() {
  std::vector<int> allowed;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) allowed.push_back(cpu);
    }
  }
  try {
    const topology::HostTopology& topo = host();
    binding_ = topology::choose_binding(topo, layout_.local_rank[static_cast<size_t>(rank_)],
                                        layout_.local_size(rank_), allowed);
    // Rail alignment: with several NICs, UCX uses the one next to this rank's node, unless the
    // user chose (UCX's own UCX_NET_DEVICES wins). UCX reads it when it starts, once per process.
    if (!layout_.single_host() && topo.nics.size() > 1 && !binding_.nic.empty() &&
        std::getenv("UCX_NET_DEVICES") == nullptr &&
        std::filesystem::exists("/sys/class/net/" + binding_.nic)) {
      setenv("UCX_NET_DEVICES", binding_.nic.c_str(), 0);
    }
  } catch (const std::exception& e) {
    binding_ = topology::Binding{};
    binding_.cpus = allowed;
    log_line(LogLevel::kWarn, rank_,
             label() + ": no host topology (" + e.what() + "); progress threads stay unbound");
  }
}

bool ProcessGroupDomino::higher_priority_pending(int lane) const {
  for (int higher = 0; higher < lane; ++higher) {
    if (pending_[static_cast<size_t>(higher)].load(std::memory_order_relaxed) > 0) return true;
  }
  return false;
}

domino_comm_config_t ProcessGroupDomino::comm_config(const std::vector<int>& members,
                                                     const std::string& name,
                                                     const StoreBootstrap& bootstrap,
                                                     std::vector<int64_t>* global) const {
  domino_comm_config_t config{};
  config.rank = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    global->push_back(global_ranks_[static_cast<size_t>(members[i])]);
    if (members[i] == rank_) config.rank = static_cast<int32_t>(i);
  }
  config.size = static_cast<int32_t>(members.size());
  config.global_ranks = global->data();
  config.group_name = name.c_str();
  config.timeout_ms = timeout().count();
  config.bootstrap = bootstrap.table();
  return config;
}

RoutedComm& ProcessGroupDomino::communicator(int lane) {
  LaneComm& slot = comms_[static_cast<size_t>(lane)];
  if (slot.comm) return *slot.comm;
  const Priority priority = static_cast<Priority>(lane);
  if (lane > 0) pause_contexts_[static_cast<size_t>(lane)] = {this, lane};
  auto make = [&](const RoutedComm::Spec& spec) {
    const std::string scope = std::string("domino/") + priority_name(priority) + "/" +
                              (spec.name.empty() ? "" : spec.name + "/");
    slot.bootstraps.push_back(std::make_unique<StoreBootstrap>(store_, scope));
    const std::string name =
        group_name_ + (spec.name.empty() ? "" : "/" + spec.name) +
        (priority == Priority::kNormal ? "" : std::string(":") + priority_name(priority));
    std::vector<int64_t> members;
    domino_comm_config_t config =
        comm_config(spec.members, name, *slot.bootstraps.back(), &members);
    config.workspace_bytes = settings_.shm_bytes;
    config.chunk_bytes = settings_.chunk_bytes;
    if (spec.inter) {
      config.small_message_bytes = router_->inter_small_message_bytes();
      // Rank 0's choice (agreed with the router), so every rank runs the same algorithm.
      const std::string& forced = router_->options().forced_inter_algorithm;
      config.algorithm = forced.empty() ? nullptr : forced.c_str();
    } else {
      config.small_message_bytes = settings_.algorithm == IntraAlgorithm::kDirect ? kDirectOnlyBytes
                                   : settings_.algorithm == IntraAlgorithm::kReduceScatterAllGather
                                       ? kAlwaysChunked
                                       : 0;
      config.single_copy = settings_.single_copy ? 0 : -1;
    }
    if (lane > 0) {
      config.should_pause = [](void* context) -> int {
        auto* self = static_cast<std::pair<ProcessGroupDomino*, int>*>(context);
        return self->first->higher_priority_pending(self->second) ? 1 : 0;
      };
      config.pause_context = &pause_contexts_[static_cast<size_t>(lane)];
    }
    return std::make_unique<Communicator>(spec.inter ? inter_plugin_ : plugin_, config);
  };
  auto made = std::make_unique<RoutedComm>(*router_, rank_, make);
  // setTimeout may have run while the communicators were made; it sees them from here on.
  std::lock_guard<std::mutex> lock(timeout_mutex_);
  timeout_applies(made->set_timeout(timeout().count()));
  slot.comm = std::move(made);
  return *slot.comm;
}

std::string ProcessGroupDomino::label() const {
  return "group '" +
         (options_->group_name.empty() ? std::string("default") : options_->group_name) +
         "' (rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ")";
}

std::string ProcessGroupDomino::where(const char* op) const {
  return std::string("domino ") + op + " on " + label();
}

std::array<uint64_t, 3> ProcessGroupDomino::issued_per_lane() const {
  std::array<uint64_t, 3> counts{};
  for (size_t lane = 0; lane < counts.size(); ++lane) counts[lane] = issued_[lane].load();
  return counts;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::enqueue(
    const char* op, c10d::OpType type, std::vector<at::Tensor> outputs,
    std::function<void(Work&, RoutedComm&)> body, bool blocking, Route route,
    std::optional<c10::Device> device, bool host_only, int peer) {
  const int lane_index = route == Route::kCollective
                             ? static_cast<int>(current_priority().value_or(default_priority_))
                             : static_cast<int>(Priority::kNormal);
  ProgressLane* lane = route == Route::kSend   ? send_lane_.get()
                       : route == Route::kRecv ? recv_lane_.get()
                                               : lanes_[static_cast<size_t>(lane_index)].get();
  TORCH_CHECK(lane != nullptr, where(op), ": the process group was shut down");
  auto work = c10::make_intrusive<Work>(rank_, type, std::move(outputs));
  ++sequence_;
  std::atomic<int>* pending =
      route == Route::kCollective ? &pending_[static_cast<size_t>(lane_index)] : nullptr;
  std::optional<DeviceIssue> on_device;
  if (device) {
    work->set_device(*device, settings_.blocking_wait, timeout(), device_health_);
    // What the caller has queued so far on its stream must land before the transfer reads it.
    auto ready = std::make_shared<c10::Event>(device->type());
    ready->record(c10::impl::VirtualGuardImpl(device->type()).getStream(*device));
    // Each peer gets a stream of its own, so a send that waits for its receiver on the device
    // never holds up a transfer with another peer (rings of sends and receives would deadlock).
    const int stream_lane = route == Route::kCollective ? lane_index
                            : peer < 0                  ? kPeerLane + 2 * size_
                                       : kPeerLane + 2 * peer + (route == Route::kRecv);
    on_device = DeviceIssue{*device, std::move(ready), stream_lane, host_only, route, peer};
  }
  // A profiler running on the caller's thread sees the op where it really runs, on the lane.
  std::optional<ProfilerContext> profiler;
  if (at::hasCallbacks()) {
    profiler =
        ProfilerContext{at::get_record_function_tls_(), c10::ThreadLocalDebugInfo::current()};
  }
  auto job = [this, work, body = std::move(body), lane_index, pending, group_timeout = timeout(),
              on_device = std::move(on_device), profiler = std::move(profiler), op] {
    std::optional<ProfilerContextGuard> profiled;
    if (profiler) profiled.emplace(*profiler);
    // The lane writes raw results into the caller's tensors, as a transport would: autograd
    // (a leaf that requires grad, an inference tensor) has no say in it.
    at::AutoDispatchBelowADInplaceOrView raw;
    std::optional<at::RecordFunction> record;
    if (profiled) record_op(record, op, *work);
    try {
      if (on_device) {
        run_on_device(*work, body, lane_index, *on_device);  // completes it on its comm stream
      } else {
        body(*work, communicator(lane_index));
        work->complete();
      }
    } catch (const std::exception& e) {
      work->fail(job_error(e, group_timeout));
    }
    if (pending != nullptr) pending->fetch_sub(1);
  };
  if (pending != nullptr) {
    pending->fetch_add(1);
    issued_[static_cast<size_t>(lane_index)].fetch_add(1, std::memory_order_relaxed);
  }
  const uint64_t ticket = lane->submit(std::move(job), /*wake=*/!blocking);
  // The lane drains before it is destroyed, so a work still waiting always finds it alive.
  work->set_run_now([lane, ticket] { return lane->run_now(ticket); }, [lane] { lane->wake(); });
  HandleScope::record(work);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  const std::string at = where("allreduce");
  require_one("allreduce", tensors, at);
  if (tensors[0].is_sparse()) return allreduce_sparse(tensors, opts);
  const Reduction reduction = checked_reduction(opts.reduceOp, tensors[0], at);
  const auto device = device_of(at, {&tensors});
  const domino_redop_t op = reduction.op;
  if (reduction.premultiply) {
    // The scaled copy is made on the lane (on CUDA, on its comm stream), reduced, written back.
    at::Tensor user = tensors[0];
    return enqueue(
        "all_reduce", c10d::OpType::ALLREDUCE, tensors,
        [user, reduction](Work&, RoutedComm& comm) {
          reduce_premultiplied(reduction, {user}, /*write_back=*/true,
                               [&](domino_buffer_t& b) { comm.allreduce(b, b, reduction.op); });
        },
        is_blocking(opts), Route::kCollective, device, false);
  }
  auto staged = std::make_shared<StagedTensor>(tensors[0]);
  return enqueue(
      "all_reduce", c10d::OpType::ALLREDUCE, tensors,
      [staged, op](Work&, RoutedComm& comm) {
        domino_buffer_t buffer = staged->buffer();
        comm.allreduce(buffer, buffer, op);
        staged->publish();
      },
      is_blocking(opts), Route::kCollective, device, needs_host(op, tensors[0]));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  const std::string at = where("broadcast");
  require_one("broadcast", tensors, at);
  const bool root = opts.rootRank == rank_;
  auto staged = std::make_shared<StagedTensor>(tensors[0], /*copy_in=*/root);
  const int root_rank = static_cast<int>(opts.rootRank);
  const auto device = device_of(at, {&tensors});
  return enqueue(
      "broadcast", c10d::OpType::BROADCAST, tensors,
      [staged, root_rank](Work&, RoutedComm& comm) {
        domino_buffer_t buffer = staged->buffer();
        comm.broadcast(buffer, root_rank);
        staged->publish();
      },
      is_blocking(opts), Route::kCollective, device, false);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  const std::string at = where("reduce");
  require_one("reduce", tensors, at);
  const Reduction reduction = checked_reduction(opts.reduceOp, tensors[0], at);
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = root == rank_;
  const auto device = device_of(at, {&tensors});
  if (reduction.premultiply) {
    // Only the root's tensor changes; the others' inputs stay as they were.
    at::Tensor user = tensors[0];
    return enqueue(
        "reduce", c10d::OpType::REDUCE, tensors,
        [user, reduction, root, is_root](Work&, RoutedComm& comm) {
          reduce_premultiplied(reduction, {user}, /*write_back=*/is_root,
                               [&](domino_buffer_t& b) { comm.reduce(b, b, reduction.op, root); });
        },
        is_blocking(opts), Route::kCollective, device, false);
  }
  auto staged = std::make_shared<StagedTensor>(tensors[0]);
  const domino_redop_t op = reduction.op;
  return enqueue(
      "reduce", c10d::OpType::REDUCE, tensors,
      [staged, op, root, is_root](Work&, RoutedComm& comm) {
        domino_buffer_t buffer = staged->buffer();
        comm.reduce(buffer, buffer, op, root);
        if (is_root) staged->publish();
      },
      is_blocking(opts), Route::kCollective, device, needs_host(op, tensors[0]));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const std::string at = where("allgather");
  require_one("allgather", inputs, at);
  TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_), at,
              ": expected one list of ", size_, " output tensors");
  require_same(inputs[0], outputs[0], inputs[0].numel(), at, "output");
  auto in = std::make_shared<StagedTensor>(inputs[0]);
  auto out = std::make_shared<StagedList>(outputs[0], /*copy_in=*/false);
  const auto device = device_of(at, {&inputs, &outputs[0]});
  return enqueue(
      "all_gather", c10d::OpType::ALLGATHER, outputs[0],
      [in, out](Work&, RoutedComm& comm) {
        domino_buffer_t recv = out->buffer();
        comm.allgather(in->buffer(), recv);
        out->publish();
      },
      is_blocking(opts), Route::kCollective, device, false);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  const std::string at = where("all_gather_into_tensor");
  TORCH_CHECK(output.numel() == input.numel() * size_, at, ": output has ", output.numel(),
              " elements, expected input (", input.numel(), ") x ", size_, " ranks");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), at, ": output dtype ",
              output.scalar_type(), " differs from input dtype ", input.scalar_type());
  auto in = std::make_shared<StagedTensor>(input);
  auto out = std::make_shared<StagedTensor>(output, /*copy_in=*/false);
  const std::vector<at::Tensor> tensors_of_op{input, output};
  const auto device = device_of(at, {&tensors_of_op});
  return enqueue(
      "all_gather_into_tensor", c10d::OpType::_ALLGATHER_BASE, {output},
      [in, out](Work&, RoutedComm& comm) {
        domino_buffer_t recv = out->buffer();
        comm.allgather(in->buffer(), recv);
        out->publish();
      },
      is_blocking(opts), Route::kCollective, device, false);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const std::string at = where("gather");
  require_one("gather", inputs, at);
  const int root = static_cast<int>(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < size_, at, ": root ", root, " is not a rank of this group");
  std::shared_ptr<StagedList> out;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(size_), at,
                ": the root needs one list of ", size_, " output tensors");
    require_same(inputs[0], outputs[0], inputs[0].numel(), at, "output");
    out = std::make_shared<StagedList>(outputs[0], /*copy_in=*/false);
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(), at, ": only the root (rank ", root,
                ") may pass output tensors");
  }
  auto in = std::make_shared<StagedTensor>(inputs[0]);
  std::vector<at::Tensor> held = rank_ == root ? outputs[0] : std::vector<at::Tensor>{};
  const auto device = device_of(at, {&inputs, &held});
  return enqueue(
      "gather", c10d::OpType::GATHER, held,
      [in, out, root](Work&, RoutedComm& comm) {
        domino_buffer_t recv =
            out ? out->buffer() : domino_buffer_t{nullptr, 0, in->buffer().dtype, -1};
        comm.gather(in->buffer(), recv, root);
        if (out) out->publish();
      },
      is_blocking(opts), Route::kCollective, device, false);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const std::string at = where("scatter");
  require_one("scatter", outputs, at);
  const int root = static_cast<int>(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < size_, at, ": root ", root, " is not a rank of this group");
  std::shared_ptr<StagedList> in;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_), at,
                ": the root needs one list of ", size_, " input tensors");
    require_same(outputs[0], inputs[0], outputs[0].numel(), at, "input");
    in = std::make_shared<StagedList>(inputs[0], /*copy_in=*/true);
  } else {
    TORCH_CHECK(inputs.empty() || inputs[0].empty(), at, ": only the root (rank ", root,
                ") may pass input tensors");
  }
  auto out = std::make_shared<StagedTensor>(outputs[0], /*copy_in=*/false);
  const std::vector<at::Tensor> scattered = in ? inputs[0] : std::vector<at::Tensor>{};
  const auto device = device_of(at, {&outputs, &scattered});
  return enqueue(
      "scatter", c10d::OpType::SCATTER, outputs,
      [in, out, root](Work&, RoutedComm& comm) {
        domino_buffer_t recv = out->buffer();
        const domino_buffer_t send =
            in ? in->buffer() : domino_buffer_t{nullptr, 0, recv.dtype, -1};
        comm.scatter(send, recv, root);
        out->publish();
      },
      is_blocking(opts), Route::kCollective, device, false);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const std::string at = where("reduce_scatter");
  require_one("reduce_scatter", outputs, at);
  TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(size_), at,
              ": expected one list of ", size_, " input tensors");
  require_same(outputs[0], inputs[0], outputs[0].numel(), at, "input");
  const Reduction reduction = checked_reduction(opts.reduceOp, outputs[0], at);
  // A premultiplied list is staged on the lane, where its scaled copies are made.
  auto in = reduction.premultiply ? nullptr : std::make_shared<StagedList>(inputs[0], true);
  auto out = std::make_shared<StagedTensor>(outputs[0], /*copy_in=*/false);
  const auto device = device_of(at, {&outputs, &inputs[0]});
  const std::vector<at::Tensor> list = inputs[0];
  return enqueue(
      "reduce_scatter", c10d::OpType::REDUCE_SCATTER, outputs,
      [in, out, list, reduction](Work&, RoutedComm& comm) {
        std::shared_ptr<StagedList> source = in;
        if (!source) {
          source = std::make_shared<StagedList>(reduction.premultiplied(list), /*copy_in=*/true);
        }
        domino_buffer_t recv = out->buffer();
        comm.reduce_scatter(source->buffer(), recv, reduction.op);
        out->publish();
      },
      is_blocking(opts), Route::kCollective, device, needs_host(reduction.op, outputs[0]));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  const std::string at = where("reduce_scatter_tensor");
  TORCH_CHECK(input.numel() == output.numel() * size_, at, ": input has ", input.numel(),
              " elements, expected output (", output.numel(), ") x ", size_, " ranks");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), at, ": output dtype ",
              output.scalar_type(), " differs from input dtype ", input.scalar_type());
  const Reduction reduction = checked_reduction(opts.reduceOp, input, at);
  auto out = std::make_shared<StagedTensor>(output, /*copy_in=*/false);
  const std::vector<at::Tensor> tensors_of_op{input, output};
  const auto device = device_of(at, {&tensors_of_op});
  return enqueue(
      "reduce_scatter_tensor", c10d::OpType::_REDUCE_SCATTER_BASE, {output},
      [input, out, reduction](Work&, RoutedComm& comm) {
        StagedTensor in(reduction.premultiply ? reduction.premultiplied(input) : input);
        domino_buffer_t recv = out->buffer();
        comm.reduce_scatter(in.buffer(), recv, reduction.op);
        out->publish();
      },
      is_blocking(opts), Route::kCollective, device, needs_host(reduction.op, input));
}

namespace {
// Per-peer counts and offsets of an all-to-all, in the transport's units.
struct AlltoallLayout {
  std::vector<uint64_t> send_counts, send_offsets, recv_counts, recv_offsets;

  void scale(size_t units_per_element) {
    for (auto* v : {&send_counts, &send_offsets, &recv_counts, &recv_offsets}) {
      for (auto& x : *v) x *= units_per_element;
    }
  }
  void run(RoutedComm& comm, const domino_buffer_t& send, domino_buffer_t& recv) const {
    comm.alltoall(send, send_counts.data(), send_offsets.data(), recv, recv_counts.data(),
                  recv_offsets.data());
  }
};

// One peer per tensor of the list, laid end to end.
void list_layout(const std::vector<at::Tensor>& tensors, std::vector<uint64_t>* counts,
                 std::vector<uint64_t>* offsets) {
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    counts->push_back(static_cast<uint64_t>(t.numel()));
    offsets->push_back(offset);
    offset += static_cast<uint64_t>(t.numel());
  }
}

// Element counts and offsets per peer for a tensor split along dim 0 (equal splits when empty).
void split_layout(const at::Tensor& t, const std::vector<int64_t>& splits, int size,
                  const std::string& where, const char* what, std::vector<uint64_t>* counts,
                  std::vector<uint64_t>* offsets) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const int64_t row_elements = rows == 0 ? 0 : t.numel() / rows;
  std::vector<int64_t> rows_per_peer = splits;
  if (rows_per_peer.empty()) {
    TORCH_CHECK(rows % size == 0, where, ": ", what, " has ", rows, " rows, not divisible by ",
                size, " ranks; pass explicit split sizes");
    rows_per_peer.assign(static_cast<size_t>(size), rows / size);
  }
  TORCH_CHECK(rows_per_peer.size() == static_cast<size_t>(size), where, ": ", rows_per_peer.size(),
              " ", what, " split sizes for ", size, " ranks");
  int64_t sum = 0;
  for (int64_t r : rows_per_peer) {
    TORCH_CHECK(r >= 0, where, ": negative ", what, " split size ", r);
    counts->push_back(static_cast<uint64_t>(r * row_elements));
    offsets->push_back(static_cast<uint64_t>(sum * row_elements));
    sum += r;
  }
  TORCH_CHECK(sum == rows, where, ": ", what, " split sizes add up to ", sum,
              " rows but the tensor has ", rows);
}
}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
    std::vector<int64_t>& input_splits, const c10d::AllToAllOptions& opts) {
  const std::string at = where("all_to_all_single");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), at, ": output dtype ",
              output.scalar_type(), " differs from input dtype ", input.scalar_type());
  auto layout = std::make_shared<AlltoallLayout>();
  split_layout(input, input_splits, size_, at, "input", &layout->send_counts,
               &layout->send_offsets);
  split_layout(output, output_splits, size_, at, "output", &layout->recv_counts,
               &layout->recv_offsets);
  layout->scale(transport_units_per_element(input));
  // A separate input buffer even when the caller aliases them: peers read it while we write.
  auto in = std::make_shared<StagedTensor>(input.is_same(output) ? input.clone() : input);
  auto out = std::make_shared<StagedTensor>(output, /*copy_in=*/false);
  const std::vector<at::Tensor> tensors_of_op{input, output};
  const auto device = device_of(at, {&tensors_of_op});
  return enqueue(
      "all_to_all_single", c10d::OpType::ALLTOALL_BASE, {output},
      [in, out, layout](Work&, RoutedComm& comm) {
        domino_buffer_t recv = out->buffer();
        layout->run(comm, in->buffer(), recv);
        out->publish();
      },
      is_blocking(opts), Route::kCollective, device, false);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions& opts) {
  const std::string at = where("all_to_all");
  TORCH_CHECK(
      outputs.size() == static_cast<size_t>(size_) && inputs.size() == static_cast<size_t>(size_),
      at, ": expected ", size_, " input and output tensors, got ", inputs.size(), " and ",
      outputs.size());
  require_same(inputs[0], inputs, -1, at, "input");
  require_same(inputs[0], outputs, -1, at, "output");
  auto layout = std::make_shared<AlltoallLayout>();
  list_layout(inputs, &layout->send_counts, &layout->send_offsets);
  list_layout(outputs, &layout->recv_counts, &layout->recv_offsets);
  layout->scale(transport_units_per_element(inputs[0]));
  auto in = std::make_shared<StagedList>(inputs, /*copy_in=*/true);
  auto out = std::make_shared<StagedList>(outputs, /*copy_in=*/false);
  const auto device = device_of(at, {&inputs, &outputs});
  return enqueue(
      "all_to_all", c10d::OpType::ALLTOALL, outputs,
      [in, out, layout](Work&, RoutedComm& comm) {
        domino_buffer_t recv = out->buffer();
        layout->run(comm, in->buffer(), recv);
        out->publish();
      },
      is_blocking(opts), Route::kCollective, device, false);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::send(std::vector<at::Tensor>& tensors,
                                                        int dst_rank, int tag) {
  const std::string at = where("send");
  require_one("send", tensors, at);
  TORCH_CHECK(dst_rank >= 0 && dst_rank < size_ && dst_rank != rank_, at, ": destination ",
              dst_rank, " is not another rank of this group of ", size_);
  auto staged = std::make_shared<StagedTensor>(tensors[0]);
  const auto device = device_of(at, {&tensors});
  return enqueue(
      "send", c10d::OpType::SEND, tensors,
      [this, staged, dst_rank, tag, device](Work&, RoutedComm& comm) {
        const DeviceSession* session = DeviceSession::current();
        if (session != nullptr && !session->staged) {
          std::unique_lock<std::mutex> hold;
          peer_communicator(dst_rank, /*sending=*/true, *device, session->stream, &hold)
              .send(staged->buffer(), rank_ < dst_rank ? 1 : 0, tag);
          return;
        }
        comm.send(staged->buffer(), dst_rank, tag);
      },
      /*blocking=*/false, Route::kSend, device, /*host_only=*/false, dst_rank);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::recv(std::vector<at::Tensor>& tensors,
                                                        int src_rank, int tag) {
  const std::string at = where("recv");
  require_one("recv", tensors, at);
  TORCH_CHECK(src_rank >= 0 && src_rank < size_ && src_rank != rank_, at, ": source ", src_rank,
              " is not another rank of this group of ", size_);
  auto staged = std::make_shared<StagedTensor>(tensors[0], /*copy_in=*/false);
  const auto device = device_of(at, {&tensors});
  return enqueue(
      "recv", c10d::OpType::RECV, tensors,
      [this, staged, src_rank, tag, device](Work& work, RoutedComm& comm) {
        domino_buffer_t buffer = staged->buffer();
        const DeviceSession* session = DeviceSession::current();
        if (session != nullptr && !session->staged) {
          std::unique_lock<std::mutex> hold;
          peer_communicator(src_rank, /*sending=*/false, *device, session->stream, &hold)
              .recv(buffer, rank_ < src_rank ? 1 : 0, tag);
          work.set_source_rank(src_rank);
        } else {
          work.set_source_rank(comm.recv(buffer, src_rank, tag));
        }
        staged->publish();
      },
      /*blocking=*/false, Route::kRecv, device, /*host_only=*/false, src_rank);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                 int tag) {
  const std::string at = where("recv from any source");
  require_one("recv", tensors, at);
  TORCH_CHECK(size_ > 1, at, ": a group of one rank has nobody to receive from");
  auto staged = std::make_shared<StagedTensor>(tensors[0], /*copy_in=*/false);
  const auto device = device_of(at, {&tensors});
  // The sender cannot know whom NCCL would pair it with: CUDA any-source receives need every
  // CUDA send of the group to go through host memory.
  TORCH_CHECK(
      !device || device_plugin_ == nullptr || settings_.gpu_transport == GpuTransport::kStaged, at,
      ": receiving from any source into a ", tensors[0].device(),
      " tensor is not possible over NCCL; name the source rank, receive into a CPU "
      "tensor, or set DOMINO_GPU_TRANSPORT=staged");
  return enqueue(
      "recv", c10d::OpType::RECVANYSOURCE, tensors,
      [staged, tag](Work& work, RoutedComm& comm) {
        domino_buffer_t buffer = staged->buffer();
        work.set_source_rank(comm.recv(buffer, -1, tag));
        staged->publish();
      },
      /*blocking=*/false, Route::kRecv, device, /*host_only=*/true);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::barrier(const c10d::BarrierOptions& opts) {
  return enqueue(
      "barrier", c10d::OpType::BARRIER, {}, [this](Work&, RoutedComm& comm) { comm.barrier(); },
      is_blocking(opts));
}

void ProcessGroupDomino::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  const std::chrono::milliseconds budget =
      opts.timeout == c10d::kUnsetTimeout ? timeout() : opts.timeout;
  // The others wait for rank 0's verdict as long as rank 0 may take, and the group timeout at
  // least, as Gloo's do.
  monitored_barrier(*store_,
                    MonitoredBarrierCall{rank_, size_, monitored_barriers_++, budget,
                                         std::max(budget, timeout()), waitAllRanks, label()});
}

void ProcessGroupDomino::setTimeout(std::chrono::milliseconds timeout) {
  TORCH_CHECK_VALUE(timeout.count() > 0, where("set_timeout"), ": a timeout of ", timeout.count(),
                    " ms; it must be positive");
  std::lock_guard<std::mutex> lock(timeout_mutex_);
  timeout_.store(timeout);
  for (LaneComm& lane : comms_) {
    if (lane.comm) timeout_applies(lane.comm->set_timeout(timeout.count()));
  }
  std::lock_guard<std::mutex> device_lock(device_mutex_);
  for (Communicator* comm : device_communicators_) {
    timeout_applies(comm->set_timeout(timeout.count()));
  }
}

void ProcessGroupDomino::timeout_applies(bool applied) {
  if (applied || timeout_ignored_warned_.exchange(true)) return;
  log_line(LogLevel::kWarn, rank_,
           label() +
               ": a transport of this group has no comm_set_timeout (plugin ABI 4); its "
               "communicators keep the timeout they were created with");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDomino::allreduce_sparse(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) {
  const std::string at = where("all_reduce (sparse)");
  require_one("allreduce", tensors, at);
  TORCH_CHECK(tensors[0].is_sparse(), at, ": the tensor has layout ", tensors[0].layout(),
              "; allreduce_sparse takes sparse COO tensors");
  TORCH_CHECK(opts.reduceOp == c10d::ReduceOp::SUM, at, ": sparse tensors reduce with SUM only, ",
              "not reduce op ", static_cast<int>(opts.reduceOp.op_), " (as with Gloo)");
  TORCH_CHECK(tensors[0].is_cpu(), at, ": sparse tensors on ", tensors[0].device(),
              " are not supported; all-reduce a CPU copy (tensor.cpu()) and move the result back");
  at::Tensor tensor = tensors[0];
  return enqueue(
      "all_reduce_sparse", c10d::OpType::ALLREDUCE, tensors,
      [this, tensor, at](Work&, RoutedComm& comm) mutable {
        allreduce_sparse_sum(comm, tensor, rank_, size_, at);
      },
      is_blocking(opts));
}

}  // namespace domino
