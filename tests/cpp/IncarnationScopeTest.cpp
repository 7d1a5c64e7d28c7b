// The scope a group's ranks agree on at init, over a store that still holds a dead earlier
// incarnation's keys: every rank lands in the new scope, whichever starts first, and a rank whose
// rank 0 never comes is told so at its timeout.
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "backend/IncarnationScope.h"

namespace domino {
namespace {

using std::chrono::milliseconds;

std::vector<uint8_t> bytes(const std::string& text) {
  return {text.begin(), text.end()};
}

// Ranks 1..size-1 start `head_start` before rank 0; returns every rank's scope.
std::vector<std::string> agree(c10d::Store& store, int size, milliseconds head_start) {
  std::vector<std::future<std::string>> others;
  for (int rank = 1; rank < size; ++rank) {
    others.push_back(std::async(std::launch::async, [&store, rank, size] {
      return incarnation_scope(store, rank, size, milliseconds(20000), "test");
    }));
  }
  std::this_thread::sleep_for(head_start);
  std::vector<std::string> scopes{incarnation_scope(store, 0, size, milliseconds(20000), "test")};
  for (auto& other : others) scopes.push_back(other.get());
  return scopes;
}

// Ranks 1 and 2 start 600 ms before rank 0, over a store holding the dead scope "domino/old".
void expect_one_new_scope(c10d::Store& store) {
  const auto scopes = agree(store, 3, milliseconds(600));
  EXPECT_NE(scopes[0], "domino/old");
  for (const auto& scope : scopes) EXPECT_EQ(scope, scopes[0]);
}

TEST(IncarnationScope, RanksThatReadADeadIncarnationsScopeFirstStillJoinTheNewOne) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  // What a SIGKILLed first incarnation left: its scope, and its answers to ranks 1 and 2.
  store->set("domino/incarnation", bytes("domino/old"));
  store->set("domino/old/welcome/1", bytes("the dead incarnation's token"));
  store->set("domino/old/welcome/2", bytes("another dead token"));
  expect_one_new_scope(*store);
}

TEST(IncarnationScope, AStaleScopeWithoutAnswersIsLeftToo) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->set("domino/incarnation", bytes("domino/old"));
  expect_one_new_scope(*store);
}

TEST(IncarnationScope, TwoIncarnationsInARowGetTwoScopes) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  const auto first = agree(*store, 2, milliseconds(0));
  const auto second = agree(*store, 2, milliseconds(300));
  EXPECT_EQ(first[0], first[1]);
  EXPECT_EQ(second[0], second[1]);
  EXPECT_NE(first[0], second[0]);
}

TEST(IncarnationScope, ARankWhoseRankZeroNeverComesIsToldAtItsTimeout) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->set("domino/incarnation", bytes("domino/old"));
  const auto began = std::chrono::steady_clock::now();
  try {
    incarnation_scope(*store, 1, 2, milliseconds(1500), "group 'g' (rank 1 of 2)");
    FAIL() << "joined a dead incarnation";
  } catch (const c10::DistBackendError& e) {
    const std::string message = e.what_without_backtrace();
    EXPECT_NE(message.find("group 'g' (rank 1 of 2)"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 0 did not admit this rank within 1.5 s"), std::string::npos)
        << message;
    EXPECT_NE(message.find("domino/old"), std::string::npos) << message;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
}

}  // namespace
}  // namespace domino
