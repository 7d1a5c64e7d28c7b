// The "domino" c10d backend: every collective becomes a Work at once and runs on the group's
// progress lane over the transport the settings choose.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "config/Settings.h"

namespace domino {

class Communicator;
class PluginRegistry;
class ProgressLane;
class StoreBootstrap;

class ProcessGroupDomino : public c10d::Backend {
 public:
  struct Options : public c10d::Backend::Options {
    explicit Options(std::chrono::milliseconds timeout = kBackendDefaultTimeout)
        : c10d::Backend::Options("domino", timeout) {}
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
  const char* intra_transport() const;

  c10::intrusive_ptr<c10d::Work> allreduce(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> barrier(
      const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;
  uint64_t getSequenceNumberForGroup() override { return sequence_; }
  void shutdown() override;

 private:
  std::string label() const;

  c10::intrusive_ptr<Options> options_;
  Settings settings_;
  std::unique_ptr<PluginRegistry> registry_;
  std::unique_ptr<StoreBootstrap> bootstrap_;
  std::unique_ptr<Communicator> intra_;
  std::unique_ptr<ProgressLane> lane_;  // declared last: stops before the communicator goes
  uint64_t sequence_ = 0;
};

}  // namespace domino
