#include "ProcessGroupDominoImpl.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <sched.h>

#include <torch/version.h>
#include <cstdlib>
#include <map>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "DeviceCollectives.h"
#include "FlightRecorder.h"
#include "HandleScope.h"
#include "IncarnationScope.h"
#include "MonitoredBarrier.h"
#include "OpChecks.h"
#include "OpIssue.h"
#include "PriorityGuard.h"
#include "SparseAllreduce.h"
#include "StoreBootstrap.h"
#include "TensorBuffer.h"
#include "Work.h"
#include "config/Log.h"
#include "config/WireSettings.h"
#include "engine/ProgressLane.h"
#include "engine/RoutedComm.h"
#include "engine/TransportProbe.h"
#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"
#include "plugins/common/TransportError.h"
#include "plugins/registry/Communicator.h"
#include "plugins/registry/PluginRegistry.h"

namespace domino {

namespace {
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
// `which` names the op's place in its group's sequence, as the Flight Recorder numbers it.
std::string job_message(const std::exception& e, std::chrono::milliseconds timeout,
                        const std::string& which) {
  if (const auto* checked = dynamic_cast<const c10::Error*>(&e)) {
    return checked->what_without_backtrace() + which;
  }
  const auto* transport = dynamic_cast<const TransportError*>(&e);
  if (transport != nullptr && transport->status() == DOMINO_ERR_TIMEOUT) {
    return "domino: Timed out after " + std::to_string(timeout.count()) +
           " ms (the group's timeout): " + e.what() + which;
  }
  return std::string("domino: ") + e.what() + which;
}
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
void record_op(std::optional<at::RecordFunction>& record, const char* op,
               const std::vector<at::Tensor>& inputs) {
  record.emplace(at::RecordScope::USER_SCOPE);
  if (!record->isActive()) return;
  // Communication, as Gloo's and NCCL's events are: the profiler lists it apart from the
  // caller's synchronous ops.
  record->_setAsync();
  const std::string title = std::string("domino:") + op;
  std::vector<c10::IValue> tensors;
  for (const at::Tensor& t : inputs) tensors.emplace_back(t);
  record->before(title.c_str(), c10::ArrayRef<const c10::IValue>(tensors.data(), tensors.size()));
}
}  // namespace

ProcessGroupDomino::ProcessGroupDomino(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                       int size, c10::intrusive_ptr<Options> options)
    : c10d::Backend(rank, size),
      impl_(std::make_unique<Impl>(*this, store, rank, size, std::move(options))) {}

ProcessGroupDomino::~ProcessGroupDomino() = default;

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupDomino::getBackendOptions() {
  return impl_->options_;
}

const char* ProcessGroupDomino::intra_transport() const {
  return impl_->intra_transport();
}

const char* ProcessGroupDomino::inter_transport() const {
  return impl_->inter_transport();
}

Priority ProcessGroupDomino::default_priority() const {
  return impl_->default_priority_;
}

std::array<uint64_t, 3> ProcessGroupDomino::issued_per_lane() const {
  return impl_->lanes_.issued();
}

uint64_t ProcessGroupDomino::getSequenceNumberForGroup() {
  return impl_->sequence_.load();
}

void ProcessGroupDomino::setTimeout(std::chrono::milliseconds timeout) {
  impl_->set_timeout(timeout);
}

void ProcessGroupDomino::shutdown() {
  impl_->shutdown();
}

bool ProcessGroupDomino::supportsShrinking() const {
  return true;
}

const ProcessGroupDomino::Impl& ProcessGroupDomino::impl() const {
  return *impl_;
}

ProcessGroupDomino::Impl::Impl(ProcessGroupDomino& backend,
                               const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                               c10::intrusive_ptr<Options> options)
    : backend_(backend), rank_(rank), size_(size), options_(std::move(options)) {
  timeout_.store(options_->timeout);
  ParsedSettings parsed;
  std::vector<std::string> differences;
  try {
    const std::map<std::string, std::string> env = domino_environment();
    parse_settings(env);  // this rank's own mistakes are told here, before anyone waits for it
    // Every key this group writes lives under its own incarnation's scope, so nothing a dead
    // earlier incarnation left in a reused store is read.
    store_ = c10::make_intrusive<c10d::PrefixStore>(
        incarnation_scope(*store, rank, size,
                          std::chrono::duration_cast<std::chrono::milliseconds>(options_->timeout),
                          label()) +
            "/",
        store);
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
  try {
    use_reduction_variant(settings_.reduction_kernels);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, "domino: init of ", label(), " on rank ", rank,
                      " failed: DOMINO_REDUCTION_KERNELS: ", e.what());
  }
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
    layout_ = exchange_layout();
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
    const domino_plugin_t* nccl = registry_->find("nccl");
    bind();  // before anything starts UCX, which reads UCX_NET_DEVICES once
    choose_socket_interfaces();
    router_ = std::make_unique<topology::Router>(agree_on_routing(hosts));
    device_ = std::make_unique<DeviceCollectives>(DeviceCollectives::Group{
        .store = store_,
        .rank = rank_,
        .size = size_,
        .name = group_name_,
        .settings = settings_,
        .layout = layout_,
        .router = *router_,
        .nccl = nccl,
        .nccl_runs_table = nccl != nullptr && runs_algorithm_table(nccl),
        .intra_transport = plugin_->name,
        .inter_transport = inter_plugin_->name,
        .timeout = timeout_,
        .label = [this] { return label(); },
        .comm_config =
            [this](const std::vector<int>& members, const std::string& name,
                   const StoreBootstrap& bootstrap, std::vector<int64_t>* global) {
              return comm_config(members, name, bootstrap, global);
            },
        .timeout_applies = [this](bool applied) { timeout_applies(applied); },
        .host_communicator = [this](int lane) -> RoutedComm& { return communicator(lane); },
        .inherited = std::move(options_->inherited_device_comms)});
    // The normal lane's communicator also carries point-to-point traffic; make it now so that
    // set-up errors surface at init.
    communicator(static_cast<int>(Priority::kNormal));
  } catch (const TransportError& e) {
    C10_THROW_ERROR(DistBackendError,
                    std::string("domino: init of ") + label() + " failed: " + e.what());
  }
  try {
    lanes_.start(binding_.cpus);
  } catch (...) {
    // No destructor runs for a half-built group: the communicators, which point at the lane
    // set's pause contexts, go first.
    lanes_.stop();
    for (auto& lane : comms_) lane.comm.reset();
    throw;
  }
  // Other ranks' failures reach this one through the job's store (a no-op when not recording).
  FlightRecorder::get().watch(this, store_, global_ranks_[static_cast<size_t>(rank_)],
                              settings_.fr_dump_wait);
  log_line(LogLevel::kInfo, rank,
           label() + " ready: " + std::to_string(layout_.hosts.size()) + " host(s) (" + hosts +
               "), intra-host transport " + plugin_->name + ", inter-host transport " +
               inter_transport() + ", default lane " + priority_name(default_priority_));
}

