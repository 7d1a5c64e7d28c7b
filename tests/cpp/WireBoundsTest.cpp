// Issue 36, after Gloo PR #509: whatever another process wrote (a segment's header, ring
// counters, a broken group's reason, a handoff ticket, a rendezvous value, rank 0's byte counts)
// is checked before it sizes a copy or an index. Each test feeds one decoder a value that is
// truncated, larger than its buffer, or wraps, and expects a bounded error saying what was wrong,
// never a copy past the buffer or a silently wrong size.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "config/Settings.h"
#include "plugins/common/Bootstrap.h"
#include "plugins/common/TransportError.h"
#include "plugins/shm/FdHandoff.h"
#include "plugins/shm/GroupBarrier.h"
#include "plugins/shm/PointToPoint.h"
#include "plugins/shm/SegmentLinks.h"
#include "plugins/shm/SharedSegment.h"
#include "support/CheckedComm.h"
#include "support/FileBootstrap.h"
#include "support/LocalSegment.h"
#include "support/ShmGroup.h"

namespace domino {
namespace {

using namespace std::chrono_literals;
using testing::LocalSegment;

// The message of the TransportError fn throws ("" when it returns); its status in *status.
template <class Fn>
std::string transport_error(Fn&& fn, domino_status_t* status = nullptr) {
  try {
    fn();
  } catch (const TransportError& e) {
    if (status != nullptr) *status = e.status();
    return e.what();
  }
  return "";
}

bool says(const std::string& message, const std::string& part) {
  return message.find(part) != std::string::npos;
}

// --- The segment's header, as a rank other than 0 receives it ---

// Rank 0's header for `size` ranks with these slot and ring sizes.
void write_header(shm::SegmentHeader* header, int size, uint64_t slot_bytes, uint64_t ring_bytes) {
  const shm::SegmentGeometry geometry = shm::segment_geometry(size, slot_bytes, ring_bytes).value();
  header->magic = shm::kSegmentMagic;
  header->size = size;
  header->slot_bytes = slot_bytes;
  header->channel_bytes = ring_bytes;
  header->payload_offset = geometry.payload_offset;
  header->channel_offset = geometry.channel_offset;
  header->link_offset = geometry.link_offset;
}

// A header in memory of its own: only the header is read, whatever size the mapping claims.
struct ReceivedHeader {
  struct alignas(shm::kPage) Page {
    std::byte bytes[shm::kPage];
  };
  std::vector<Page> pages;
  shm::SegmentHeader* header;
  explicit ReceivedHeader(int size)
      : pages(shm::control_bytes(size) / shm::kPage),
        header(new (pages.data()) shm::SegmentHeader()) {
    write_header(header, size, shm::kMinSlotBytes, LocalSegment::kRing);
  }
  size_t total_bytes() const {
    return shm::segment_geometry(header->size, header->slot_bytes, header->channel_bytes)
        ->total_bytes;
  }
};

TEST(WireBounds, ASegmentHeaderAsRank0WritesItIsAccepted) {
  const ReceivedHeader received(4);
  EXPECT_EQ(shm::segment_header_problem(received.header, received.total_bytes(), 4), "");
}

TEST(WireBounds, ASegmentShorterThanItsHeaderAndControlsIsRefusedBeforeItIsRead) {
  const ReceivedHeader received(4);
  const std::string problem = shm::segment_header_problem(received.header, 100, 4);
  EXPECT_TRUE(says(problem, "it is 100 bytes, less than the")) << problem;
}

TEST(WireBounds, ASegmentShorterThanTheLayoutItsHeaderDescribesIsRefused) {
  const ReceivedHeader received(4);
  const size_t short_by_one = received.total_bytes() - 1;
  const std::string problem = shm::segment_header_problem(received.header, short_by_one, 4);
  EXPECT_TRUE(says(problem, "truncated")) << problem;
}

TEST(WireBounds, SlotsWhoseLayoutWrapsTheAddressSpaceAreRefused) {
  // 2 ranks x 2 slots of 2^62 bytes is 2^64: wrapped, every offset lands back inside the mapping.
  ReceivedHeader received(2);
  shm::SegmentHeader* header = received.header;
  header->slot_bytes = uint64_t{1} << 62;
  header->channel_offset = header->payload_offset + 4 * header->slot_bytes;  // wraps
  const size_t channels = 4 * shm::channel_stride(header->channel_bytes);
  header->link_offset = header->channel_offset + channels;
  const size_t wrapped_total = header->link_offset + channels;
  const std::string problem = shm::segment_header_problem(header, wrapped_total, 2);
  EXPECT_TRUE(says(problem, "overflow the address space")) << problem;
}

TEST(WireBounds, EmptyOrMisalignedSlotsAndRingsAreRefused) {
  ReceivedHeader received(2);
  received.header->channel_bytes = 0;  // every ring index would divide by it
  std::string problem = shm::segment_header_problem(received.header, 1 << 30, 2);
  EXPECT_TRUE(says(problem, "its rings are 0 bytes")) << problem;
  received.header->channel_bytes = LocalSegment::kRing;
  received.header->slot_bytes = 8;  // a round's chunk would hold no element for each rank
  problem = shm::segment_header_problem(received.header, 1 << 30, 2);
  EXPECT_TRUE(says(problem, "its payload slots are 8 bytes")) << problem;
}

TEST(WireBounds, OffsetsOtherThanTheLayoutsAreRefused) {
  ReceivedHeader received(2);
  received.header->link_offset = ~uint64_t{0} - 100;  // past any mapping
  const std::string problem = shm::segment_header_problem(received.header, 1 << 30, 2);
  EXPECT_TRUE(says(problem, "its offsets")) << problem;
}

TEST(WireBounds, ARankRefusesASegmentFromRank0WhoseLayoutRunsPastItsEnd) {
  // This test plays rank 0: its segment is one page, its header describes megabytes of slots.
  const std::string directory = testing::make_temp_directory();
  shm::SharedSegment segment = shm::SharedSegment::create(shm::control_bytes(2), "unit");
  write_header(new (segment.data()) shm::SegmentHeader(), 2, 1 << 20, 128 << 10);
  shm::FdServer server;
  testing::FileBootstrap store(directory);
  const std::string ticket = server.ticket();
  store.table()->set(store.table()->context, "shm/ticket", ticket.data(), ticket.size(), nullptr,
                     0);
  std::thread serve([&] {
    try {
      server.serve(segment.fd(), 1, std::chrono::steady_clock::now() + 10s);
    } catch (const TransportError&) {
    }
  });
  domino_comm_config_t config{};
  config.rank = 1;
  config.size = 2;
  config.group_name = "unit";
  config.timeout_ms = 1000;
  config.bootstrap = store.table();
  const std::string said = transport_error([&] { shm::ShmCommunicator comm(config); });
  serve.join();
  std::filesystem::remove_all(directory);
  EXPECT_TRUE(says(said, "the segment rank 0 handed to group 'unit'")) << said;
  EXPECT_TRUE(says(said, "truncated")) << said;
}

// --- Ring counters: the peer at the other end writes one of each pair ---

// What PointToPoint::send puts ahead of a payload.
struct SentHeader {
  int32_t tag;
  uint32_t reserved;
  uint64_t bytes;
};

// The segment's bytes from the end of the ring from -> to onwards.
std::vector<std::byte> past_ring(const LocalSegment& segment, int from, int to) {
  const auto* end = reinterpret_cast<const std::byte*>(
      shm::channel_ring(segment.channel(from, to)) + LocalSegment::kRing);
  return {end, segment.memory.data() + segment.memory.size()};
}

constexpr size_t kSlack = 64 << 10;  // where an overrun of the tests' rings lands, in memory

TEST(WireBounds, ARecvWhoseSenderClaimsMoreThanTheRingHoldsFailsBeforeCopying) {
  LocalSegment segment(2, kSlack);
  shm::GroupBarrier health(segment.header, 1, 2, "group 'unit'");
  shm::PointToPoint receiver(segment.header, 1, 2, &health, "group 'unit'", 5s);
  shm::ChannelControl* channel = segment.channel(0, 1);
  const SentHeader sent{7, 0, 2 * LocalSegment::kRing};
  std::memcpy(shm::channel_ring(channel), &sent, sizeof sent);
  channel->written.store(uint64_t{1} << 40);  // a terabyte "in flight" in a 4 KiB ring
  std::vector<char> into(sent.bytes);
  domino_status_t status = DOMINO_OK;
  const std::string said =
      transport_error([&] { receiver.recv(into.data(), into.size(), 0, 7); }, &status);
  EXPECT_EQ(status, DOMINO_ERR_PEER);
  EXPECT_TRUE(says(said, "recv on group 'unit': the ring from rank 0 to rank 1 says " +
                             std::to_string(uint64_t{1} << 40) + " bytes are in flight"))
      << said;
  EXPECT_TRUE(health.broken());
}

TEST(WireBounds, ASendWhoseReceiverReadAheadOfItFailsWithoutWritingPastTheRing) {
  LocalSegment segment(2, kSlack);
  shm::GroupBarrier health(segment.header, 0, 2, "group 'unit'");
  shm::PointToPoint sender(segment.header, 0, 2, &health, "group 'unit'", 5s);
  segment.channel(0, 1)->read.store(uint64_t{1} << 20);  // read a MiB never written
  const std::vector<std::byte> before = past_ring(segment, 0, 1);
  const std::vector<char> payload(3 * LocalSegment::kRing, '\xab');
  const std::string said =
      transport_error([&] { sender.send(payload.data(), payload.size(), 1, 7); });
  EXPECT_TRUE(says(said, "send on group 'unit': the ring from rank 0 to rank 1")) << said;
  EXPECT_TRUE(past_ring(segment, 0, 1) == before) << "the send wrote past its ring";
}

TEST(WireBounds, ALinkReceiveWhoseSenderClaimsMoreThanTheRingHoldsFailsBeforeCopying) {
  LocalSegment segment(2, kSlack);
  shm::GroupBarrier health(segment.header, 1, 2, "group 'unit'");
  shm::SegmentLinks links(segment.header, 1, 2, &health, "group 'unit'", 5s);
  shm::ChannelControl* channel = segment.channel(0, 1);  // the links share the rings here
  const uint64_t length = 2 * LocalSegment::kRing;
  std::memcpy(shm::channel_ring(channel), &length, sizeof length);
  channel->written.store(uint64_t{1} << 40);
  std::vector<char> into(length);
  links.post_recv(0, into.data(), into.size());
  domino_status_t status = DOMINO_OK;
  const std::string said = transport_error([&] { links.wait(); }, &status);
  EXPECT_EQ(status, DOMINO_ERR_PEER);
  EXPECT_TRUE(says(said, "shm links on group 'unit': the ring from rank 0 to rank 1")) << said;
  EXPECT_TRUE(health.broken());
}

TEST(WireBounds, ALinkSendWhoseReceiverReadAheadOfItFailsWithoutWritingPastTheRing) {
  LocalSegment segment(2, kSlack);
  shm::GroupBarrier health(segment.header, 0, 2, "group 'unit'");
  shm::SegmentLinks links(segment.header, 0, 2, &health, "group 'unit'", 5s);
  segment.channel(0, 1)->read.store(uint64_t{1} << 20);
  const std::vector<std::byte> before = past_ring(segment, 0, 1);
  const std::vector<char> payload(3 * LocalSegment::kRing, '\xab');
  links.post_send(1, payload.data(), payload.size());
  const std::string said = transport_error([&] { links.wait(); });
  EXPECT_TRUE(says(said, "the ring from rank 0 to rank 1")) << said;
  EXPECT_TRUE(past_ring(segment, 0, 1) == before) << "the link send wrote past its ring";
}

TEST(WireBounds, ABrokenGroupsReasonWithoutItsEndIsReadOnlyToTheEndOfItsArray) {
  LocalSegment segment(2);
  shm::SegmentHeader* header = segment.header;
  // A peer wrote past the reason's last byte: over the padding and rank 0's first cache line.
  char* reason = header->broken_reason;
  char* beyond = reinterpret_cast<char*>(&shm::rank_controls(header)[0]) + shm::kCacheLine;
  std::memset(reason, 'x', static_cast<size_t>(beyond - reason));
  header->broken.store(2);
  const shm::GroupBarrier health(header, 1, 2, "group 'unit'");
  EXPECT_EQ(health.broken_reason(), std::string(sizeof header->broken_reason, 'x'));
}

// --- The handoff ticket and rendezvous values, read from the store ---

TEST(WireBounds, AHandoffTicketNamingASocketLongerThanAnAddressHoldsIsRefused) {
  const std::string ticket = std::string(200, 'n') + "/token";
  // Its own process: an overrun of the socket address would take the test binary down.
  const auto outcomes = testing::fork_ranks(
      1,
      [&](int) {
        return transport_error(
            [&] { shm::receive_fd(ticket, std::chrono::steady_clock::now() + 1s); });
      },
      20s);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].exit_code, 0) << outcomes[0].message;
  EXPECT_TRUE(says(outcomes[0].message, "rank 0's ticket names a socket of 200 bytes"))
      << outcomes[0].message;
}

