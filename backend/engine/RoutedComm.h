// One lane's communication for a group, as the router plans it: the communicators every
// candidate plan of the group's layout runs on (a single one over the whole group: shared memory
// on one host, the inter-host transport across hosts; and for a group across hosts the ranks of
// this host, the ranks with this local rank on every host (the "rail"), and the first rank of
// every host (the leaders)), and the executor that runs any plan's steps on them (PlanRun.cpp).
// Each collective asks the router for its plan. Torch-free.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "PlanTrial.h"
#include "RailPipeline.h"
#include "Trial.h"
#include "plugins/registry/Communicator.h"
#include "topology/Router.h"

namespace domino {

class RoutedComm {
 public:
  // A communicator to build: which transport, over which group ranks (in the level's order: a
  // rail's in host order), and a name unique among the communicators of this lane (it scopes their
  // rendezvous keys).
  struct Spec {
    std::string name;
    bool inter = false;
    std::vector<int> members;
  };
  using Factory = std::function<std::unique_ptr<Communicator>(const Spec&)>;

  // How plans that pass through scratch memory touch the data. Host memory unless the backend
  // gives device operations (for communicators over CUDA memory, which are stream-ordered).
  class Memory {
   public:
    virtual ~Memory() = default;
    // Zeroed scratch of bytes on device (-1: host), alive as long as the returned holder.
    virtual std::shared_ptr<void> allocate(size_t bytes, int device) = 0;
    virtual void copy(void* dst, const void* src, size_t bytes, int device) = 0;
    virtual void divide(const domino_buffer_t& buffer, int divisor) = 0;
  };

  // Buffers are passed by const reference, like the plugin ABI: the struct is the caller's,
  // the memory it points to is written.
  // Builds every communicator this rank needs, in an order every rank shares.
  // rail_thread: where the hierarchical plans' rail thread runs (the lane's placement).
  RoutedComm(const topology::Router& router, int rank, const Factory& make,
             std::shared_ptr<Memory> memory = nullptr, ThreadPlacement rail_thread = {});

  // Runs call (any collective; make_call builds one) by the plan the router gives its op and
  // size. An all-to-all carries its counts and offsets and runs flat.
  void collective(const domino_call_t& call);
  void send(const domino_buffer_t& buffer_in, int peer, int tag);
  int recv(const domino_buffer_t& buffer_in, int peer, int tag);

  // Every communicator this one routes over waits timeout_ms in operations that start from now.
  // False when one of them keeps the timeout it was created with.
  bool set_timeout(int64_t timeout_ms);
  // From any thread: ends what every communicator of the lane has in flight (comm_abort);
  // false when a transport cannot.
  bool abort();

  // The plan each op took last, by name (observability; tests check routing with it).
  std::string last_plan() const { return std::string(last_plan_); }
  // The in-host algorithm the last all-reduce of a one-host group from kAlgorithmTrialFromBytes
  // ran (observability; tests check the algorithm trial with it).
  const std::string& last_large_algorithm() const { return last_large_algorithm_; }

  // Where the in-host paths' order turned out to differ between hosts (ShmCosts.h).
  static constexpr size_t kAlgorithmTrialFromBytes = size_t{64} << 10;

 private:
  // One collective call as the plan's steps see it.
  struct Call {
    topology::Collective op;
    domino_buffer_t send;
    domino_buffer_t recv;
    domino_redop_t redop = DOMINO_SUM;
    int root = -1;
  };
  // An all-reduce of bytes: small ones across hosts go through the plan trial, large ones on one
  // host through the algorithm trial of their size class.
  void allreduce(const Call& call, size_t bytes);
  void large_one_host_allreduce(const Call& call, size_t bytes);
  // Which plan plan_for gives: the router's choice, the flat one over the communicator this
  // rank has for the whole group, or the small all-reduce trial's candidate i (kTrialCandidate
  // + i).
  static constexpr uint64_t kChosen = 0, kWholeGroup = 1, kTrialCandidate = 2;
  // The plan op takes for bytes, the router's, kept: a plan depends on nothing else, and a
  // collective's hot path should not price plans.
  const topology::Plan& plan_for(topology::Collective op, size_t bytes, uint64_t pick = kChosen);
  // The router's plan of that pick, made anew.
  topology::Plan routed_plan(topology::Collective op, size_t bytes, uint64_t pick) const;
  // The plan of the candidate the small all-reduce trial runs now, or adopted.
  const topology::Plan& trial_plan(const PlanTrial& trial, size_t bytes);
  // Runs plan for call (PlanRun.cpp): a flat plan as one call, any other step by step; a
  // failing step's error also names the op and the plan.
  void run(const topology::Plan& plan, const Call& call);
  void run_flat(const topology::Plan& plan, const Call& call);
  void run_steps(const topology::Plan& plan, const Call& call);
  // This rank's communicator for level; nullptr where it has none (a host of one rank).
  Communicator* level_comm(topology::Level level);
  // Chunks plan goes in, in this memory (1: one piece; devices' communicators are
  // stream-ordered and never pipelined).
  static size_t pipeline_chunks(const topology::Plan& plan, int device);
  RailPipeline& rail_pipeline();

  const topology::Router& router_;
  int rank_;
  int size_;
  std::unique_ptr<Communicator> flat_intra_;
  std::unique_ptr<Communicator> flat_inter_;
  std::unique_ptr<Communicator> local_;    // this host's ranks, when more than one
  std::unique_ptr<Communicator> rail_;     // uniform layouts
  std::unique_ptr<Communicator> leaders_;  // on each host's first rank
  std::shared_ptr<Memory> memory_;
  // After the communicators it drives, so that it goes first.
  std::unique_ptr<RailPipeline> rail_pipeline_;
  ThreadPlacement rail_thread_;
  std::string_view last_plan_;                      // the shape's registered name
  std::optional<PlanTrial> small_allreduce_trial_;  // groups across hosts, plan not forced
  // Which in-host all-reduce wins at large sizes depends on the machine (how its caches and
  // memory serve reads from a peer's pages against copies through the slots: single_copy ran
  // 0.7x rsag's time on one host class, 1.3x-1.8x on another, and 0.5x-0.7x from 64 KiB on a
  // third), which the table's regimes, measured on one, cannot know. So one-host groups try the
  // table's two cheapest per size class (a power of two of bytes) from kAlgorithmTrialFromBytes
  // (public, above) and adopt the faster, for every dtype and reduction of that class.
  std::map<int, Trial<std::string>> large_allreduce_trials_;
  std::string last_large_algorithm_;
  // Plans by (op, pick, bytes); emptied when it grows past kCachedPlans.
  static constexpr size_t kCachedPlans = 512;
  std::unordered_map<uint64_t, topology::Plan> plans_;
  uint64_t last_plan_key_ = 0;
  const topology::Plan* last_found_ = nullptr;  // plans_'s entry for last_plan_key_
};

}  // namespace domino