ProcessGroupDomino::Impl::~Impl() {
  shutdown();
  FlightRecorder::get().unwatch(this);
}

void ProcessGroupDomino::Impl::shutdown() {
  lanes_.stop();
  device_->stop_watchdog();  // before the communicators it may abort
  {
    std::lock_guard<std::mutex> lock(timeout_mutex_);  // a setTimeout may be walking them
    for (auto& lane : comms_) {
      lane.comm.reset();
      lane.bootstraps.clear();
    }
  }
  device_->destroy_communicators();
}

const char* ProcessGroupDomino::Impl::intra_transport() const {
  return plugin_ != nullptr ? plugin_->name : "none";
}

const char* ProcessGroupDomino::Impl::inter_transport() const {
  return router_ && router_->uses_inter() && inter_plugin_ != nullptr ? inter_plugin_->name
                                                                      : "none";
}

domino_comm_config_t ProcessGroupDomino::Impl::comm_config(const std::vector<int>& members,
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
  config.socket_interfaces = socket_interfaces_.c_str();
  return config;
}

RoutedComm& ProcessGroupDomino::Impl::communicator(int lane) {
  LaneComm& slot = comms_[static_cast<size_t>(lane)];
  if (slot.comm) return *slot.comm;
  const Priority priority = static_cast<Priority>(lane);
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
      // Which path each call takes is the router's choice, handed down with the call.
      config.single_copy = settings_.single_copy ? 0 : -1;
    }
    lanes_.pause_for_higher(lane, config);
    return std::make_unique<Communicator>(spec.inter ? inter_plugin_ : plugin_, config);
  };
  // The hierarchical all-reduce's rail thread runs where the lane's thread does, as nice.
  const ThreadPlacement placement = LaneSet::placement(lane, binding_.cpus);
  auto made = std::make_unique<RoutedComm>(*router_, rank_, make, nullptr, placement);
  // setTimeout may have run while the communicators were made; it sees them from here on.
  std::lock_guard<std::mutex> lock(timeout_mutex_);
  timeout_applies(made->set_timeout(timeout().count()));
  slot.comm = std::move(made);
  return *slot.comm;
}

std::string ProcessGroupDomino::Impl::label() const {
  return where("").group_label();
}

