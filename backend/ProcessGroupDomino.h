// The "domino" c10d backend: every collective becomes a Work at once and runs on the group's
// progress lane over the transport the settings choose.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <c10/core/Device.h>
#include <c10/util/FunctionRef.h>
#include <torch/version.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "CommStream.h"
#include "OpSite.h"
#include "Work.h"
#include "config/Settings.h"
#include "domino/plugin.h"
#include "engine/LaneSet.h"
#include "topology/Binding.h"
#include "topology/GroupLayout.h"
#include "topology/HostTopology.h"
#include "topology/Router.h"
#include "topology/RoutingReport.h"

namespace domino {

struct AdoptedEnvironment;
class DeviceCollectives;
struct InheritedDeviceComms;
class PluginRegistry;
class RoutedComm;
class StoreBootstrap;
class Work;

class ProcessGroupDomino : public c10d::Backend {
 public:
  struct Options : public c10d::Backend::Options {
    explicit Options(std::chrono::milliseconds timeout = kBackendDefaultTimeout)
        : c10d::Backend::Options("domino", timeout) {}
    // The group's default lane ("high" | "normal" | "low"); empty: DOMINO_PRIORITY or normal.
    std::string priority;
    // shrink() only: the parent's NCCL communicators, shrunk for this group (taken at creation).
    std::shared_ptr<InheritedDeviceComms> inherited_device_comms;
    static c10::intrusive_ptr<Options> create(
        std::chrono::milliseconds timeout = kBackendDefaultTimeout) {
      return c10::make_intrusive<Options>(timeout);
    }
  };

  ProcessGroupDomino(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     c10::intrusive_ptr<Options> options = Options::create());
  ~ProcessGroupDomino() override;

  const std::string getBackendName() const override { return "domino"; }
  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override { return options_; }
  const Settings& settings() const { return settings_; }
  // The DOMINO_* settings every rank of the group took from rank 0 (unset ones absent).
  const std::map<std::string, std::string>& wire_settings() const { return wire_settings_; }
  // Where this group's ranks sit and what this host looks like, for torch_domino.topology().
  const topology::GroupLayout& layout() const { return layout_; }
  const topology::HostTopology& host() const;
  const char* intra_transport() const;
  // Where this rank's communication runs: NUMA node, progress-thread CPUs, NIC.
  const topology::Binding& binding() const { return binding_; }
  // UCX's network devices as UCX reads them (the user's UCX_NET_DEVICES, or what this rank hands
  // down: its socket interfaces and RDMA ports; "" when UCX chooses), and the rule that decided.
  const std::string& ucx_net_devices() const { return ucx_net_devices_; }
  const std::string& network_rule() const { return network_rule_; }
  // The transport between hosts ("none" for a one-host group that never needs it).
  const char* inter_transport() const;
  // How collectives are planned for this group (router inputs agreed with rank 0).
  const topology::Router& router() const { return *router_; }
  // The plan every op takes at each of sizes, with its steps and the alternatives weighed
  // (torch_domino.topology()).
  std::vector<topology::RoutingRow> routing_report(const std::vector<size_t>& sizes) const;
  Priority default_priority() const { return default_priority_; }

