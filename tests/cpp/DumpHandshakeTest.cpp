// The Flight Recorder's dump handshake over an in-process store: a failing rank returns only
// once every watching rank of its group has dumped, silent ranks are named after the wait, and
// requests left by an earlier incarnation are not answered.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/DumpHandshake.h"

namespace domino {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// One store shared by every connection; closing it fails every call, as a lost server does.
struct SharedStore {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::string> values;
  bool closed = false;
  void close() {
    std::lock_guard<std::mutex> lock(mutex);
    closed = true;
    changed.notify_all();
  }
};

class MemoryStore final : public RequestStore {
 public:
  explicit MemoryStore(std::shared_ptr<SharedStore> shared) : shared_(std::move(shared)) {}
  bool claim(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    check_open();
    const bool claimed = shared_->values.emplace(key, value).second;
    shared_->changed.notify_all();
    return claimed;
  }
  void set(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    check_open();
    shared_->values[key] = value;
    shared_->changed.notify_all();
  }
  void append(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    check_open();
    shared_->values[key] += value;
    shared_->changed.notify_all();
  }
  std::optional<std::string> find(const std::string& key) override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    check_open();
    const auto found = shared_->values.find(key);
    if (found == shared_->values.end()) return std::nullopt;
    return found->second;
  }
  bool wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    const bool done = shared_->changed.wait_for(lock, timeout, [&] {
      if (shared_->closed) return true;
      for (const auto& key : keys) {
        if (!shared_->values.count(key)) return false;
      }
      return true;
    });
    check_open();
    return done;
  }

 private:
  void check_open() const {
    if (shared_->closed) throw std::runtime_error("the store is gone");
  }
  std::shared_ptr<SharedStore> shared_;
};

// A rank's handshake and what its dumps did. Handshakes are never destroyed (their threads may
// still read them); closing the store ends the threads.
struct Rank {
  DumpHandshake* handshake = nullptr;
  std::atomic<int> dumps{0};
  std::atomic<int64_t> first_dump_ns{0};
  std::chrono::milliseconds dump_takes{0};
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

class DumpHandshakeTest : public ::testing::Test {
 protected:
  void TearDown() override { store_->close(); }

  Rank& make_rank(int64_t rank, bool start = true) {
    auto* state = new Rank();  // outlives the handshake's thread
    state->handshake = new DumpHandshake(
        rank, std::make_unique<MemoryStore>(store_), std::make_unique<MemoryStore>(store_),
        [state](bool) {
          int64_t unset = 0;
          state->first_dump_ns.compare_exchange_strong(unset, now_ns());
          std::this_thread::sleep_for(state->dump_takes);
          ++state->dumps;
          return true;
        },
        [] { return std::make_shared<int>(0); });
    if (start) state->handshake->start(5s);
    return *state;
  }

  std::shared_ptr<SharedStore> store_ = std::make_shared<SharedStore>();
};

TEST(DumpRequestRecord, RoundTripsAndRefusesDamagedRecords) {
  const DumpRequest request{7, 2, {0, 1, 2, 10}, "rank 2 at 5: timed out; peers 1"};
  const auto back = decode_request(7, encode_request(request));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->from, 2);
  EXPECT_EQ(back->awaited, (std::vector<int64_t>{0, 1, 2, 10}));
  EXPECT_EQ(back->what, request.what);
  EXPECT_FALSE(decode_request(1, "domino/flight_recorder/dump"));
  EXPECT_FALSE(decode_request(1, "x;0,1;what"));
  EXPECT_FALSE(decode_request(1, "0;0,,1;what"));
  EXPECT_FALSE(decode_request(1, "0;-1;what"));
  EXPECT_FALSE(decode_request(1, "0;0,1"));
  EXPECT_FALSE(decode_request(1, "99999999999999999999;0;what"));
}