OpSite ProcessGroupDomino::Impl::where(const char* op) const {
  return {op, &options_->group_name, rank_, size_};
}

size_t ProcessGroupDomino::Impl::flight_group() {
  // c10d names the group after construction, before its first op: registered then.
  const int64_t known = flight_group_.load(std::memory_order_acquire);
  if (known >= 0) return static_cast<size_t>(known);
  std::lock_guard<std::mutex> lock(flight_group_mutex_);
  if (flight_group_.load() < 0) {
    const std::string& name = backend_.getGroupUid();
    flight_group_.store(static_cast<int64_t>(FlightRecorder::get().add_group(
        name.empty() ? group_name_ : name, backend_.getGroupDesc(), global_ranks_)));
  }
  return static_cast<size_t>(flight_group_.load());
}

bool ProcessGroupDomino::Impl::has_device_transport() const {
  return device_->has_nccl();
}

const char* ProcessGroupDomino::Impl::device_path() const {
  return device_->device_path();
}

std::vector<CommStream> ProcessGroupDomino::Impl::comm_streams() const {
  return device_->comm_streams();
}

ProcessGroupDomino::Impl::IssuedOp ProcessGroupDomino::Impl::issue(OpSpec& spec) {
  const char* op = spec.op;
  const Route route = spec.route;
  const int lane_index = route == Route::kCollective
                             ? static_cast<int>(current_priority().value_or(default_priority_))
                             : static_cast<int>(Priority::kNormal);
  ProgressLane* lane = lanes_.lane(route, lane_index);
  TORCH_CHECK(lane != nullptr, where(op), ": the process group was shut down");
  if (aborted_.load()) C10_THROW_ERROR(DistBackendError, aborted_message(op));
  const bool counted = route == Route::kCollective;
  const uint64_t op_id = ++sequence_;
  const uint64_t collective_seq = counted ? ++collective_seq_ : collective_seq_.load();
  const uint64_t p2p_seq = counted ? p2p_seq_.load() : ++p2p_seq_;
  OpTensors& tensors = spec.tensors;
  const std::vector<at::Tensor>& inputs = tensors.inputs();
  FlightRecorder& recorder = FlightRecorder::get();
  uint64_t recorded = 0;
  if (recorder.enabled()) {
    const FlightOpName recorded_as = flight_recorder_op_name(op);
    recorded = recorder.record({.group = flight_group(),
                                .collective_seq = collective_seq,
                                .p2p_seq = p2p_seq,
                                .op_id = op_id,
                                .name = recorded_as.name,
                                .shapes = recorded_as.shapes,
                                .self = rank_,
                                .peer = spec.peer,
                                .p2p = !counted,
                                .timeout = timeout()},
                               inputs, tensors.outputs);
  }
  // A profiler running on the caller's thread sees the op where it really runs, on the lane.
  // Asked for the scope our events use: the per-op snapshot the dispatcher itself takes, where
  // at::hasCallbacks() walks every registered callback on each op.
  std::optional<ProfilerContext> profiler;
  std::vector<at::Tensor> profiled_inputs;
  if (at::getStepCallbacksUnlessEmpty(at::RecordScope::USER_SCOPE)) {
    profiler =
        ProfilerContext{at::get_record_function_tls_(), c10::ThreadLocalDebugInfo::current()};
    profiled_inputs = inputs;
  }
  // An op that may run at issue takes the thread's spare Work, which it keeps if queued instead.
  const bool may_run_here = spec.blocking && !spec.device && !profiler;
  c10::intrusive_ptr<Work> work =
      may_run_here ? work_at_issue(spec.type, std::move(tensors.outputs))
                   : c10::make_intrusive<Work>(rank_, spec.type, std::move(tensors.outputs));
  std::optional<DeviceCollectives::Issue> on_device;
  if (spec.device) {
    on_device = device_->issue(*work, *spec.device, route, lane_index, spec.peer, spec.host_only);
  }
  if (counted) lanes_.queued(lane_index);
  return {.op = op,
          .work = std::move(work),
          .lane = lane,
          .lane_index = lane_index,
          .counted = counted,
          .blocking = spec.blocking,
          .number = counted ? collective_seq : p2p_seq,
          .recorded = recorded,
          .timeout = timeout(),
          .on_device = std::move(on_device),
          .profiler = std::move(profiler),
          .inputs = std::move(profiled_inputs),
          .may_run_here = may_run_here};
}

namespace {
// Only its own thread ever touches it, and never while one of its ops uses it.
c10::intrusive_ptr<Work>& spare_work() {
  thread_local c10::intrusive_ptr<Work> spare;
  return spare;
}
}  // namespace

