// Forks `size` ranks that each build a ShmCommunicator over a shared temporary directory store.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "plugins/shm/ShmCommunicator.h"
#include "support/FileBootstrap.h"
#include "support/ForkRanks.h"

namespace domino::testing {

struct ShmGroup {
  std::string directory = make_temp_directory();
  ~ShmGroup() { std::filesystem::remove_all(directory); }

  std::vector<RankOutcome> run(int size, int64_t timeout_ms,
                               const std::function<std::string(int, shm::ShmCommunicator&)>& body,
                               uint64_t workspace_bytes = 0) {
    return fork_ranks(size, [&](int rank) {
      FileBootstrap bootstrap(directory);
      domino_comm_config_t config{};
      config.rank = rank;
      config.size = size;
      config.group_name = "unit";
      config.timeout_ms = timeout_ms;
      config.workspace_bytes = workspace_bytes;
      config.bootstrap = bootstrap.table();
      shm::ShmCommunicator comm(config);
      return body(rank, comm);
    });
  }
};

}  // namespace domino::testing
