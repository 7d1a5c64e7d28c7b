// The UCX transport's collectives and point-to-point messages against values computed locally,
// for every all-reduce algorithm at world sizes including non-powers of two; faults: a rank that
// never arrives, ranks that disagree on the size, or on the dtype, op or collective when the sizes
// agree.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <tuple>
#include <vector>

#include "plugins/algorithms/AlgorithmChoice.h"
#include "plugins/common/TransportError.h"
#include "plugins/registry/Communicator.h"
#include "plugins/ucx/UcxPlugin.h"
#include "support/CheckedComm.h"
#include "support/CollectiveChecks.h"
#include "support/ShmGroup.h"

namespace domino::ucx {
namespace {

using testing::buf;
using testing::check_allreduce;
using testing::expect_eq;
using testing::run_all_collectives;
using testing::v;

using Case = std::tuple<int, const char*>;
class UcxCollectives : public ::testing::TestWithParam<Case> {};

TEST_P(UcxCollectives, EveryOpMatchesALocalReference) {
  const auto [size, algorithm] = GetParam();
  testing::UcxGroup group;
  const auto outcomes = group.run(
      size, 60000,
      [&](int rank, UcxCommunicator& ucx) {
        testing::CheckedComm comm{ucx};
        std::string e = check_allreduce(rank, size, comm);
        return e.empty() ? run_all_collectives(rank, size, comm) : e;
      },
      0, algorithm);
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizesAndAlgorithms, UcxCollectives,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 7),
                                            ::testing::Values("ring", "recursive_doubling",
                                                              "rabenseifner")),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return "world" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });

TEST(UcxCollectives, TheNameHandedDownRunsAndAnUnknownOneIsRefused) {
  EXPECT_THROW(algorithms::parse_allreduce_algorithm("bogus", "ucx"), TransportError);
  testing::UcxGroup group;
  // Created with ring forced; each call names another (as the router hands its choice down).
  const auto outcomes = group.run(
      3, 20000,
      [](int rank, UcxCommunicator& comm) -> std::string {
        for (const char* name : {"recursive_doubling", "rabenseifner", "ring"}) {
          std::vector<int64_t> data(1001, rank + 1);
          domino_buffer_t b = buf(data);
          comm.collective(make_call(topology::Collective::kAllReduce, b, b), name);
          for (int64_t x : data) {
            if (x != 6) return std::string(name) + " gave " + std::to_string(x);
          }
        }
        std::vector<int64_t> data(4, 1);
        domino_buffer_t b = buf(data);
        try {
          comm.collective(make_call(topology::Collective::kAllReduce, b, b), "bogus");
        } catch (const TransportError& e) {
          return e.status() == DOMINO_ERR_UNSUPPORTED &&
                         std::string(e.what()).find("has no algorithm 'bogus'") != std::string::npos
                     ? std::string()
                     : std::string("wrong refusal: ") + e.what();
        }
        return std::string("bogus ran");
      },
      0, "ring");
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
  }
}

// UCX as the backend reaches it: through its plugin table (PluginTable.h), the registry's
// Communicator calling each op's own ABI entry, with no name handed down.
struct UcxByItsTable : Communicator {
  explicit UcxByItsTable(const domino_comm_config_t& config)
      : Communicator(domino_ucx_plugin(), config) {}
};

TEST(UcxCollectives, EveryOpsOwnEntryRunsItsOpAsTheTransportChooses) {
  for (int size : {2, 3}) {
    testing::ForkedGroup<UcxByItsTable> group;
    const auto outcomes = group.run(size, 30000, [&](int rank, UcxByItsTable& comm) {
      testing::CheckedComm checked{comm};
      std::string e = check_allreduce(rank, size, checked);
      return e.empty() ? run_all_collectives(rank, size, checked) : e;
    });
    for (int r = 0; r < size; ++r) {
      EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
      EXPECT_EQ(outcomes[r].message, "") << "world " << size << ", rank " << r;
    }
  }
}

