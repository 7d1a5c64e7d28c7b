// The rail pipeline's schedule and its failures: host steps and rail steps interleave in the
// fixed order every rank relies on, a failing rail step is rethrown after the steps already
// running have finished, and the rail steps after it are skipped, not run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/RailPipeline.h"
#include "plugins/registry/Communicator.h"
#include "plugins/registry/PluginRegistry.h"

namespace domino {
namespace {

// A real one-rank communicator for the pipeline to hand its rail steps (they do not use it).
std::unique_ptr<Communicator> one_rank() {
  static PluginRegistry registry({DOMINO_TEST_PLUGIN_DIR});
  domino_comm_config_t config{};
  config.size = 1;
  config.group_name = "rail-pipeline-test";
  config.timeout_ms = 1000;
  return std::make_unique<Communicator>(registry.find("mailbox"), config);
}

TEST(RailPipeline, HostAndRailStepsRunInTheOrderEveryRankShares) {
  auto comm = one_rank();
  RailPipeline pipeline(*comm, {});
  std::mutex mutex;
  std::vector<std::string> host, rail;
  pipeline.run(
      4, [&](size_t c) { host.push_back("before" + std::to_string(c)); },
      [&](size_t c, Communicator&) {
        std::lock_guard<std::mutex> lock(mutex);
        rail.push_back("rail" + std::to_string(c));
      },
      [&](size_t c) { host.push_back("after" + std::to_string(c)); });
  EXPECT_EQ(host, (std::vector<std::string>{"before0", "before1", "after0", "before2", "after1",
                                            "before3", "after2", "after3"}));
  EXPECT_EQ(rail, (std::vector<std::string>{"rail0", "rail1", "rail2", "rail3"}));
}

TEST(RailPipeline, AFailedRailStepIsRethrownAndTheRestAreSkipped) {
  auto comm = one_rank();
  RailPipeline pipeline(*comm, {});
  std::atomic<int> rail_runs{0};
  std::vector<size_t> after;
  try {
    pipeline.run(
        6, [](size_t) {},
        [&](size_t c, Communicator&) {
          ++rail_runs;
          if (c == 1) throw std::runtime_error("rail step 1 failed");
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        },
        [&](size_t c) { after.push_back(c); });
    FAIL() << "the failure was not rethrown";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "rail step 1 failed");
  }
  EXPECT_EQ(after, std::vector<size_t>{0});  // chunk 1 and later never gathered
  EXPECT_LE(rail_runs.load(), 2);            // steps queued after the failure were skipped
  // The pipeline is usable again: a new run starts clean.
  std::atomic<int> second{0};
  pipeline.run(
      3, [](size_t) {}, [&](size_t, Communicator&) { ++second; }, [](size_t) {});
  EXPECT_EQ(second.load(), 3);
}

TEST(RailPipeline, AFailedHostStepWaitsForTheRailStepsStillRunning) {
  auto comm = one_rank();
  RailPipeline pipeline(*comm, {});
  std::atomic<bool> rail_started{false}, rail_done{false};
  try {
    pipeline.run(
        3,
        [&](size_t c) {
          if (c != 1) return;
          while (!rail_started) std::this_thread::yield();  // rail step 0 is under way
          throw std::runtime_error("host step 1 failed");
        },
        [&](size_t c, Communicator&) {
          if (c != 0) return;
          rail_started = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          rail_done = true;
        },
        [](size_t) {});
    FAIL() << "the failure was not rethrown";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "host step 1 failed");
  }
  EXPECT_TRUE(rail_done.load()) << "run() returned while a rail step still used its buffers";
}

}  // namespace
}  // namespace domino