TEST_F(DumpHandshakeTest, TheFailingRankReturnsOnlyOnceEveryWatchingRankHasDumped) {
  Rank& failing = make_rank(0);
  Rank& slow = make_rank(1);
  Rank& other = make_rank(2);
  slow.dump_takes = 300ms;
  const int64_t asked = now_ns();
  const auto missing = failing.handshake->on_failure(true, {0, 1, 2}, "rank 0: timeout", 5s);
  EXPECT_TRUE(missing.empty());
  EXPECT_EQ(failing.dumps.load(), 1);
  EXPECT_EQ(slow.dumps.load(), 1) << "returned before the slow rank's dump was on disk";
  EXPECT_EQ(other.dumps.load(), 1);
  EXPECT_GE(now_ns() - asked, 300'000'000);
  // Seen at once, not at a poll's next turn.
  EXPECT_LT(other.first_dump_ns.load() - asked, 100'000'000);
}

TEST_F(DumpHandshakeTest, ARankThatDoesNotRecordIsNotAwaited) {
  Rank& failing = make_rank(0);
  make_rank(1);
  // Rank 2 has the Flight Recorder off: it never announced itself, and nobody waits for it.
  const auto begun = Clock::now();
  EXPECT_TRUE(failing.handshake->on_failure(true, {0, 1, 2}, "timeout", 5s).empty());
  EXPECT_LT(Clock::now() - begun, 2s);
}

TEST_F(DumpHandshakeTest, ASilentRankIsNamedOnceTheWaitIsOver) {
  Rank& failing = make_rank(0);
  make_rank(1);
  // Rank 2 announced itself but never answers (a process that died after its group was made).
  MemoryStore(store_).append(DumpHandshake::watching_key(), "2,");
  const auto begun = Clock::now();
  const auto missing = failing.handshake->on_failure(true, {0, 1, 2}, "timeout", 300ms);
  EXPECT_EQ(missing, std::vector<int64_t>{2});
  EXPECT_GE(Clock::now() - begun, 300ms);
  EXPECT_LT(Clock::now() - begun, 3s);
}

TEST_F(DumpHandshakeTest, AnEarlierIncarnationsRequestIsNotAnsweredAndNumbersGoOn) {
  MemoryStore(store_).set(DumpHandshake::request_key(1), "5;0,1;an earlier job's failure");
  Rank& failing = make_rank(0);
  Rank& peer = make_rank(1);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(peer.dumps.load(), 0);
  EXPECT_TRUE(failing.handshake->on_failure(true, {0, 1}, "timeout", 5s).empty());
  EXPECT_EQ(peer.dumps.load(), 1);
  EXPECT_TRUE(MemoryStore(store_).find(DumpHandshake::ack_key(2, 1)));
}

TEST_F(DumpHandshakeTest, TwoRanksFailingTogetherEachGetEveryAcknowledgement) {
  Rank& first = make_rank(0);
  Rank& skipper = make_rank(1);
  Rank& second = make_rank(2);
  skipper.dump_takes = 100ms;
  std::vector<int64_t> missing_first, missing_second;
  std::thread a([&] { missing_first = first.handshake->on_failure(true, {0, 1, 2}, "a", 5s); });
  std::thread b([&] { missing_second = second.handshake->on_failure(true, {0, 1, 2}, "b", 5s); });
  a.join();
  b.join();
  EXPECT_TRUE(missing_first.empty());
  EXPECT_TRUE(missing_second.empty());
  // One request or two (the second rank may find the first's already covering its group): each
  // was answered by every rank.
  MemoryStore view(store_);
  ASSERT_TRUE(view.find(DumpHandshake::request_key(1)));
  for (uint64_t number : {1, 2}) {
    if (!view.find(DumpHandshake::request_key(number))) continue;
    for (int64_t rank : {0, 1, 2}) {
      EXPECT_TRUE(view.find(DumpHandshake::ack_key(number, rank))) << number << " " << rank;
    }
  }
  EXPECT_GE(skipper.dumps.load(), 1);
}

