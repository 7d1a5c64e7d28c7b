// What a domino group is made of, behind the installed ProcessGroupDomino: its settings, the
// transports it loaded, its router, lanes and communicators, and how an op is issued onto them.
// Not installed: only the backend's own files, its Python bindings and its tests include it.
#pragma once

#include <c10/core/Device.h>
#include <c10/util/FunctionRef.h>

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
#include "ProcessGroupDomino.h"
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
class PluginRegistry;
class RoutedComm;
class StoreBootstrap;

class ProcessGroupDomino::Impl {
 public:
  // Sets the group up (every rank of it together): backend is the group c10d sees, which names
  // it after construction (getGroupUid) and whose c10d entry points issue ops through this.
  Impl(ProcessGroupDomino& backend, const c10::intrusive_ptr<c10d::Store>& store, int rank,
       int size, c10::intrusive_ptr<Options> options);
  ~Impl();

  const Settings& settings() const { return settings_; }
  // The DOMINO_* settings every rank of the group took from rank 0 (unset ones absent).
  const std::map<std::string, std::string>& wire_settings() const { return wire_settings_; }
  // Where this group's ranks sit and what this host looks like, for torch_domino.topology().
  const topology::GroupLayout& layout() const { return layout_; }
  const topology::HostTopology& host() const;
  const char* intra_transport() const;
  // The transport between hosts ("none" for a one-host group that never needs it).
  const char* inter_transport() const;
  // Where this rank's communication runs: NUMA node, progress-thread CPUs, NIC.
  const topology::Binding& binding() const { return binding_; }
  // UCX's network devices as UCX reads them (the user's UCX_NET_DEVICES, or what this rank hands
  // down: its socket interfaces and RDMA ports; "" when UCX chooses), and the rule that decided.
  const std::string& ucx_net_devices() const { return ucx_net_devices_; }
  const std::string& network_rule() const { return network_rule_; }
  // How collectives are planned for this group (router inputs agreed with rank 0).
  const topology::Router& router() const { return *router_; }
  // The plan every op takes at each of sizes, with its steps and the alternatives weighed
  // (torch_domino.topology()).
  std::vector<topology::RoutingRow> routing_report(const std::vector<size_t>& sizes) const;
  // How this group's CUDA tensors travel: "nccl", "staged" (through host memory over the CPU
  // transports), or "undecided" before its first CUDA collective.
  const char* device_path() const;
  // Whether this build can move CUDA tensors over NCCL at all.
  bool has_device_transport() const;
  // The comm streams made so far, one per lane and device.
  std::vector<CommStream> comm_streams() const;

 private:
  // The c10d entry points issue ops through where(), enqueue() and the group's state.
  friend class ProcessGroupDomino;
  static constexpr int kLanes = LaneSet::kPriorities;

  std::string label() const;
  // This group's index in the Flight Recorder, registered under c10d's name for it.
  size_t flight_group();
  std::chrono::milliseconds timeout() const { return timeout_.load(); }
  // Warns once when a communicator could not take a new timeout (applied is false).
  void timeout_applies(bool applied);
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
  // The Work of an op that may run at issue: the calling thread's spare when it has one of this
  // group's rank, else a new one.
  c10::intrusive_ptr<Work> work_at_issue(c10d::OpType type, std::vector<at::Tensor> outputs);
  // Keeps the Work of an op that succeeded at issue as the thread's spare, unless someone else
  // holds it too (a HandleScope).
  static void keep_spare(c10::intrusive_ptr<Work> work);
  // The lane's communicators, created on its first collective by whichever thread runs that job
  // (the lane's, or a caller running it at issue or in wait()): every rank reaches it in the same
  // lane order, which is the contract.
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
  // c10d's shutdown(), setTimeout(), abort() and shrink() (ProcessGroupDomino.h).
  void shutdown();
  void set_timeout(std::chrono::milliseconds timeout);
  void abort();
  c10::intrusive_ptr<c10d::Backend> shrink(
      const std::vector<int64_t>& ranks_to_exclude, int shrink_flags,
      const c10::intrusive_ptr<c10d::Backend::Options>& opts_override);

  ProcessGroupDomino& backend_;
  const int rank_;
  const int size_;
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
