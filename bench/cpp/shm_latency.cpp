// Round-trip latency of the shared-memory transport alone (no torch, no Python): N forked ranks
// run back-to-back 8-byte all-reduces, then large ones, and rank 0 prints microseconds per op.
//   shm_latency [ranks] [iterations] [workspace_bytes]
// DOMINO_SINGLE_COPY=off times the path through the segment where single-copy reads would run.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "plugins/registry/Communicator.h"
#include "plugins/shm/ShmCommunicator.h"
#include "support/FileBootstrap.h"

int main(int argc, char** argv) {
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 2;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 100000;
  const uint64_t workspace = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 0;
  const std::string dir = domino::testing::make_temp_directory();
  std::vector<pid_t> children;
  for (int rank = 0; rank < ranks; ++rank) {
    const pid_t pid = fork();
    if (pid != 0) {
      children.push_back(pid);
      continue;
    }
    domino::testing::FileBootstrap bootstrap(dir);
    domino_comm_config_t config{};
    config.rank = rank;
    config.size = ranks;
    config.group_name = "bench";
    config.timeout_ms = 60000;
    config.workspace_bytes = workspace;
    const char* single_copy = std::getenv("DOMINO_SINGLE_COPY");
    config.single_copy = single_copy != nullptr && std::string(single_copy) == "off" ? -1 : 0;
    config.bootstrap = bootstrap.table();
    domino::shm::ShmCommunicator comm(config);
    if (rank == 0) std::printf("single-copy reads: %s\n", comm.single_copy() ? "on" : "off");
    for (size_t bytes : {size_t{8}, size_t{1} << 20, size_t{16} << 20}) {
      std::vector<float> data(bytes / 4, 1.0f);
      domino_buffer_t buffer{data.data(), data.size(), DOMINO_FLOAT32, -1};
      const int n =
          bytes == 8 ? iterations : std::max(10, static_cast<int>(iterations / (bytes / 1024)));
      const domino_call_t allreduce =
          domino::make_call(domino::topology::Collective::kAllReduce, buffer, buffer, DOMINO_SUM);
      domino_buffer_t none{nullptr, 0, DOMINO_UINT8, -1};
      for (int i = 0; i < 10; ++i) comm.collective(allreduce);
      comm.collective(domino::make_call(domino::topology::Collective::kBarrier, none, none));
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) comm.collective(allreduce);
      const double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count() /
          n;
      if (rank == 0) {
        std::printf("ranks=%d bytes=%zu %.2f us/op busbw=%.2f GB/s\n", ranks, bytes, us,
                    bytes / us / 1e3 * 2.0 * (ranks - 1) / ranks);
        std::fflush(stdout);
      }
    }
    _exit(0);
  }
  for (pid_t pid : children) waitpid(pid, nullptr, 0);
  std::filesystem::remove_all(dir);
  return 0;
}
