// How a group's CUDA tensors travel: over NCCL or staged through host memory (decided once for
// the group, per pair for sends and receives), on comm streams of each lane's priority, over NCCL
// communicators per lane and per send/receive direction, with a watchdog that aborts them when
// enqueued work never finishes. The group issues the ops (ProcessGroupDomino::enqueue); this
// runs their bodies on the device.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <c10/core/Device.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/util/FunctionRef.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "CommStream.h"
#include "config/Settings.h"
#include "domino/plugin.h"
#include "engine/LaneSet.h"
#include "topology/GroupLayout.h"
#include "topology/Router.h"

namespace domino {

class Communicator;
class DeviceHealth;
class DeviceRuntime;
class DeviceWatchdog;
class RoutedComm;
class StoreBootstrap;
class Work;

// What a shrunk group takes over from its parent's device path (dist.shrink_group): per (lane,
// device), the NCCL communicator shrunk from the parent's flat one, and the comm stream it
// enqueues on.
struct InheritedDeviceComms {
  InheritedDeviceComms();
  ~InheritedDeviceComms();
  std::map<std::pair<int, int>, c10::Stream> streams;
  std::map<std::pair<int, int>, std::unique_ptr<Communicator>> comms;
};

class DeviceCollectives {
 public:
  // What the device path takes from its group. What it refers to outlives the transport.
  struct Group {
    c10::intrusive_ptr<c10d::Store> store;
    int rank;
    int size;
    const std::string& name;
    const Settings& settings;
    const topology::GroupLayout& layout;
    const topology::Router& router;
    const domino_plugin_t* nccl;  // nullptr: this build cannot move CUDA tensors over NCCL
    // Whether NCCL takes the router's all-reduce names (unused without NCCL).
    bool nccl_runs_table;
    const char* intra_transport;  // the host transports a staged op goes over, for the log
    const char* inter_transport;
    const std::atomic<std::chrono::milliseconds>& timeout;
    std::function<std::string()> label;
    // What every communicator over members (group ranks, ascending) is told; name, bootstrap
    // and *global (filled with the members' global ranks) must outlive the config.
    std::function<domino_comm_config_t(const std::vector<int>& members, const std::string& name,
                                       const StoreBootstrap& bootstrap,
                                       std::vector<int64_t>* global)>
        comm_config;
    // The group warns once when a communicator cannot take a new timeout.
    std::function<void(bool applied)> timeout_applies;
    // The lane's host communicator, for staged ops and sends and receives through host memory.
    std::function<RoutedComm&(int lane)> host_communicator;
    // A shrunk group's communicators from its parent (taken over at construction); may be null.
    std::shared_ptr<InheritedDeviceComms> inherited = nullptr;
  };

  // A CUDA op's issue-time facts, for its job on the lane.
  struct Issue {
    c10::Device device;
    std::shared_ptr<c10::Event> ready;  // recorded on the caller's stream at issue
    int stream_lane;                    // which comm stream (see kPeerLane)
    bool host_only;
    Route route;
    int peer;
  };

  explicit DeviceCollectives(Group group);
  DeviceCollectives(const DeviceCollectives&) = delete;
  DeviceCollectives& operator=(const DeviceCollectives&) = delete;
  ~DeviceCollectives();

  bool has_nccl() const { return group_.nccl != nullptr; }

  // On the caller's thread: makes work a CUDA work of this group and marks where the caller's
  // stream is, so that the transfer waits for what the caller queued before it.
  Issue issue(Work& work, c10::Device device, Route route, int lane, int peer, bool host_only);
  // The body of a CUDA op, on its lane: on the comm stream, over NCCL or staged, then an end
  // event for the work and the watchdog; completes the work.
  void run(Work& work, c10::function_ref<void(Work&, RoutedComm&)> body, int lane,
           const Issue& issue);
  // The two-rank NCCL communicator for sends to peer (sending) or receives from it; each
  // direction has its own. *hold keeps it to the calling thread until released.
  Communicator& peer_communicator(int peer, bool sending, c10::Device device,
                                  const c10::Stream& stream, std::unique_lock<std::mutex>* hold);

  // "nccl", "staged" or "undecided" (before the group's first CUDA collective).
  const char* device_path() const;
  // The comm streams made so far, one per lane ("high", "normal", "low", "send:P", "recv:P",
  // "recv:any") and device.
  std::vector<CommStream> comm_streams() const;