TEST(WireBounds, ARendezvousValueLargerThanItsBufferIsRefused) {
  // A bootstrap table that reports more bytes than the buffer it was given holds.
  static const domino_bootstrap_t lying{
      nullptr, [](void*, const char*, const void*, size_t, char*, size_t) { return 0; },
      [](void*, const char*, void* data, size_t capacity, size_t* size, int64_t, char*, size_t) {
        std::memset(data, 'v', capacity);
        *size = capacity + 100;
        return 0;
      }};
  const Bootstrap bootstrap(&lying);
  const std::string said = transport_error([&] { bootstrap.get("ucx/draw", 1s, 64); });
  EXPECT_TRUE(says(said, "get('ucx/draw') reported 164 bytes for a buffer of 64")) << said;
}

TEST(WireBounds, AByteCountThatWrapsSixtyFourBitsIsRefused) {
  // Rank 0's DOMINO_* values are adopted by every rank: 2^34 GiB is 2^64 bytes, which wrapped to 0.
  EXPECT_THROW(parse_bytes("DOMINO_SHM_BYTES", "17179869184G"), ConfigError);
  EXPECT_THROW(parse_bytes("DOMINO_SHM_BYTES", "999999999999999G"), ConfigError);
  EXPECT_EQ(parse_bytes("DOMINO_SHM_BYTES", "17179869183G"), uint64_t{17179869183} << 30);
}

// --- A split whose offset plus count wraps ---

TEST(WireBounds, AnAlltoallSplitWhoseOffsetPlusCountWrapsIsRefused) {
  testing::ShmGroup group;
  const auto outcomes = group.run(1, 5000, [](int, shm::ShmCommunicator& comm) {
    std::vector<float> in(4), out(4);
    const domino_buffer_t send{in.data(), in.size(), DOMINO_FLOAT32, -1};
    const domino_buffer_t recv{out.data(), out.size(), DOMINO_FLOAT32, -1};
    const uint64_t counts[1] = {~uint64_t{0}};  // at offset 1: 1 + count wraps to 0 <= 4
    const uint64_t offsets[1] = {1};
    return transport_error(
        [&] { testing::CheckedComm{comm}.alltoall(send, counts, offsets, recv, counts, offsets); });
  });
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].exit_code, 0) << outcomes[0].message;
  EXPECT_TRUE(says(outcomes[0].message, "the split for rank 0 (input " +
                                            std::to_string(~uint64_t{0}) + " elements at 1 of 4"))
      << outcomes[0].message;
}

}  // namespace
}  // namespace domino
