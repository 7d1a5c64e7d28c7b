#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "plugins/common/TransportError.h"
#include "plugins/shm/ShmAlgorithms.h"
#include "plugins/shm/ShmCommunicator.h"
#include "support/CheckedComm.h"
#include "support/ShmGroup.h"

namespace domino::shm {
namespace {

using Group = testing::ShmGroup;

std::string check_sum(int rank, int size, ShmCommunicator& comm, size_t count, bool in_place) {
  std::vector<float> in(count), out(count, -1.0f);
  for (size_t i = 0; i < count; ++i)
    in[i] = static_cast<float>((rank + 1) * static_cast<int>(i % 7));
  domino_buffer_t send{in.data(), count, DOMINO_FLOAT32, -1};
  domino_buffer_t recv{in_place ? in.data() : out.data(), count, DOMINO_FLOAT32, -1};
  testing::CheckedComm{comm}.allreduce(send, recv, DOMINO_SUM);
  const auto* result = static_cast<const float*>(recv.ptr);
  const float ranks_sum = static_cast<float>(size * (size + 1) / 2);
  for (size_t i = 0; i < count; ++i) {
    const float expect = ranks_sum * static_cast<float>(i % 7);
    if (result[i] != expect) {
      return "count " + std::to_string(count) + " element " + std::to_string(i) + ": got " +
             std::to_string(result[i]) + " expected " + std::to_string(expect);
    }
  }
  return "";
}

class ShmAllreduce : public ::testing::TestWithParam<int> {};

TEST_P(ShmAllreduce, SmallAndChunkedSumsAreExact) {
  const int size = GetParam();
  Group group;
  const auto outcomes = group.run(size, 30000, [&](int rank, ShmCommunicator& comm) {
    // 0, one element, small, just above one slot, several chunks, in place and not.
    for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, comm.slot_bytes() / 4 + 3,
                         3 * comm.slot_bytes() / 4 + 17}) {
      for (bool in_place : {false, true}) {
        const std::string error = check_sum(rank, size, comm, count, in_place);
        if (!error.empty()) return error;
      }
    }
    testing::CheckedComm{comm}.barrier();
    return std::string();
  });
  for (int r = 0; r < size; ++r)
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ShmAllreduce, ::testing::Values(1, 2, 3, 4, 5));

