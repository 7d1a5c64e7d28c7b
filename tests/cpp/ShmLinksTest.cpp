// The shared algorithms over the shared-memory transport's links (plugins/shm/SegmentLinks):
// with the shm plugin's collective entries removed, the registry runs every op over its links
// alone; an all-reduce handed down by name runs that algorithm over them, bit for bit the fused
// path's result; disagreeing calls, a dead peer and a silent peer are named, never hung.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "plugins/common/TransportError.h"
#include "plugins/registry/Communicator.h"
#include "plugins/shm/SegmentLinks.h"
#include "plugins/shm/ShmPlugin.h"
#include "support/CheckedComm.h"
#include "support/CollectiveChecks.h"
#include "support/FileBootstrap.h"
#include "support/ForkRanks.h"
#include "support/LocalSegment.h"

namespace domino {
namespace {

// The shm plugin as a transport that has only links: every collective entry NULL.
const domino_plugin_t* shm_links_only() {
  static const domino_plugin_t table = [] {
    domino_plugin_t t = *domino_shm_plugin();
    t.name = "shm-links";
    t.allreduce = nullptr;
    t.barrier = nullptr;
    t.broadcast = nullptr;
    t.reduce = nullptr;
    t.allgather = nullptr;
    t.reduce_scatter = nullptr;
    t.gather = nullptr;
    t.scatter = nullptr;
    t.alltoall = nullptr;
    t.allreduce_with = nullptr;
    return t;
  }();
  return &table;
}

// The shm plugin with link_wait counted (per process), to tell the links from the fused paths.
int link_waits = 0;
const domino_plugin_t* shm_counted() {
  static const domino_plugin_t table = [] {
    domino_plugin_t t = *domino_shm_plugin();
    t.name = "shm-counted";
    t.link_wait = [](domino_comm_t* comm, char* err, size_t n) {
      ++link_waits;
      return domino_shm_plugin()->link_wait(comm, err, n);
    };
    return t;
  }();
  return &table;
}

// Forks `size` ranks, each with a registry Communicator over plugin.
std::vector<testing::RankOutcome> run_registry(
    const domino_plugin_t* plugin, int size, const char* algorithm, int64_t timeout_ms,
    const std::function<std::string(int, Communicator&)>& body) {
  const std::string directory = testing::make_temp_directory();
  auto outcomes = testing::fork_ranks(size, [&](int rank) {
    testing::FileBootstrap bootstrap(directory);
    domino_comm_config_t config{};
    config.rank = rank;
    config.size = size;
    config.group_name = "links";
    config.timeout_ms = timeout_ms;
    config.bootstrap = bootstrap.table();
    config.algorithm = algorithm;
    Communicator comm(plugin, config);
    return body(rank, comm);
  });
  std::filesystem::remove_all(directory);
  return outcomes;
}

void expect_all_passed(const std::vector<testing::RankOutcome>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
  }
}

TEST(ShmLinks, TheShmPluginOffersItsLinks) {
  const domino_plugin_t* shm = domino_shm_plugin();
  EXPECT_NE(shm->link_send, nullptr);
  EXPECT_NE(shm->link_recv, nullptr);
  EXPECT_NE(shm->link_wait, nullptr);
  // Its own all-reduce takes no name: the router's names reach its links only when forced
  // (DOMINO_ALGO=intra:ring), never in place of its fused paths across simulated hosts.
  EXPECT_EQ(shm->allreduce_with, nullptr);
}

using Case = std::tuple<int, const char*>;
class ShmLinksCollectives : public ::testing::TestWithParam<Case> {};

TEST_P(ShmLinksCollectives, EveryOpRunsOverTheLinksAlone) {
  const auto [size, algorithm] = GetParam();
  expect_all_passed(
      run_registry(shm_links_only(), size, algorithm, 30000, [&](int rank, Communicator& comm) {
        testing::CheckedComm checked{comm};
        std::string e = testing::check_allreduce(rank, size, checked);
        return e.empty() ? testing::run_all_collectives(rank, size, checked) : e;
      }));
}

INSTANTIATE_TEST_SUITE_P(WorldSizesAndAlgorithms, ShmLinksCollectives,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5),
                                            ::testing::Values("", "ring", "recursive_doubling",
                                                              "rabenseifner")),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const std::string name = std::get<1>(info.param);
                           return "world" + std::to_string(std::get<0>(info.param)) + "_" +
                                  (name.empty() ? "auto" : name);
                         });

