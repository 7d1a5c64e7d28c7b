#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "plugins/common/TransportError.h"
#include "plugins/shm/ShmCommunicator.h"
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
  comm.allreduce(send, recv, DOMINO_SUM);
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
    comm.barrier();
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
      comm.allreduce(buffer, buffer, DOMINO_SUM);
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
      comm.allreduce(buffer, buffer, DOMINO_SUM);
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

TEST(ShmCommunicator, ADeadRankIsDetectedLongBeforeTheTimeout) {
  Group group;
  const auto started = std::chrono::steady_clock::now();
  const auto outcomes = group.run(2, 60000, [&](int rank, ShmCommunicator& comm) {
    if (rank == 1) _exit(0);
    std::vector<float> data(1 << 20, 1.0f);
    domino_buffer_t buffer{data.data(), data.size(), DOMINO_FLOAT32, -1};
    try {
      comm.allreduce(buffer, buffer, DOMINO_SUM);
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