c10::intrusive_ptr<Work> ProcessGroupDomino::Impl::work_at_issue(c10d::OpType type,
                                                                 std::vector<at::Tensor> outputs) {
  c10::intrusive_ptr<Work> work = std::move(spare_work());
  if (work && work->rank() == rank_) {
    work->reuse_at_issue(type, std::move(outputs));
    return work;
  }
  return c10::make_intrusive<Work>(rank_, type, std::move(outputs));
}

void ProcessGroupDomino::Impl::keep_spare(c10::intrusive_ptr<Work> work) {
  if (work.use_count() != 1 || work.weak_use_count() != 1) return;  // held on this thread alone
  work->retire_at_issue();
  spare_work() = std::move(work);
}

void ProcessGroupDomino::Impl::run_issued(IssuedOp& issued,
                                          c10::function_ref<void(Work&, RoutedComm&)> body) {
  Work& work = *issued.work;
  const char* op = issued.op;
  std::optional<ProfilerContextGuard> profiled;
  if (issued.profiler) profiled.emplace(*issued.profiler);
  // The lane writes raw results into the caller's tensors, as a transport would: autograd
  // (a leaf that requires grad, an inference tensor) has no say in it.
  at::AutoDispatchBelowADInplaceOrView raw;
  std::optional<at::RecordFunction> record;
  if (profiled) record_op(record, op, issued.inputs);
  FlightRecorder& recorder = FlightRecorder::get();
  recorder.started(issued.recorded);
  std::optional<std::string> failure;
  try {
    // Queued before an abort, run after it: fails at once instead of making communicators.
    if (aborted_.load()) throw std::runtime_error(aborted_message(op));
    if (issued.on_device) {
      device_->run(work, body, issued.lane_index, *issued.on_device);  // completes on its stream
      recorder.completed(issued.recorded);
    } else {
      body(work, communicator(issued.lane_index));
      // Before the waiter is released: a dump taken right after wait() sees it completed.
      recorder.completed(issued.recorded);
      if (issued.at_issue) {
        work.complete_at_issue();
      } else {
        work.complete();
      }
    }
  } catch (const std::exception& e) {
    // The op's place in its group's sequence, as the Flight Recorder numbers it.
    const std::string number = std::to_string(issued.number);
    const std::string which = issued.counted
                                  ? " [collective #" + number + " of " + label() +
                                        ", the Flight Recorder's collective_seq_id]"
                                  : " [point-to-point op #" + number + " of " + label() + "]";
    failure = job_message(e, issued.timeout, which);
    recorder.retired(issued.recorded);
  }
  if (failure) {
    // Before the error reaches the waiter, who may exit at once: every rank's dump on disk
    // first (a bounded wait, and only while recording).
    recorder.on_failure(global_ranks_[static_cast<size_t>(rank_)], global_ranks_, *failure,
                        settings_.fr_dump_wait);
    work.fail(as_backend_error(*failure));
  }
  if (issued.counted) lanes_.finished(issued.lane_index);
}

void ProcessGroupDomino::Impl::submit_issued(IssuedOp issued,
                                             std::function<void(Work&, RoutedComm&)> body) {
  ProgressLane* lane = issued.lane;
  const bool blocking = issued.blocking;
  Work* work = issued.work.get();
  const uint64_t ticket =
      lane->submit([this, issued = std::move(issued),
                    body = std::move(body)]() mutable { run_issued(issued, body); },
                   /*wake=*/!blocking);
  // The lane drains before it is destroyed, so a work still waiting always finds it alive.
  work->set_run_now([lane, ticket] { return lane->run_now(ticket); }, [lane] { lane->wake(); });
}

// The CUDA watchdog keeps the timeout it started with.
void ProcessGroupDomino::Impl::set_timeout(std::chrono::milliseconds timeout) {
  TORCH_CHECK_VALUE(timeout.count() > 0, where("set_timeout"), ": a timeout of ", timeout.count(),
                    " ms; it must be positive");
  std::lock_guard<std::mutex> lock(timeout_mutex_);
  timeout_.store(timeout);
  for (LaneComm& lane : comms_) {
    if (lane.comm) timeout_applies(lane.comm->set_timeout(timeout.count()));
  }
  device_->set_timeout(timeout);
}

void ProcessGroupDomino::Impl::timeout_applies(bool applied) {
  if (applied || timeout_ignored_warned_.exchange(true)) return;
  log_line(LogLevel::kWarn, rank_,
           label() +
               ": a transport of this group has no comm_set_timeout (plugin ABI 4); its "
               "communicators keep the timeout they were created with");
}

}  // namespace domino
