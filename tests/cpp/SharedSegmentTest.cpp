#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <set>

#include "plugins/common/TransportError.h"
#include "plugins/shm/FdHandoff.h"
#include "plugins/shm/SharedSegment.h"
#include "support/ForkRanks.h"

namespace domino::shm {
namespace {

std::set<std::string> dev_shm_entries() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
    names.insert(e.path().string());
  return names;
}

Deadline in_seconds(int s) {
  return std::chrono::steady_clock::now() + std::chrono::seconds(s);
}

TEST(SharedSegment, IsPrivateZeroedAndLeavesNoName) {
  const auto before = dev_shm_entries();
  {
    SharedSegment segment = SharedSegment::create(1 << 20, "unit");
    struct stat st {};
    ASSERT_EQ(fstat(segment.fd(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(segment.size(), 1u << 20);
    const auto* bytes = static_cast<const unsigned char*>(segment.data());
    EXPECT_EQ(bytes[0], 0);
    EXPECT_EQ(bytes[(1 << 20) - 1], 0);
    EXPECT_EQ(dev_shm_entries(), before);
  }
  EXPECT_EQ(dev_shm_entries(), before);
}

TEST(SharedSegment, MovesOwnership) {
  SharedSegment a = SharedSegment::create(4096, "unit");
  void* data = a.data();
  SharedSegment b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data(), data);
}

TEST(FdHandoff, PeersMapTheSameMemory) {
  SharedSegment segment = SharedSegment::create(4096, "unit");
  FdServer server;
  const std::string ticket = server.ticket();
  // The children inherit the ticket, as ranks would read it from the store.
  std::thread serve([&] { server.serve(segment.fd(), 2, in_seconds(20)); });
  const auto outcomes = testing::fork_ranks(2, [&](int rank) {
    SharedSegment mine = SharedSegment::adopt(receive_fd(ticket, in_seconds(20)));
    static_cast<char*>(mine.data())[rank] = static_cast<char>('a' + rank);
    return std::string();
  });
  serve.join();
  for (const auto& o : outcomes) EXPECT_EQ(o.exit_code, 0) << o.message;
  EXPECT_EQ(static_cast<char*>(segment.data())[0], 'a');
  EXPECT_EQ(static_cast<char*>(segment.data())[1], 'b');
}

TEST(FdHandoff, AWrongTokenIsRefused) {
  SharedSegment segment = SharedSegment::create(4096, "unit");
  FdServer server;
  std::string forged = server.ticket();
  forged.back() = forged.back() == '0' ? '1' : '0';
  std::thread serve(
      [&] { EXPECT_THROW(server.serve(segment.fd(), 1, in_seconds(2)), TransportError); });
  EXPECT_THROW(receive_fd(forged, in_seconds(2)), TransportError);
  serve.join();
}

TEST(FdHandoff, ServerTimesOutSayingHowManyArrived) {
  SharedSegment segment = SharedSegment::create(4096, "unit");
  FdServer server;
  try {
    server.serve(segment.fd(), 3,
                 std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
    FAIL();
  } catch (const TransportError& e) {
    EXPECT_EQ(e.status(), DOMINO_ERR_TIMEOUT);
    EXPECT_NE(std::string(e.what()).find("0 of 3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace domino::shm
