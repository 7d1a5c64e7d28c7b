// Shared memory's paths as registered in the algorithm table (plugins/shm/ShmAlgorithms.h): the
// names each op has, what runs when no name is handed down (today's choice at every size), each
// named path's results, and the refusals of names that cannot run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugins/common/TransportError.h"
#include "plugins/registry/Communicator.h"
#include "plugins/shm/ShmAlgorithms.h"
#include "plugins/shm/ShmCommunicator.h"
#include "support/CollectiveChecks.h"
#include "support/ShmGroup.h"
#include "topology/AlgorithmTable.h"

namespace domino::shm {
namespace {

using topology::AlgorithmHome;
using topology::Collective;

TEST(ShmPaths, EachOpHasTheNamesItHadAndEachNameABody) {
  // The names the router hands down through the plugin ABI: unchanged.
  const std::vector<std::pair<Collective, std::string>> names = {
      {Collective::kAllReduce, "direct, rsag, single_copy"},
      {Collective::kBroadcast, "segment"},
      {Collective::kReduce, "segment"},
      {Collective::kAllGather, "segment, single_copy"},
      {Collective::kReduceScatter, "segment, single_copy"},
      {Collective::kGather, "segment"},
      {Collective::kScatter, "segment"},
      {Collective::kAllToAll, "segment"},
      {Collective::kBarrier, "segment"}};
  for (const auto& [op, expected] : names) {
    EXPECT_EQ(topology::algorithm_names(topology::collective_name(op), AlgorithmHome::kShm),
              expected);
  }
  for (const topology::AlgorithmEntry& entry : topology::algorithm_table()) {
    if (entry.home != AlgorithmHome::kShm) continue;
    ASSERT_EQ(entry.ops.size(), 1u) << entry.name;
    EXPECT_NE(entry.seconds, nullptr) << entry.name;
    bool found = false;
    for (Collective op : topology::kCollectives) {
      if (entry.ops.front() != topology::collective_name(op)) continue;
      found = true;
      EXPECT_NE(find_shm_body(op, entry.name), nullptr) << entry.name << " " << entry.ops.front();
    }
    EXPECT_TRUE(found) << entry.name << " serves '" << entry.ops.front() << "'";
  }
  EXPECT_EQ(find_shm_body(Collective::kAllGather, "direct"), nullptr);
}

TEST(ShmPaths, OnlySingleCopyIsMarkedAsNotRunningEverywhere) {
  topology::TransportCost cost;
  cost.cpus = 8;
  for (const topology::AlgorithmEntry& entry : topology::algorithm_table()) {
    if (entry.home != AlgorithmHome::kShm) continue;
    EXPECT_EQ(entry.runs != nullptr, entry.name == "single_copy") << entry.name;
    if (entry.runs == nullptr) continue;
    EXPECT_TRUE(entry.runs(8, cost)) << entry.ops.front();
    EXPECT_FALSE(entry.runs(9, cost)) << entry.ops.front();  // more ranks than CPUs
    topology::TransportCost off = cost;
    off.single_copy = false;
    EXPECT_FALSE(entry.runs(2, off)) << entry.ops.front();
  }
}

// What shared memory ran before its paths were registered, handed no name: ShmSingleCopy.cpp's
// single_copy_pays (on the whole message) and ShmCommunicator.cpp's 32 KiB small-message edge.
// (A slot smaller than 32 KiB sends direct's larger messages by slices, in its body, as before.)
std::string old_rule(Collective op, int ranks, size_t bytes, int cores, bool single_copy) {
  const bool fits_cores = ranks <= cores;
  const size_t whole = bytes * static_cast<size_t>(ranks);
  switch (op) {
    case Collective::kAllReduce:
      if (single_copy && fits_cores && bytes > (size_t{1} << 20) && bytes <= (size_t{64} << 20))
        return "single_copy";
      return bytes <= (size_t{32} << 10) ? "direct" : "rsag";
    case Collective::kAllGather: {
      const bool pays = fits_cores ? whole > (size_t{64} << 10)
                                   : whole > (size_t{256} << 10) && whole <= (size_t{16} << 20);
      return single_copy && pays ? "single_copy" : "segment";
    }
    case Collective::kReduceScatter:
      return single_copy && fits_cores && whole > (size_t{64} << 10) ? "single_copy" : "segment";
    default:
      return "segment";
  }
}

TEST(ShmPaths, HandedNoNameTheyRunWhatTheOldRuleRanAtEverySize) {
  // Messages as the router sizes them: 8 B to 256 MiB, each power of two and its neighbours,
  // and, for the ops sized by one rank's block, the blocks around each edge of the whole.
  std::vector<size_t> sizes;
  for (size_t b = 8; b <= (size_t{256} << 20); b *= 2) {
    for (size_t s : {b - 4, b, b + 4}) sizes.push_back(s);
  }
  int compared = 0;
  for (int ranks = 2; ranks <= 8; ++ranks) {
    std::vector<size_t> all = sizes;
    for (size_t edge : {size_t{64} << 10, size_t{256} << 10, size_t{16} << 20}) {
      for (size_t s : {edge / ranks - 1, edge / ranks, edge / ranks + 1}) all.push_back(s);
    }
    for (int cpus : {1, ranks - 1, ranks, ranks + 1, 64}) {
      for (bool single_copy : {true, false}) {
        const topology::TransportCost cost = shm_own_cost(cpus, single_copy);
        for (Collective op : topology::kCollectives) {
          for (size_t bytes : all) {
            const topology::AlgorithmEntry* chosen =
                shm_own_choice(op, ranks, static_cast<double>(bytes), cost);
            ASSERT_NE(chosen, nullptr) << topology::collective_name(op);
            ASSERT_EQ(std::string(chosen->name), old_rule(op, ranks, bytes, cpus, single_copy))
                << topology::collective_name(op) << " of " << bytes << " B among " << ranks
                << " ranks, " << cpus << " CPUs, single-copy " << single_copy;
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 10000);
}

using testing::buf;
using testing::v;

std::string refusal(ShmCommunicator& comm, domino_call_t call, const char* name) {
  try {
    comm.collective(call, name);
  } catch (const TransportError& e) {
    return std::to_string(e.status()) + ": " + e.what();
  }
  return std::string("ran ") + (name != nullptr ? name : "nothing named");
}

TEST(ShmPaths, ANameTheOpLacksOrUnreadablePeersAreRefusedBeforeAnyMessage) {
  testing::ShmGroup group;
  const auto outcomes = group.run(
      2, 30000,
      [](int rank, ShmCommunicator& comm) {
        std::vector<int64_t> in(1024, 1), out(2048, 0);
        domino_buffer_t send = buf(in), recv = buf(out), whole = buf(in);
        std::string said;
        said += refusal(comm, make_call(Collective::kAllReduce, whole, whole), "bogus") + "\n";
        said += refusal(comm, make_call(Collective::kAllGather, send, recv), "direct") + "\n";
        said += refusal(comm, make_call(Collective::kAllReduce, whole, whole), "segment") + "\n";
        said +=
            refusal(comm, make_call(Collective::kAllReduce, whole, whole), "single_copy") + "\n";
        said += refusal(comm, make_call(Collective::kAllGather, send, recv), "single_copy") + "\n";
        domino_call_t unknown = make_call(Collective::kBarrier, send, recv);
        unknown.op = 42;
        said += refusal(comm, unknown, nullptr) + "\n";
        // No rank sent anything: the group runs on.
        comm.collective(make_call(Collective::kAllReduce, whole, whole), "rsag");
        if (in[0] != 2) {
          return "after the refusals rank " + std::to_string(rank) + " summed " +
                 std::to_string(in[0]);
        }
        return said;
      },
      0, nullptr, [](int, domino_comm_config_t& config) { config.single_copy = -1; });
  for (int r = 0; r < 2; ++r) {
    const std::string group_label =
        "group 'unit' (global ranks 0,1; this is group rank " + std::to_string(r) + ")";
    const std::string unsupported = std::to_string(DOMINO_ERR_UNSUPPORTED) + ": shm ";
    EXPECT_EQ(outcomes[r].exit_code, 0) << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message,
              unsupported + "allreduce on " + group_label + " has no algorithm 'bogus'\n" +
                  unsupported + "allgather on " + group_label + " has no algorithm 'direct'\n" +
                  unsupported + "allreduce on " + group_label + " has no algorithm 'segment'\n" +
                  unsupported + "allreduce on " + group_label +
                  " cannot read its peers' memory (single_copy)\n" + unsupported + "allgather on " +
                  group_label + " cannot read its peers' memory (single_copy)\n" + unsupported +
                  "? on " + group_label + " cannot run op 42\n");
  }
}

std::string run_named(int rank, int size, ShmCommunicator& comm, Collective op, const char* name,
                      size_t count) {
  const std::string where =
      std::string(topology::collective_name(op)) + " by " + name + " of " + std::to_string(count);
  const size_t blocks = static_cast<size_t>(size);
  std::vector<int64_t> in(op == Collective::kReduceScatter ? count * blocks : count);
  for (size_t i = 0; i < in.size(); ++i) in[i] = v(rank, i);
  std::vector<int64_t> out(op == Collective::kAllGather ? count * blocks : count, -1);
  std::vector<int64_t> want(out.size(), 0);
  for (size_t i = 0; i < want.size(); ++i) {
    for (int r = 0; r < size; ++r) {
      if (op == Collective::kAllReduce) want[i] += v(r, i);
      if (op == Collective::kReduceScatter) want[i] += v(r, static_cast<size_t>(rank) * count + i);
    }
    if (op == Collective::kAllGather) want[i] = v(static_cast<int>(i / count), i % count);
  }
  domino_buffer_t send = buf(in), recv = buf(out);
  comm.collective(make_call(op, send, recv, DOMINO_SUM), name);
  return testing::expect_eq(out, want, where.c_str());
}

TEST(ShmPaths, EveryNamedPathGivesTheReferenceResult) {
  testing::ShmGroup group;
  constexpr int kSize = 3;
  const auto outcomes = group.run(
      kSize, 60000,
      [](int rank, ShmCommunicator& comm) {
        const size_t slot_elements = comm.slot_bytes() / sizeof(int64_t);
        const std::vector<std::pair<Collective, std::vector<const char*>>> paths = {
            {Collective::kAllReduce, {"direct", "rsag", "single_copy"}},
            {Collective::kAllGather, {"segment", "single_copy"}},
            {Collective::kReduceScatter, {"segment", "single_copy"}}};
        for (const auto& [op, names] : paths) {
          for (const char* name : names) {
            if (std::string(name) == "single_copy" && !comm.single_copy()) continue;
            // One round, and several chunks (direct's too: beyond a slot it goes by slices).
            for (size_t count : {size_t{0}, size_t{1000}, 2 * slot_elements + 17}) {
              const std::string error = run_named(rank, kSize, comm, op, name, count);
              if (!error.empty()) return error;
            }
          }
        }
        return std::string();
      },
      size_t{1} << 20);
  for (int r = 0; r < kSize; ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << outcomes[r].message;
    EXPECT_EQ(outcomes[r].message, "") << "rank " << r;
  }
}

}  // namespace
}  // namespace domino::shm
