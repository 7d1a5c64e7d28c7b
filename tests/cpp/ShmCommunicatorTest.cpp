#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
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

// What an in-place float32 SUM all-reduce of `count` ones raised: "<status>: <message>", or
// "no error".
std::string allreduce_said(ShmCommunicator& comm, size_t count) {
  std::vector<float> data(count, 1.0f);
  domino_buffer_t buffer{data.data(), data.size(), DOMINO_FLOAT32, -1};
  try {
    testing::CheckedComm{comm}.allreduce(buffer, buffer, DOMINO_SUM);
  } catch (const TransportError& e) {
    return std::to_string(e.status()) + ": " + e.what();
  }
  return "no error";
}

class ShmAllreduce : public ::testing::TestWithParam<int> {};

TEST_P(ShmAllreduce, SmallAndChunkedSumsAreExact) {
  const int size = GetParam();
  Group group;
  const auto outcomes = group.run(size, 30000, [&](int rank, ShmCommunicator& comm) {
    // 0, one element, the most a phase line carries (6 floats) and one more, small, just above
    // one slot, several chunks, in place and not.
    for (size_t count : {size_t{0}, size_t{1}, size_t{6}, size_t{7}, size_t{1000},
                         comm.slot_bytes() / 4 + 3, 3 * comm.slot_bytes() / 4 + 17}) {
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
    const std::string said = allreduce_said(comm, rank == 1 ? 10 : 12);
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

// Data that fits in a phase line, in 8-byte and 16-bit types, at 8 bytes and at the line's 24:
// every rank gets the exact sum, in place and not, at the root of a reduce too.
TEST_P(ShmAllreduce, DataInThePhaseLineSumsExactlyInEveryWidth) {
  const int size = GetParam();
  Group group;
  const auto outcomes = group.run(size, 30000, [&](int rank, ShmCommunicator& comm) {
    testing::CheckedComm checked{comm};
    const int64_t ranks_sum = size * (size + 1) / 2;
    for (size_t count : {size_t{1}, size_t{3}}) {
      for (bool in_place : {false, true}) {
        std::vector<int64_t> ints(count), int_out(count, -1);
        std::vector<double> reals(count), real_out(count, -1);
        for (size_t i = 0; i < count; ++i) {
          ints[i] = (rank + 1) * static_cast<int64_t>(i + 1);
          reals[i] = 0.5 * (rank + 1) * static_cast<double>(i + 1);
        }
        domino_buffer_t int_send{ints.data(), count, DOMINO_INT64, -1};
        domino_buffer_t int_recv{in_place ? ints.data() : int_out.data(), count, DOMINO_INT64, -1};
        checked.allreduce(int_send, int_recv, DOMINO_SUM);
        domino_buffer_t real_send{reals.data(), count, DOMINO_FLOAT64, -1};
        domino_buffer_t real_recv{in_place ? reals.data() : real_out.data(), count, DOMINO_FLOAT64,
                                  -1};
        checked.allreduce(real_send, real_recv, DOMINO_SUM);
        const auto* int_got = static_cast<const int64_t*>(int_recv.ptr);
        const auto* real_got = static_cast<const double*>(real_recv.ptr);
        for (size_t i = 0; i < count; ++i) {
          const auto scale = static_cast<int64_t>(i + 1);
          if (int_got[i] != ranks_sum * scale || real_got[i] != 0.5 * ranks_sum * scale) {
            return "count " + std::to_string(count) + " element " + std::to_string(i) + ": " +
                   std::to_string(int_got[i]) + " and " + std::to_string(real_got[i]);
          }
        }
      }
    }
    // 12 bfloat16 (24 bytes) of small integers, exact in bfloat16; reduced to the last rank.
    std::vector<uint16_t> halves(12), at_root(12, 0);
    const auto bf16 = [](float x) {
      uint32_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      return static_cast<uint16_t>(bits >> 16);
    };
    for (size_t i = 0; i < halves.size(); ++i) {
      halves[i] = bf16(static_cast<float>((rank + 1) * static_cast<int>(i % 3)));
    }
    domino_buffer_t half_send{halves.data(), halves.size(), DOMINO_BFLOAT16, -1};
    domino_buffer_t half_recv{at_root.data(), at_root.size(), DOMINO_BFLOAT16, -1};
    checked.reduce(half_send, half_recv, DOMINO_SUM, size - 1);
    for (size_t i = 0; rank == size - 1 && i < at_root.size(); ++i) {
      const uint16_t want = bf16(static_cast<float>(ranks_sum * static_cast<int>(i % 3)));
      if (at_root[i] != want) {
        return "bfloat16 element " + std::to_string(i) + ": bits " + std::to_string(at_root[i]) +
               ", expected " + std::to_string(want);
      }
    }
    return std::string();
  });
  for (int r = 0; r < size; ++r)
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
}

// One rank's data fits in its phase line and the others' go through the slots: the descriptors
// still meet, and the small all-reduces after it go through the lines.
TEST(ShmCommunicator, SizesOnEitherSideOfThePhaseLineFailOnEveryRankAndTheGroupStaysUsable) {
  Group group;
  const auto outcomes = group.run(3, 30000, [&](int rank, ShmCommunicator& comm) {
    const std::string said = allreduce_said(comm, rank == 1 ? 5 : 12);
    std::string after;
    for (int repeat = 0; repeat < 5 && after.empty(); ++repeat) {
      after = check_sum(rank, 3, comm, 1 + static_cast<size_t>(repeat), repeat % 2 == 0);
    }
    return said + "\n---\n" + after;
  });
  for (int r = 0; r < 3; ++r) {
    const std::string& m = outcomes[r].message;
    EXPECT_EQ(outcomes[r].exit_code, 0) << m;
    EXPECT_EQ(m.rfind(std::to_string(DOMINO_ERR_MISMATCH) + ":", 0), 0u) << m;
    EXPECT_NE(m.find("rank 1: allreduce #1 of 5 x float32 SUM"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 2: allreduce #1 of 12 x float32 SUM"), std::string::npos) << m;
    EXPECT_EQ(m.substr(m.find("---") + 4), "") << "an allreduce after it failed on rank " << r;
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
