// Forks one rank per host label, each with a RoutedComm over real shm and UCX communicators
// (shared memory inside a "host", UCX between them), exactly as the backend composes them;
// body's text is the rank's verdict.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/RoutedComm.h"
#include "plugins/shm/ShmPlugin.h"
#include "plugins/ucx/UcxPlugin.h"
#include "support/FileBootstrap.h"
#include "support/ForkRanks.h"

namespace domino::testing {

inline std::vector<RankOutcome> run_routed(
    const std::vector<std::string>& hosts, const topology::RouterOptions& options,
    const std::function<std::string(int, int, RoutedComm&)>& body,
    const topology::CostModel& costs = {}) {
  const topology::GroupLayout layout = topology::layout_from_host_ids(hosts);
  const int size = static_cast<int>(hosts.size());
  const std::string directory = make_temp_directory();
  auto outcomes = fork_ranks(size, [&](int rank) {
    const topology::Router router(layout, costs, options);
    std::vector<std::unique_ptr<FileBootstrap>> bootstraps;
    auto make = [&](const RoutedComm::Spec& spec) {
      const std::string scope = directory + "/" + (spec.name.empty() ? "flat" : spec.name);
      std::filesystem::create_directories(scope);
      bootstraps.push_back(std::make_unique<FileBootstrap>(scope));
      domino_comm_config_t config{};
      for (size_t i = 0; i < spec.members.size(); ++i) {
        if (spec.members[i] == rank) config.rank = static_cast<int32_t>(i);
      }
      config.size = static_cast<int32_t>(spec.members.size());
      const std::string name = "routed/" + spec.name;
      config.group_name = name.c_str();
      config.timeout_ms = 30000;
      config.bootstrap = bootstraps.back()->table();
      return std::make_unique<Communicator>(spec.inter ? domino_ucx_plugin() : domino_shm_plugin(),
                                            config);
    };
    RoutedComm comm(router, rank, make);
    return body(rank, size, comm);
  });
  std::filesystem::remove_all(directory);
  return outcomes;
}

}  // namespace domino::testing