// The table's named entries hand the name to the same collective(): it runs, or is refused.
TEST(UcxCollectives, TheNamedEntriesRunTheNameOrRefuseIt) {
  const domino_plugin_t* ucx = domino_ucx_plugin();
  ASSERT_NE(ucx->allreduce_with, nullptr);
  ASSERT_NE(ucx->collective_with, nullptr);
  testing::ForkedGroup<UcxCommunicator> group;
  const auto outcomes = group.run(2, 20000, [ucx](int rank, UcxCommunicator& comm) -> std::string {
    auto* raw = reinterpret_cast<domino_comm_t*>(&comm);
    char err[512] = "";
    std::vector<int64_t> data(1001, rank + 1);
    domino_buffer_t b = buf(data);
    if (ucx->allreduce_with(raw, &b, &b, DOMINO_SUM, "ring", err, sizeof err) != DOMINO_OK)
      return std::string("allreduce_with ring: ") + err;
    if (data[1000] != 3) return "allreduce_with ring gave " + std::to_string(data[1000]);
    if (ucx->allreduce_with(raw, &b, &b, DOMINO_SUM, "bogus", err, sizeof err) !=
            DOMINO_ERR_UNSUPPORTED ||
        std::string(err).find("has no algorithm 'bogus'") == std::string::npos)
      return std::string("allreduce_with bogus: ") + err;
    std::vector<int64_t> all(2 * data.size());
    domino_buffer_t gathered = buf(all);
    const domino_call_t call = make_call(topology::Collective::kAllGather, b, gathered);
    if (ucx->collective_with(raw, &call, "ring", err, sizeof err) != DOMINO_OK)
      return std::string("collective_with ring: ") + err;
    if (all.front() != 3 || all.back() != 3) return "collective_with ring gathered wrong values";
    if (ucx->collective_with(raw, &call, "rabenseifner", err, sizeof err) !=
            DOMINO_ERR_UNSUPPORTED ||
        std::string(err).find("has no algorithm 'rabenseifner'") == std::string::npos)
      return std::string("collective_with rabenseifner for an all-gather: ") + err;
    return "";
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
  }
}

TEST(UcxPointToPoint, AnySourceReportsTheSenderAndTagsMatch) {
  testing::UcxGroup group;
  const auto outcomes = group.run(3, 20000, [](int rank, UcxCommunicator& comm) -> std::string {
    std::vector<int64_t> one(1000);
    if (rank != 0) {
      for (size_t i = 0; i < one.size(); ++i) one[i] = v(rank, i);
      comm.send(buf(one), 0, rank == 1 ? 5 : 9);
      return "";
    }
    std::vector<int64_t> got(1000);
    const int first = comm.recv(buf(got), -1, 5);
    if (first != 1 || got[3] != v(1, 3)) return "tag 5 came from " + std::to_string(first);
    const int second = comm.recv(buf(got), 2, 9);
    if (second != 2 || got[999] != v(2, 999)) return "tag 9 wrong";
    return "";
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
}

TEST(UcxFaults, ARankThatNeverArrivesIsNamedWithinTheTimeout) {
  testing::UcxGroup group;
  const auto outcomes = group.run(3, 1500, [](int rank, UcxCommunicator& comm) -> std::string {
    if (rank == 2) return "";  // leaves without calling the collective
    std::vector<int64_t> data(100, rank);
    const auto start = std::chrono::steady_clock::now();
    try {
      testing::CheckedComm{comm}.allreduce(buf(data), buf(data), DOMINO_SUM);
      return "allreduce returned without rank 2";
    } catch (const TransportError& e) {
      const auto took = std::chrono::steady_clock::now() - start;
      if (e.status() != DOMINO_ERR_TIMEOUT && e.status() != DOMINO_ERR_PEER)
        return std::string("wrong status: ") + e.what();
      if (took > std::chrono::seconds(5)) return "took too long";
      const std::string what = e.what();
      if (what.find("allreduce") == std::string::npos || what.find("'unit'") == std::string::npos)
        return "message lacks op or group: " + what;
      return "";
    }
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
}

TEST(UcxFaults, RanksDisagreeingOnTheSizeAreToldAndTheGroupIsBroken) {
  testing::UcxGroup group;
  const auto outcomes = group.run(
      2, 5000,
      [](int rank, UcxCommunicator& comm) -> std::string {
        std::vector<int64_t> data(rank == 0 ? 10 : 20, 1);
        try {
          testing::CheckedComm{comm}.allreduce(buf(data), buf(data), DOMINO_SUM);
          return "no error";
        } catch (const TransportError& e) {
          if (e.status() != DOMINO_ERR_PEER) return std::string("status: ") + e.what();
          return std::string(e.what()).find("disagree") != std::string::npos ? "" : e.what();
        }
      },
      0, "recursive_doubling");
  for (int r = 0; r < 2; ++r) EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
}

TEST(UcxFaults, RanksDisagreeingOnDtypeOpOrCollectiveAreToldWhenTheSizesAgree) {
  // Each case: what rank 1 does instead of rank 0's float32 SUM all-reduce of 4 elements, and a
  // word the message must carry.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"int32", "int32"}, {"max", "MAX"}, {"broadcast", "broadcast"}};
  for (const auto& [variant, word] : cases) {
    testing::UcxGroup group;
    const auto outcomes = group.run(
        2, 5000,
        [variant = variant, word = word](int rank, UcxCommunicator& ucx) -> std::string {
          testing::CheckedComm comm{ucx};
          std::vector<float> floats(4, 1.0f);
          std::vector<int32_t> ints(4, 1);
          domino_buffer_t f{floats.data(), floats.size(), DOMINO_FLOAT32, -1};
          domino_buffer_t i{ints.data(), ints.size(), DOMINO_INT32, -1};
          try {
            if (rank == 0 || variant == "max") {
              comm.allreduce(f, f, rank == 1 ? DOMINO_MAX : DOMINO_SUM);
            } else if (variant == "int32") {
              comm.allreduce(i, i, DOMINO_SUM);
            } else {
              comm.broadcast(f, 0);
            }
            return "no error";
          } catch (const TransportError& e) {
            const std::string text = e.what();
            if (e.status() != DOMINO_ERR_PEER) return "status: " + text;
            const bool named = text.find("disagree on the collective") != std::string::npos &&
                               text.find(word) != std::string::npos;
            return named ? "" : text;
          }
        },
        0, "recursive_doubling");
    EXPECT_EQ(outcomes[1].message, "") << variant;
    if (variant == "broadcast") {
      // Rank 1 receives rank 0's message and is told; rank 0 waits for one that never comes.
      EXPECT_NE(outcomes[0].message, "no error");
    } else {
      EXPECT_EQ(outcomes[0].message, "") << variant;
    }
  }
}

TEST(UcxFaults, AMismatchIsToldAtOnceWhileOtherPartsOfTheCallAreStillMissing) {
  // Rank 0 runs an all-to-all; rank 1 sends its part of a gather, rank 2 nothing. Rank 0 must
  // not sit out the timeout waiting for rank 2 once rank 1's message shows the disagreement.
  testing::UcxGroup group;
  const auto outcomes = group.run(3, 20000, [](int rank, UcxCommunicator& ucx) -> std::string {
    testing::CheckedComm comm{ucx};
    std::vector<int64_t> mine(3, rank), all(3, -1);
    if (rank == 2) {  // alive, but in no collective
      std::this_thread::sleep_for(std::chrono::seconds(3));
      return "";
    }
    if (rank == 1) {
      std::vector<int64_t> one(1, rank), none;
      comm.gather(buf(one), buf(none), 0);
      return "";
    }
    const uint64_t counts[] = {1, 1, 1}, offsets[] = {0, 1, 2};
    const auto began = std::chrono::steady_clock::now();
    try {
      comm.alltoall(buf(mine), counts, offsets, buf(all), counts, offsets);
      return "no error";
    } catch (const TransportError& e) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      if (seconds > 1.5) return "told only after " + std::to_string(seconds) + " s";
      const std::string text = e.what();
      return text.find("a gather of int64") != std::string::npos ? "" : text;
    }
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
}

TEST(UcxCollectives, OrderSensitiveMaxGivesEveryRankTheSameBits) {
  for (int size : {2, 3, 4}) {
    testing::UcxGroup group;
    const auto outcomes = group.run(
        size, 20000,
        [size](int rank, UcxCommunicator& ucx) -> std::string {
          testing::CheckedComm comm{ucx};
          // NaN against a number: a < b ? b : a depends on which operand comes first.
          std::vector<float> data = {rank == 0 ? NAN : 1.0f, -0.0f, rank == 1 ? 0.0f : -0.0f};
          domino_buffer_t b{data.data(), data.size(), DOMINO_FLOAT32, -1};
          comm.allreduce(b, b, DOMINO_MAX);
          std::vector<float> all(data.size() * static_cast<size_t>(size));
          domino_buffer_t ab{all.data(), all.size(), DOMINO_FLOAT32, -1};
          comm.allgather(b, ab);
          for (int r = 0; r < size; ++r) {
            if (std::memcmp(all.data() + static_cast<size_t>(r) * data.size(), data.data(),
                            data.size() * sizeof(float)) != 0) {
              return "rank " + std::to_string(r) + " holds other bits";
            }
          }
          return "";
        },
        0, "recursive_doubling");
    for (int r = 0; r < size; ++r) EXPECT_EQ(outcomes[r].message, "") << "world " << size;
  }
}

TEST(UcxCollectives, ABadAlltoallSplitFailsBeforeAnythingIsPosted) {
  testing::UcxGroup group;
  const auto outcomes = group.run(2, 20000, [](int rank, UcxCommunicator& ucx) -> std::string {
    testing::CheckedComm comm{ucx};
    std::vector<int64_t> in(4, rank), out(4, -1);
    std::vector<uint64_t> sc = {2, 2}, so = {0, 2}, rc = {2, 2}, ro = {0, 2};
    if (rank == 1) {
      rc[1] = 1;  // expects less from itself than it sends itself
      try {
        comm.alltoall(buf(in), sc.data(), so.data(), buf(out), rc.data(), ro.data());
        return "accepted";
      } catch (const TransportError&) {
      }
      rc[1] = 2;
    }
    // Rank 0 went ahead; rank 1 retries correctly and both must still get the right data.
    comm.alltoall(buf(in), sc.data(), so.data(), buf(out), rc.data(), ro.data());
    const std::vector<int64_t> want = {0, 0, 1, 1};
    return expect_eq(out, want, "alltoall after a refused call");
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
}

}  // namespace
}  // namespace domino::ucx
