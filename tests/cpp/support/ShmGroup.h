// Forks `size` ranks that each build a communicator of one transport over a shared temporary
// directory store.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "plugins/shm/ShmCommunicator.h"
#include "plugins/ucx/UcxCommunicator.h"
#include "support/FileBootstrap.h"
#include "support/ForkRanks.h"

namespace domino::testing {

template <class Comm>
struct ForkedGroup {
  std::string directory = make_temp_directory();
  ~ForkedGroup() { std::filesystem::remove_all(directory); }

  std::vector<RankOutcome> run(
      int size, int64_t timeout_ms, const std::function<std::string(int, Comm&)>& body,
      uint64_t workspace_bytes = 0, const char* algorithm = nullptr,
      const std::function<void(int, domino_comm_config_t&)>& configure = nullptr) {
    return fork_ranks(size, [&](int rank) {
      FileBootstrap bootstrap(directory);
      domino_comm_config_t config{};
      config.rank = rank;
      config.size = size;
      config.group_name = "unit";
      config.timeout_ms = timeout_ms;
      config.workspace_bytes = workspace_bytes;
      config.bootstrap = bootstrap.table();
      config.algorithm = algorithm;
      if (configure) configure(rank, config);
      Comm comm(config);
      return body(rank, comm);
    });
  }
};

using ShmGroup = ForkedGroup<shm::ShmCommunicator>;
using UcxGroup = ForkedGroup<ucx::UcxCommunicator>;

}  // namespace domino::testing