// Sizes around the 128 KiB ring: a message that streams through it many times over, while the
// same rank sends to one peer and receives from another.
TEST(ShmLinks, EachAlgorithmHandedDownRunsOverTheLinksAndMatchesTheFusedPath) {
  expect_all_passed(
      run_registry(shm_counted(), 3, nullptr, 30000, [](int rank, Communicator& comm) {
        for (const char* name : {"ring", "recursive_doubling", "rabenseifner"}) {
          for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{70000}, size_t{1} << 20}) {
            std::vector<float> data(n), fused(n);
            for (size_t i = 0; i < n; ++i) {
              data[i] = static_cast<float>(testing::v(rank, i) % 977);
            }
            fused = data;
            domino_buffer_t d{data.data(), n, DOMINO_FLOAT32, -1};
            domino_buffer_t f{fused.data(), n, DOMINO_FLOAT32, -1};
            const int before = link_waits;
            comm.collective(
                domino::make_call(domino::topology::Collective::kAllReduce, d, d, DOMINO_SUM),
                std::string(name));
            const int named = link_waits;
            comm.collective(
                domino::make_call(domino::topology::Collective::kAllReduce, f, f, DOMINO_SUM));
            // The named call ran over the links, the other on the fused path.
            if (named == before || link_waits != named) {
              return std::string(name) + " at " + std::to_string(n) +
                     " elements: " + std::to_string(named - before) + " link waits named, " +
                     std::to_string(link_waits - named) + " unnamed";
            }
            // Integers in float: every summation order gives the same bits.
            if (std::memcmp(data.data(), fused.data(), n * sizeof(float)) != 0) {
              return std::string(name) + " differs from the fused all-reduce at " +
                     std::to_string(n) + " elements";
            }
          }
        }
        return std::string();
      }));
}

