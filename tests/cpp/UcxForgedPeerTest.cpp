// What a UCX communicator decodes from its peers is checked before it is used (issue 36): a rank
// read from a message's tag that the group does not have, and an empty address in the store. A
// forging process joins the group's message id (same name, same draw from the store) claiming to
// be rank 5 of 6, while the real group has 2 ranks.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "plugins/common/Bootstrap.h"
#include "plugins/common/TransportError.h"
#include "plugins/ucx/UcxWorker.h"
#include "support/CollectiveChecks.h"
#include "support/ShmGroup.h"

namespace domino::ucx {
namespace {

using namespace std::chrono_literals;
using testing::buf;

constexpr int kForgedRank = 5;

// Fork rank 1 forges rank 5 of 6: it stands in rank 0's address for ranks 1 to 4, so that
// rank 0 (of 2) and the forger both finish their set-up.
void forge(testing::UcxGroup& group, int rank, domino_comm_config_t& config) {
  if (rank != 1) return;
  testing::FileBootstrap store(group.directory);
  const Bootstrap bootstrap(store.table());
  const std::string rank0 = bootstrap.get("ucx/0", 20s, 64 * 1024);
  for (int r = 1; r < kForgedRank; ++r) bootstrap.set("ucx/" + std::to_string(r), rank0);
  config.rank = kForgedRank;
  config.size = kForgedRank + 1;
}

// Moves UCX's queues for a while, so messages this process sent leave before it exits.
void progress_for(std::chrono::milliseconds duration) {
  Transfer idle;
  const auto until = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < until) {
    UcxWorker::instance().landed(idle);
    std::this_thread::sleep_for(1ms);
  }
}

TEST(UcxForgedPeer, AnAnySourceMessageFromARankOutsideTheGroupIsRefused) {
  testing::UcxGroup group;
  const auto outcomes = group.run(
      2, 20000,
      [](int rank, UcxCommunicator& comm) -> std::string {
        std::vector<int64_t> data(16, 1);
        if (rank == 1) {
          comm.send(buf(data), 0, 7);
          return "";
        }
        try {
          const int source = comm.recv(buf(data), -1, 7);
          return "recv returned sender " + std::to_string(source) + " of a group of 2";
        } catch (const TransportError& e) {
          return e.what();
        }
      },
      0, nullptr, [&](int rank, domino_comm_config_t& config) { forge(group, rank, config); });
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[1].message, "");
  const std::string& said = outcomes[0].message;
  EXPECT_NE(said.find("ucx recv on group 'unit' (rank 0 of 2): the message's tag names rank 5 "
                      "(not a rank of this group of 2)"),
            std::string::npos)
      << said;
}

TEST(UcxForgedPeer, ANoticeFromARankOutsideTheGroupNamesThatRankWithoutReadingPastTheGroup) {
  testing::UcxGroup group;
  const auto outcomes = group.run(
      2, 20000,
      [](int rank, UcxCommunicator& comm) -> std::string {
        std::vector<int64_t> data(16, 1);
        if (rank == 1) {
          comm.abort();  // tells "every peer", rank 0 among them, that rank 5 ended the group
          progress_for(2s);
          return "";
        }
        try {
          comm.recv(buf(data), 1, 9);  // never sent: the notice ends it
          return "recv returned";
        } catch (const TransportError& e) {
          return e.what();
        }
      },
      0, nullptr, [&](int rank, domino_comm_config_t& config) { forge(group, rank, config); });
  ASSERT_EQ(outcomes.size(), 2u);
  const std::string& said = outcomes[0].message;
  EXPECT_NE(said.find("rank 5 (not a rank of this group of 2) ended the group's communication"),
            std::string::npos)
      << said;
}

TEST(UcxForgedPeer, AnEmptyAddressInTheStoreIsRefusedAtSetUp) {
  testing::UcxGroup group;
  const auto outcomes = group.run(
      1, 5000, [](int, UcxCommunicator&) { return std::string("set-up accepted it"); }, 0, nullptr,
      [&](int, domino_comm_config_t& config) {
        testing::FileBootstrap store(group.directory);
        Bootstrap(store.table()).set("ucx/1", "");
        config.size = 2;
      });
  ASSERT_EQ(outcomes.size(), 1u);
  const std::string& said = outcomes[0].message;
  EXPECT_NE(said.find("rank 1 (global 1) published an empty UCX address"), std::string::npos)
      << said;
}

}  // namespace
}  // namespace domino::ucx
