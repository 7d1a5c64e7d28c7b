// Every shared-memory collective and point-to-point path against values computed locally, at
// world sizes including non-powers of two, with a small workspace so large messages take many
// rounds.
#include <gtest/gtest.h>

#include <numeric>
#include <thread>
#include <vector>

#include "plugins/common/TransportError.h"
#include "support/CheckedComm.h"
#include "support/CollectiveChecks.h"
#include "support/ShmGroup.h"

namespace domino::shm {
namespace {

using testing::buf;
using testing::run_all_collectives;
using testing::v;

constexpr uint64_t kSmallWorkspace = 1 << 20;  // 64 KiB slots at 8 ranks: many rounds

class ShmCollectives : public ::testing::TestWithParam<int> {};

TEST_P(ShmCollectives, EveryOpMatchesALocalReference) {
  const int size = GetParam();
  testing::ShmGroup group;
  const auto outcomes = group.run(
      size, 60000,
      [&](int rank, ShmCommunicator& comm) {
        testing::CheckedComm checked{comm};
        return run_all_collectives(rank, size, checked);
      },
      kSmallWorkspace);
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ShmCollectives, ::testing::Values(1, 2, 3, 4, 5, 7));

TEST(ShmCollectives, AlltoallSplitDisagreementIsReportedOnEveryRank) {
  testing::ShmGroup group;
  const auto outcomes = group.run(2, 30000, [&](int rank, ShmCommunicator& comm) {
    std::vector<int64_t> in(4), out(4);
    std::vector<uint64_t> sc{2, 2}, so{0, 2}, rc{2, 2}, ro{0, 2};
    if (rank == 1) {  // rank 0 sends 2, rank 1 expects 1
      rc = {1, 3};
      ro = {0, 1};
    }
    try {
      testing::CheckedComm{comm}.alltoall(buf(in), sc.data(), so.data(), buf(out), rc.data(),
                                          ro.data());
    } catch (const TransportError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  });
  for (const auto& o : outcomes) {
    EXPECT_NE(o.message.find("rank 0 sends 2 elements to rank 1, which expects 1"),
              std::string::npos)
        << o.message;
  }
}

TEST(ShmPointToPoint, LargeMessagesCrossInBothDirectionsAtOnce) {
  testing::ShmGroup group;
  const size_t n = 3 << 20;  // 24 MiB each way, far more than one ring
  const auto outcomes = group.run(2, 60000, [&](int rank, ShmCommunicator& comm) {
    const int peer = 1 - rank;
    std::vector<int64_t> out(n), in(n, -1);
    for (size_t i = 0; i < n; ++i) out[i] = v(rank, i);
    std::thread sender([&] { comm.send(buf(out), peer, 7); });
    comm.recv(buf(in), peer, 7);
    sender.join();
    for (size_t i = 0; i < n; ++i) {
      if (in[i] != v(peer, i)) return "element " + std::to_string(i) + " wrong";
    }
    return std::string();
  });
  for (const auto& o : outcomes) EXPECT_EQ(o.message, "");
}

TEST(ShmPointToPoint, AnySourceReportsTheSenderAndTagsMustMatch) {
  testing::ShmGroup group;
  const auto outcomes = group.run(3, 30000, [&](int rank, ShmCommunicator& comm) {
    std::vector<int64_t> one(1, rank);
    if (rank == 2) {
      comm.send(buf(one), 0, 5);
      comm.send(buf(one), 0, 9);
      return std::string();
    }
    if (rank == 1) return std::string();
    std::vector<int64_t> got(1);
    const int from = comm.recv(buf(got), -1, 5);
    std::string said = "from " + std::to_string(from) + " value " + std::to_string(got[0]);
    try {
      comm.recv(buf(got), 2, 4);
    } catch (const TransportError& e) {
      said += std::string("|") + e.what();
    }
    comm.recv(buf(got), 2, 9);  // the message is still there after the refused receive
    return said;
  });
  EXPECT_EQ(outcomes[0].exit_code, 0) << outcomes[0].message;
  EXPECT_EQ(outcomes[0].message.rfind("from 2 value 2|", 0), 0u) << outcomes[0].message;
  EXPECT_NE(outcomes[0].message.find("expects tag 4 but the next message from it has tag 9"),
            std::string::npos)
      << outcomes[0].message;
}

TEST(ShmPointToPoint, ADeadSenderIsDetected) {
  testing::ShmGroup group;
  const auto outcomes = group.run(2, 60000, [&](int rank, ShmCommunicator& comm) {
    if (rank == 1) _exit(0);
    std::vector<int64_t> got(1);
    try {
      comm.recv(buf(got), 1, 0);
    } catch (const TransportError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  });
  EXPECT_NE(outcomes[0].message.find("rank 1 (pid"), std::string::npos) << outcomes[0].message;
  EXPECT_NE(outcomes[0].message.find("exited"), std::string::npos) << outcomes[0].message;
}

}  // namespace
}  // namespace domino::shm