  c10::intrusive_ptr<c10d::Work> allreduce(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  // Sparse COO tensors, SUM only (allreduce forwards them here, as Gloo does).
  c10::intrusive_ptr<c10d::Work> allreduce_sparse(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> broadcast(
      std::vector<at::Tensor>& tensors,
      const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(
      std::vector<at::Tensor>& tensors,
      const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(
      std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputTensorLists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(
      std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(
      at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
      std::vector<int64_t>& input_splits,
      const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(
      const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;
  // The group's timeout for operations that start from now on, on every transport it uses
  // (the CUDA watchdog keeps the one it started with).
  void setTimeout(std::chrono::milliseconds timeout) override;
  // Gloo's semantics: rank 0 names the ranks that did not arrive within opts.timeout (all of
  // them with waitAllRanks), the others raise once rank 0 reports a failure.
  void monitoredBarrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions(),
                        bool waitAllRanks = false) override;

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 14)
  // torch 2.14's canonical names; the deprecated ones above stay overridden for older callers.
  c10::intrusive_ptr<c10d::Work> all_gather_single(
      at::Tensor& output, at::Tensor& input,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override {
    return _allgather_base(output, input, opts);
  }
  c10::intrusive_ptr<c10d::Work> all_gather_single_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override {
    return allgather_into_tensor_coalesced(outputs, inputs, opts);
  }
  c10::intrusive_ptr<c10d::Work> reduce_scatter_single(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override {
    return _reduce_scatter_base(output, input, opts);
  }
  c10::intrusive_ptr<c10d::Work> reduce_scatter_single_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override {
    return reduce_scatter_tensor_coalesced(outputs, inputs, opts);
  }
  c10::intrusive_ptr<c10d::Work> all_to_all_single(
      at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
      std::vector<int64_t>& input_splits,
      const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override {
    return alltoall_base(output, input, output_splits, input_splits, opts);
  }
  c10::intrusive_ptr<c10d::Work> gather_single(
      at::Tensor& output, at::Tensor& input,
      const c10d::GatherOptions& opts = c10d::GatherOptions()) override {
    return gather_flat(output, input, opts);
  }
  c10::intrusive_ptr<c10d::Work> gather_into_tensor(
      at::Tensor& output, at::Tensor& input,
      const c10d::GatherOptions& opts = c10d::GatherOptions()) override {
    return gather_flat(output, input, opts);
  }
#endif
  uint64_t getSequenceNumberForGroup() override {
    return sequence_.load();
  }
  void shutdown() override;
  // c10d's abort(): from any thread, ends the group's work in flight on every transport (on
  // one host every rank's work, within about 100 ms) and fails every later op, naming it.
  void abort() override;
  // dist.shrink_group: the group without ranks_to_exclude (group ranks), built by the ranks that
  // remain, in order, over the same store; SHRINK_ABORT (c10d's 0x01) aborts this group first.
  // The ranks left out, alive or dead, take no part, and find this group ended if they call it.
  bool supportsShrinking() const override {
    return true;
  }
  c10::intrusive_ptr<c10d::Backend> shrink(
      const std::vector<int64_t>& ranks_to_exclude, int shrink_flags = 0,
      const c10::intrusive_ptr<c10d::Backend::Options>& opts_override = nullptr) override;

  // Collectives issued so far on each lane, indexed by Priority (observability and tests).
  std::array<uint64_t, 3> issued_per_lane() const;

  // How this group's CUDA tensors travel: "nccl", "staged" (through host memory over the CPU
  // transports), or "undecided" before its first CUDA collective.
  const char* device_path() const;
  // Whether this build can move CUDA tensors over NCCL at all.
  bool has_device_transport() const;
  // The comm streams made so far, one per lane and device.
  std::vector<CommStream> comm_streams() const;

 private:
  static constexpr int kLanes = LaneSet::kPriorities;

  std::string label() const;
  // This group's index in the Flight Recorder, registered under c10d's name for it.
  size_t flight_group();
  std::chrono::milliseconds timeout() const {
    return timeout_.load();
  }
  // Warns once when a communicator could not take a new timeout (applied is false).
  void timeout_applies(bool applied);
  // Gathers every rank's input into the root's flat output (gather_single).
  c10::intrusive_ptr<c10d::Work> gather_flat(at::Tensor& output, at::Tensor& input,
                                             const c10d::GatherOptions& opts);
  // The op on this group, for a message (formatted only when one is made).
  OpSite where(const char* op) const;
  std::string aborted_message(const char* op) const;
  // An op's tensors: what its Work holds and returns (outputs) and what its profiler event
  // shows (inputs, as Gloo's events do; the outputs when they are the inputs).
  struct OpTensors {
    OpTensors(std::vector<at::Tensor> both) : outputs(std::move(both)), same_(true) {}
    OpTensors(std::initializer_list<at::Tensor> both) : OpTensors(std::vector<at::Tensor>(both)) {}
    OpTensors(std::vector<at::Tensor> out, std::vector<at::Tensor> in)
        : outputs(std::move(out)), inputs_(std::move(in)) {}
    const std::vector<at::Tensor>& inputs() const { return same_ ? outputs : inputs_; }
    std::vector<at::Tensor> outputs;

   private:
    std::vector<at::Tensor> inputs_;
    bool same_ = false;  // inputs are the outputs: one list, not two copies
  };
  // An op as enqueue takes it, each field named at the call (designated initializers).
  struct OpSpec {
    const char* op;
    c10d::OpType type;
    OpTensors tensors;
    // Where the tensors live (nullopt: host memory). CUDA work waits for the caller's current
    // stream, runs on its lane's comm stream, and is staged through host memory when the
    // group's device path says so or host_only (an op NCCL cannot do).
    std::optional<c10::Device> device = std::nullopt;
    // async_op=False: the caller waits at once, so the op runs on the caller's thread, at issue
    // when its lane is idle, else in wait() once its turn comes.
    bool blocking = false;
    bool host_only = false;
    Route route = Route::kCollective;
    int peer = -1;  // sends and receives: the other rank
  };
  // An op once issued: its lane, its numbers, its Work (OpIssue.h).
  struct IssuedOp;
  // Issues body (a callable (Work&, RoutedComm&)) on the lane the calling thread's priority
  // selects (or the send or receive lane). The returned Work holds the outputs alive until it
  // completes. Defined in OpIssue.h, which the files issuing ops include.
  template <class Body>
  c10::intrusive_ptr<c10d::Work> enqueue(OpSpec spec, Body body);
  // Everything of an op that happens at issue, on the caller's thread.
  IssuedOp issue(OpSpec& spec);
  // The op's job, wherever it runs: its body, then its Work completed or failed.
  void run_issued(IssuedOp& issued, c10::function_ref<void(Work&, RoutedComm&)> body);
  // Queues the op's job on its lane; its Work's wait() may still run it on the caller.
  void submit_issued(IssuedOp issued, std::function<void(Work&, RoutedComm&)> body);
  // The lane's communicators, created on its first collective (in that lane's thread: every rank
  // reaches it in the same lane order, which is the contract).
  RoutedComm& communicator(int lane);
  // What every communicator over members (group ranks, ascending) is told; name, bootstrap and
  // *global (filled with the members' global ranks) must outlive the config.
  domino_comm_config_t comm_config(const std::vector<int>& members, const std::string& name,
                                   const StoreBootstrap& bootstrap,
                                   std::vector<int64_t>* global) const;
  // The registry's transport that variable (whose value is chosen) names; "auto" = automatic.
  const domino_plugin_t* loaded_transport(const char* variable, const std::string& chosen,
                                          const char* automatic) const;
  // Times the link between rank 0 and group rank peer over plugin (ranks 0 and peer only), by
  // ping-pong or, by_collectives, by two-rank all-reduces; what ("intra" or "inter") scopes the
  // rendezvous keys.
  topology::TransportCost measure_link(const domino_plugin_t* plugin, int peer,
                                       const std::string& what, bool by_collectives);
  // Chooses binding_ from the host topology, and the NIC rail alignment would give UCX.
  void bind();
  // Which network interfaces this rank hands its transports (socket_interfaces_): the first rule
  // of topology::choose_interfaces that applies, the same for every group of the process. Logs
  // it; throws ValueError for a DOMINO_SOCKET_IFNAME that selects nothing here.
  void choose_socket_interfaces();
  // Each host's first rank publishes mine, its address toward the job's store ("" for loopback);
  // when wanted (this host's own route is loopback: the store is on it, so the route says nothing
  // about the network), returns another host's.
  std::vector<std::string> other_hosts_toward_store(const std::string& mine, bool wanted);
  // Every rank publishes its host identity and reads everyone's.
  topology::GroupLayout exchange_layout();
  // Whether plugin takes the router's algorithm names per call (collective_with for any op,
  // allreduce_with for all-reduces, or links and no all-reduce of its own); else the router
  // hands it none.
  static bool runs_algorithm_table(const domino_plugin_t* plugin);
  // Rank 0's value under key: rank 0 publishes mine, the others wait for it.
  std::string rank0s(const std::string& key, const std::string& mine);
  // env with rank 0's values of the settings that change what goes on the wire.
  AdoptedEnvironment agree_on_wire_settings(const std::map<std::string, std::string>& env);
  // Rank 0's measured link costs, which every rank adopts so that all plan alike.
  topology::Router agree_on_routing(const std::string& host_list);

  c10::intrusive_ptr<Options> options_;
  Settings settings_;
  std::map<std::string, std::string> wire_settings_;
  Priority default_priority_ = Priority::kNormal;
  std::unique_ptr<PluginRegistry> registry_;
  const domino_plugin_t* plugin_ = nullptr;
  const domino_plugin_t* inter_plugin_ = nullptr;
  std::unique_ptr<topology::Router> router_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::vector<int64_t> global_ranks_;
  topology::GroupLayout layout_;
  topology::Binding binding_;
  std::string rail_interface_;     // bind(): this rank's NIC on a host with several; "" if none
  std::string socket_interfaces_;  // comma-separated, for every communicator's config (ABI 9)
  std::string ucx_net_devices_;
  std::string network_rule_;
  std::string group_name_;
  struct LaneComm {
    std::vector<std::unique_ptr<StoreBootstrap>> bootstraps;
    std::unique_ptr<RoutedComm> comm;
  };
  std::array<LaneComm, kLanes> comms_;
  std::atomic<uint64_t> sequence_{0};
  // Collectives and point-to-point ops issued so far, as the Flight Recorder numbers them.
  std::atomic<uint64_t> collective_seq_{0};
  std::atomic<uint64_t> p2p_seq_{0};
  // This group in the Flight Recorder's dump (see flight_group()).
  std::mutex flight_group_mutex_;
  std::atomic<int64_t> flight_group_{-1};
  uint64_t monitored_barriers_ = 0;
  std::atomic<bool> aborted_{false};
  uint64_t shrinks_ = 0;          // shrink() calls so far: every remaining rank counts alike
  uint64_t shrink_attempts_ = 0;  // also the failed ones past the argument checks
  // The group's timeout (options_->timeout until setTimeout); new communicators take it.
  std::atomic<std::chrono::milliseconds> timeout_{std::chrono::milliseconds(0)};
  std::mutex timeout_mutex_;  // setTimeout against a lane publishing its new communicators
  std::atomic<bool> timeout_ignored_warned_{false};
  std::unique_ptr<DeviceCollectives> device_;
  // Declared last, so that the lanes stop before the communicators go.
  LaneSet lanes_;
};

}  // namespace domino