TEST(ShmLinks, RanksThatDisagreeOnTheCountAreToldAndTheGroupStops) {
  const auto outcomes =
      run_registry(domino_shm_plugin(), 2, nullptr, 5000, [](int rank, Communicator& comm) {
        std::vector<int64_t> data(rank == 0 ? 100 : 101, 1);
        domino_buffer_t b = testing::buf(data);
        try {
          comm.collective(
              domino::make_call(domino::topology::Collective::kAllReduce, b, b, DOMINO_SUM),
              std::string("recursive_doubling"));
          return std::string("returned");
        } catch (const TransportError& e) {
          std::string said = e.what();
          try {
            {
              domino_buffer_t none{nullptr, 0, DOMINO_UINT8, -1};
              comm.collective(
                  domino::make_call(domino::topology::Collective::kBarrier, none, none));
            }
            return said + " | and a later barrier ran";
          } catch (const TransportError& later) {
            return said + " | later: " + later.what();
          }
        }
      });
  for (const auto& o : outcomes) {
    EXPECT_NE(o.message.find("sent a message of"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("later: "), std::string::npos) << o.message;
  }
}

TEST(ShmLinks, APeerKilledMidwayIsNamedAndTheGroupRefusesLaterCalls) {
  const auto started = std::chrono::steady_clock::now();
  const auto outcomes =
      run_registry(domino_shm_plugin(), 3, nullptr, 20000, [](int rank, Communicator& comm) {
        std::vector<float> data(4u << 20, 1.0f);  // 16 MiB: many passes through each ring
        domino_buffer_t b{data.data(), data.size(), DOMINO_FLOAT32, -1};
        comm.collective(
            domino::make_call(domino::topology::Collective::kAllReduce, b, b, DOMINO_SUM),
            std::string("ring"));  // all arrive and finish once
        if (rank == 2) {
          std::thread([] {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            kill(getpid(), SIGKILL);
          }).detach();
        }
        try {
          for (int i = 0; i < 1000; ++i)
            comm.collective(
                domino::make_call(domino::topology::Collective::kAllReduce, b, b, DOMINO_SUM),
                std::string("ring"));
          return std::string("returned");
        } catch (const TransportError& e) {
          std::string said = e.what();
          try {
            comm.collective(
                domino::make_call(domino::topology::Collective::kAllReduce, b, b, DOMINO_SUM));
            return said + " | and a later all-reduce ran";
          } catch (const TransportError& later) {
            return said + " | later: " + later.what();
          }
        }
      });
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_EQ(outcomes[2].exit_code, -1);
  for (int r = 0; r < 2; ++r) {
    const std::string& said = outcomes[static_cast<size_t>(r)].message;
    EXPECT_NE(said.find("shm links on group 'links'"), std::string::npos) << said;
    EXPECT_NE(said.find("rank 2 (pid"), std::string::npos) << said;
    EXPECT_NE(said.find("later: "), std::string::npos) << said;
  }
}

TEST(ShmLinks, APeerThatNeverCallsIsNamedWithinTheTimeout) {
  const auto started = std::chrono::steady_clock::now();
  const auto outcomes =
      run_registry(shm_links_only(), 3, "ring", 400, [](int rank, Communicator& comm) {
        std::vector<int64_t> data(100000, rank);
        if (rank == 1) {
          std::this_thread::sleep_for(std::chrono::seconds(2));  // never joins in time
          return std::string();
        }
        try {
          domino_buffer_t b = testing::buf(data);
          comm.collective(
              domino::make_call(domino::topology::Collective::kAllReduce, b, b, DOMINO_SUM));
          return std::string("returned");
        } catch (const TransportError& e) {
          return std::string(e.what());
        }
      });
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  for (int r : {0, 2}) {
    const std::string& said = outcomes[static_cast<size_t>(r)].message;
    EXPECT_NE(said.find("timed out"), std::string::npos) << said;
    EXPECT_NE(said.find("rank 1"), std::string::npos) << said;
  }
}

// Two SegmentLinks over one segment in this process's memory, a thread each: several messages
// to one peer in one wait (empty ones, ones larger than the ring) arrive in order and whole, and
// a receive of the wrong size fails before writing anything into its buffer.
using testing::LocalSegment;

TEST(SegmentLinks, SeveralMessagesToOnePeerInOneWaitArriveInOrderAndWhole) {
  LocalSegment segment(2);
  shm::GroupBarrier health0(segment.header, 0, 2, "local"), health1(segment.header, 1, 2, "local");
  shm::SegmentLinks a(segment.header, 0, 2, &health0, "local", std::chrono::seconds(10));
  shm::SegmentLinks b(segment.header, 1, 2, &health1, "local", std::chrono::seconds(10));
  const std::vector<size_t> sizes = {0, 200 * 1024, 1, 300 * 1024, 0, 17};
  std::vector<std::vector<char>> out, in;
  for (size_t i = 0; i < sizes.size(); ++i) {
    out.emplace_back(sizes[i]);
    for (size_t j = 0; j < sizes[i]; ++j) out[i][j] = static_cast<char>(i * 31 + j * 7);
    in.emplace_back(sizes[i] + 64, '\x5a');  // 64 guard bytes after each
  }
  std::thread receiver([&] {
    for (size_t i = 0; i < sizes.size(); ++i) b.post_recv(0, in[i].data(), sizes[i]);
    b.post_send(0, out[1].data(), sizes[1]);  // and a message back, in the same wait
    b.wait();
  });
  std::vector<char> back(sizes[1]);
  for (size_t i = 0; i < sizes.size(); ++i) a.post_send(1, out[i].data(), sizes[i]);
  a.post_recv(1, back.data(), back.size());
  a.wait();
  receiver.join();
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_TRUE(std::equal(out[i].begin(), out[i].end(), in[i].begin())) << "message " << i;
    EXPECT_TRUE(std::all_of(in[i].begin() + static_cast<long>(sizes[i]), in[i].end(),
                            [](char c) { return c == '\x5a'; }))
        << "message " << i << " wrote past its buffer";
  }
  EXPECT_EQ(back, out[1]);
}

TEST(SegmentLinks, AReceiveOfTheWrongSizeFailsBeforeTouchingItsBuffer) {
  LocalSegment segment(2);
  shm::GroupBarrier health0(segment.header, 0, 2, "local"), health1(segment.header, 1, 2, "local");
  shm::SegmentLinks a(segment.header, 0, 2, &health0, "local", std::chrono::seconds(10));
  shm::SegmentLinks b(segment.header, 1, 2, &health1, "local", std::chrono::seconds(10));
  std::vector<char> message(1000, 'm'), small(600, 'g');
  std::string said;
  std::thread receiver([&] {
    b.post_recv(0, small.data(), 500);  // the last 100 bytes are guards
    try {
      b.wait();
    } catch (const TransportError& e) {
      said = e.what();
    }
  });
  a.post_send(1, message.data(), message.size());
  try {
    a.wait();  // the receiver stops reading: the sender is told the group broke
  } catch (const TransportError&) {
  }
  receiver.join();
  EXPECT_NE(said.find("sent a message of 1000 bytes where this rank expected 500"),
            std::string::npos)
      << said;
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](char c) { return c == 'g'; }));
}

}  // namespace
}  // namespace domino