TEST(ShmCommunicator, MismatchedSizesFailOnEveryRankAndTheGroupStaysUsable) {
  Group group;
  const auto outcomes = group.run(3, 30000, [&](int rank, ShmCommunicator& comm) {
    std::vector<float> data(rank == 1 ? 10 : 12, 1.0f);
    domino_buffer_t buffer{data.data(), data.size(), DOMINO_FLOAT32, -1};
    std::string said = "no error";
    try {
      testing::CheckedComm{comm}.allreduce(buffer, buffer, DOMINO_SUM);
    } catch (const TransportError& e) {
      said = std::to_string(e.status()) + ": " + e.what();
    }
    return said + "\n---\n" + check_sum(rank, 3, comm, 100, true);
  });
  for (int r = 0; r < 3; ++r) {
    const std::string& m = outcomes[r].message;
    EXPECT_EQ(outcomes[r].exit_code, 0) << m;
    EXPECT_EQ(m.rfind(std::to_string(DOMINO_ERR_MISMATCH) + ":", 0), 0u) << m;
    EXPECT_NE(m.find("rank 1: allreduce #1 of 10 x float32 SUM"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 0: allreduce #1 of 12 x float32 SUM"), std::string::npos) << m;
    EXPECT_EQ(m.substr(m.find("---") + 4), "") << "the follow-up allreduce failed on rank " << r;
  }
}

TEST(ShmCommunicator, ARankThatNeverArrivesIsNamedAtTheTimeout) {
  Group group;
  const auto started = std::chrono::steady_clock::now();
  const auto outcomes = group.run(3, 600, [&](int rank, ShmCommunicator& comm) {
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // alive, but absent
      return std::string("skipped");
    }
    std::vector<float> data(16, 1.0f);
    domino_buffer_t buffer{data.data(), data.size(), DOMINO_FLOAT32, -1};
    try {
      testing::CheckedComm{comm}.allreduce(buffer, buffer, DOMINO_SUM);
    } catch (const TransportError& e) {
      return std::to_string(e.status()) + ": " + e.what();
    }
    return std::string("no error");
  });
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  for (int r = 0; r < 2; ++r) {
    const std::string& m = outcomes[r].message;
    // One rank times out; the other may see the group marked broken first. Both name rank 2.
    EXPECT_TRUE(m.rfind(std::to_string(DOMINO_ERR_TIMEOUT) + ":", 0) == 0 ||
                m.rfind(std::to_string(DOMINO_ERR_PEER) + ":", 0) == 0)
        << m;
    EXPECT_NE(m.find("rank(s) 2 never reached it"), std::string::npos) << m;
  }
}

// Set in the forked rank that should stall: its next pause check blocks for 800 ms, as a rank
// the scheduler or a debugger stops mid-collective would.
std::atomic<bool> g_stall_next_pause{false};
int stall_once(void*) {
  if (g_stall_next_pause.exchange(false))
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
  return 0;
}

TEST(ShmCommunicator, NoPeerWritesIntoARankAfterItLeftOnAnError) {
  // Rank 1 stalls after pushing its first chunk; rank 0 times out at the closing barrier and
  // returns. Rank 1's remaining chunks must not land in rank 0's buffer afterwards.
  Group group;
  const auto outcomes = group.run(
      2, 300,
      [&](int rank, ShmCommunicator& comm) {
        if (!comm.single_copy()) return std::string("no single-copy transfers here");
        std::vector<float> data(1 << 20, 1.0f);  // 4 MiB: 4 chunks per rank's slice
        domino_buffer_t buffer{data.data(), data.size(), DOMINO_FLOAT32, -1};
        if (rank == 1) g_stall_next_pause = true;
        std::string error;
        try {
          testing::CheckedComm{comm}.allreduce(buffer, buffer, DOMINO_SUM);
        } catch (const TransportError& e) {
          error = e.what();
        }
        if (rank == 1) return std::string("rank 1: ") + (error.empty() ? "no error" : "raised");
        std::fill(data.begin(), data.end(), 7.0f);
        std::this_thread::sleep_for(std::chrono::milliseconds(1200));
        for (size_t i = 0; i < data.size(); ++i) {
          if (data[i] != 7.0f)
            return "overwritten at element " + std::to_string(i) + " after: " + error;
        }
        return "intact after: " + error;
      },
      0, nullptr,
      [](int rank, domino_comm_config_t& config) {
        if (rank == 1) config.should_pause = stall_once;
      });
  if (outcomes[0].message == "no single-copy transfers here") GTEST_SKIP() << outcomes[0].message;
  EXPECT_EQ(outcomes[0].message.rfind("intact after: ", 0), 0u) << outcomes[0].message;
  EXPECT_NE(outcomes[0].message.find("timed out"), std::string::npos) << outcomes[0].message;
  EXPECT_EQ(outcomes[1].message, "rank 1: raised");
}

TEST(ShmCommunicator, ADeadRankIsDetectedLongBeforeTheTimeout) {
  Group group;
  const auto started = std::chrono::steady_clock::now();
  const auto outcomes = group.run(2, 60000, [&](int rank, ShmCommunicator& comm) {
    if (rank == 1) _exit(0);
    std::vector<float> data(1 << 20, 1.0f);
    domino_buffer_t buffer{data.data(), data.size(), DOMINO_FLOAT32, -1};
    try {
      testing::CheckedComm{comm}.allreduce(buffer, buffer, DOMINO_SUM);
    } catch (const TransportError& e) {
      return std::to_string(e.status()) + ": " + e.what();
    }
    return std::string("no error");
  });
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  const std::string& m = outcomes[0].message;
  EXPECT_EQ(m.rfind(std::to_string(DOMINO_ERR_PEER) + ":", 0), 0u) << m;
  EXPECT_NE(m.find("exited before reaching it"), std::string::npos) << m;
}

}  // namespace
}  // namespace domino::shm