TEST_F(DumpHandshakeTest, ASecondLaneFailingMeanwhileWaitsForTheFirstLanesRequest) {
  Rank& failing = make_rank(0);
  Rank& slow = make_rank(1);
  slow.dump_takes = 300ms;
  std::thread first([&] { failing.handshake->on_failure(true, {0, 1}, "lane high", 5s); });
  std::this_thread::sleep_for(20ms);
  // Within the same second: this lane posts nothing, and still must not return early.
  EXPECT_TRUE(failing.handshake->on_failure(false, {0, 1}, "lane normal", 5s).empty());
  EXPECT_EQ(slow.dumps.load(), 1);
  first.join();
}

TEST_F(DumpHandshakeTest, ARankThatMissedItsAcknowledgementIsNotAwaitedAgain) {
  Rank& failing = make_rank(0);
  make_rank(1);
  MemoryStore(store_).append(DumpHandshake::watching_key(), "2,");
  EXPECT_EQ(failing.handshake->on_failure(true, {0, 1, 2}, "first", 300ms),
            std::vector<int64_t>{2});
  const auto begun = Clock::now();
  EXPECT_TRUE(failing.handshake->on_failure(true, {0, 1, 2}, "second", 300ms).empty());
  EXPECT_LT(Clock::now() - begun, 250ms);
}

TEST_F(DumpHandshakeTest, NoWaitAsksAndReturnsAtOnce) {
  Rank& failing = make_rank(0);
  Rank& slow = make_rank(1);
  slow.dump_takes = 300ms;
  const auto begun = Clock::now();
  EXPECT_TRUE(failing.handshake->on_failure(true, {0, 1}, "timeout", 0ms).empty());
  EXPECT_LT(Clock::now() - begun, 250ms);
  EXPECT_EQ(failing.dumps.load(), 1);
  for (int i = 0; i < 200 && slow.dumps.load() == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(slow.dumps.load(), 1);  // asked all the same
}

TEST_F(DumpHandshakeTest, AFailureRightAfterADumpWaitsForTheRequestThatDumpAnswered) {
  Rank& requester = make_rank(0);
  Rank& slow = make_rank(1);
  Rank& answering = make_rank(2);
  slow.dump_takes = 400ms;
  std::thread request([&] { requester.handshake->on_failure(true, {0, 1, 2}, "timeout", 5s); });
  while (answering.dumps.load() == 0) std::this_thread::sleep_for(1ms);
  // Rank 2 answered a moment ago, so its own failure posts nothing; it still must not return
  // before the slow rank's dump is on disk.
  const auto missing = answering.handshake->on_failure(false, {0, 1, 2}, "timeout", 5s);
  EXPECT_TRUE(missing.empty());
  EXPECT_EQ(slow.dumps.load(), 1);
  request.join();
}

TEST_F(DumpHandshakeTest, AtExitARankWaitsForARequestItAnswered) {
  Rank& requester = make_rank(0);
  Rank& slow = make_rank(1);
  Rank& host = make_rank(2);  // say, the process that hosts the store
  slow.dump_takes = 300ms;
  std::thread request([&] { requester.handshake->on_failure(true, {0, 1, 2}, "timeout", 5s); });
  while (host.dumps.load() == 0) std::this_thread::sleep_for(1ms);
  host.handshake->finish();
  EXPECT_EQ(slow.dumps.load(), 1) << "the store's host left before every dump was on disk";
  request.join();
}

TEST_F(DumpHandshakeTest, ALostStoreEndsTheWatcherAndTheFailureStillDumps) {
  Rank& failing = make_rank(0, /*start=*/false);
  failing.handshake->start(1s);
  EXPECT_TRUE(failing.handshake->watching());
  store_->close();
  for (int i = 0; i < 200 && failing.handshake->watching(); ++i) std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(failing.handshake->watching());
  EXPECT_TRUE(failing.handshake->on_failure(true, {0, 1}, "timeout", 1s).empty());
  EXPECT_EQ(failing.dumps.load(), 1);
}

}  // namespace
}  // namespace domino