  // Waits (at most the group's timeout) until the device has run every CUDA op this group
  // enqueued, so that ending its communicators loses nothing; throws naming `what` otherwise.
  void finish_device_work(const std::string& what);
  // For dist.shrink_group, on every remaining rank, before the parent is ended: each lane's flat
  // NCCL communicator shrunk without `excluded` (group ranks), by the transport's comm_shrink
  // (ncclCommShrink); abort_first ends their work in flight first. Only lanes every remaining
  // rank holds healthy (they agree through `meeting`, a store only they share, under `attempt`,
  // which every remaining rank counts alike) and only where NCCL can shrink; the new group makes
  // the others itself. The new group is new_rank of the `remaining`
  // global ranks, named new_name.
  std::shared_ptr<InheritedDeviceComms> shrink(c10d::Store& meeting,
                                               const std::vector<int32_t>& excluded,
                                               bool abort_first, int new_rank,
                                               const std::vector<int64_t>& remaining,
                                               const std::string& new_name, uint64_t attempt);
  // From any thread: ends the NCCL communicators' work (ncclCommAbort); every CUDA collective of
  // the group fails from now on with why.
  void abort(const std::string& why);
  // For the NCCL communicators made so far: later ones read the group's timeout when made.
  void set_timeout(std::chrono::milliseconds timeout);
  // Apart, so that the group can stop the watchdog, which aborts these communicators, before
  // any communicator of the group goes (destroy_communicators() stops it too). Only once the
  // lanes have stopped: a device op run later would start the watchdog again.
  void stop_watchdog();
  void destroy_communicators();

 private:
  static constexpr int kLanes = LaneSet::kPriorities;
  // CUDA sends to peer p use comm stream kPeerLane + 2p, receives from it kPeerLane + 2p + 1,
  // receives from any source kPeerLane + 2 * size.
  static constexpr int kPeerLane = kLanes;
  enum class DevicePath { kUndecided, kNccl, kStaged };

  std::string label() const { return group_.label(); }
  std::chrono::milliseconds timeout() const { return group_.timeout.load(); }
  // Hands done (NCCL work's end event) to the watchdog, made on first use.
  void watch(const std::shared_ptr<c10::Event>& done, c10::Device device, c10d::OpType type);
  // NCCL or staged, decided once for the group at its first CUDA collective: every rank
  // publishes its host and GPU, and ranks sharing a GPU make the whole group stage.
  DevicePath decide_device_path(c10::Device device);
  DeviceRuntime& device_runtime();                // device_mutex_ held
  void publish_gpu_identity(c10::Device device);  // once per group
  // Registers a new NCCL communicator with the watchdog's list.
  void track(Communicator* comm);
  // The watchdog saw `what` miss its deadline: aborts every NCCL communicator of the group.
  void abort_device_communicators(const std::string& what);
  // Sends and receives decide per pair: staged when the two ranks share a GPU.
  bool pair_staged(int peer, c10::Device device);
  c10::Stream comm_stream(int lane, c10::Device device);
  // The lane's NCCL communicators on device (flat, and per topology level across hosts).
  RoutedComm& device_communicator(int lane, c10::Device device, const c10::Stream& stream);

  const Group group_;
  mutable std::mutex device_mutex_;
  std::unique_ptr<DeviceRuntime> device_runtime_;
  std::atomic<DevicePath> device_path_{DevicePath::kUndecided};
  std::mutex device_path_mutex_;  // deciding waits for other ranks: not under device_mutex_
  std::atomic<bool> gpu_identity_published_{false};
  std::map<std::pair<int, int>, c10::Stream> comm_streams_;  // (lane, device)
  std::map<int, bool> pair_staged_;                          // by peer
  struct DeviceComm {
    std::vector<std::unique_ptr<StoreBootstrap>> bootstraps;
    std::unique_ptr<topology::Router> router;
    std::unique_ptr<RoutedComm> comm;
    Communicator* flat = nullptr;  // the one over every rank (in comm), what shrink() shrinks
    bool broken = false;           // an op on it failed
  };
  std::map<std::pair<int, int>, DeviceComm> device_comms_;  // (lane, device)
  struct PeerComm {
    std::mutex mutex;
    std::unique_ptr<StoreBootstrap> bootstrap;
    std::unique_ptr<Communicator> comm;
    int device = -1;
  };
  std::mutex peer_mutex_;  // guards the map; each direction has its own lock
  std::map<std::pair<int, bool>, PeerComm> peer_comms_;  // (peer, sending)
  // From the parent, until the lane's first CUDA collective takes them (device_mutex_).
  std::map<std::pair<int, int>, std::unique_ptr<Communicator>> inherited_comms_;
  // Every NCCL communicator of the group, for the watchdog to abort (device_mutex_).
  std::vector<Communicator*> device_communicators_;
  // Set once the watchdog aborted them; every CUDA work of the group checks it after its wait.
  std::shared_ptr<DeviceHealth> device_health_;
  // Declared after the communicators it aborts, so it stops before they go.
  std::unique_ptr<DeviceWatchdog> watchdog_;
};

}  // namespace domino
