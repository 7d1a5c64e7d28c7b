// The collectives, listed once. Every enumeration of them expands this list: the router's
// Collective (plans, the report, the algorithm table's ops), the transports' call signatures
// (UCX's message tags, shared memory's round descriptors) and the names in their messages.
// Each entry: the enumerator, the name torch.distributed gives the op (the router, the table
// and the report use it), the plugin ABI's entry name (the transports' messages use it), and the
// op's facts, stated here and nowhere else: whether it combines values (takes a reduction),
// whether it has a root, which buffer gives its message's size and dtype (recv: the output,
// send: the input), and what one rank moves through a plain transport (Traffic, below).
// Adding a collective starts here, at the end: an entry's place is wire format (shared memory's
// round descriptors and UCX's message signatures carry it), so entries are only ever appended.
// Torch-free, header only.
#pragma once

#include <cstdint>
#include <string_view>

// X(enumerator, name, entry, reduces, rooted, sized_by, traffic)
#define DOMINO_COLLECTIVES(X)                                                             \
  X(kAllReduce, "all_reduce", "allreduce", true, false, kRecv, kSharesTwice)              \
  X(kBroadcast, "broadcast", "broadcast", false, true, kRecv, kMessage)                   \
  X(kReduce, "reduce", "reduce", true, true, kSend, kMessage)                             \
  X(kAllGather, "all_gather", "allgather", false, false, kSend, kOtherBlocks)             \
  X(kReduceScatter, "reduce_scatter", "reduce_scatter", true, false, kRecv, kOtherBlocks) \
  X(kGather, "gather", "gather", false, true, kSend, kOtherBlocks)                        \
  X(kScatter, "scatter", "scatter", false, true, kRecv, kOtherBlocks)                     \
  X(kAllToAll, "all_to_all", "alltoall", false, false, kSend, kMessage)                   \
  X(kBarrier, "barrier", "barrier", false, false, kSend, kNothing)

namespace domino::topology {

enum class Collective : uint32_t {
#define DOMINO_ENUMERATOR(e, name, entry, reduces, rooted, sized_by, traffic) e,
  DOMINO_COLLECTIVES(DOMINO_ENUMERATOR)
#undef DOMINO_ENUMERATOR
};

inline constexpr Collective kCollectives[] = {
#define DOMINO_VALUE(e, name, entry, reduces, rooted, sized_by, traffic) Collective::e,
    DOMINO_COLLECTIVES(DOMINO_VALUE)
#undef DOMINO_VALUE
};
inline constexpr size_t kCollectiveCount = sizeof(kCollectives) / sizeof(kCollectives[0]);

// The wire codes, pinned: moving an entry would let builds of different versions misread each
// other's calls.
static_assert(static_cast<uint32_t>(Collective::kAllReduce) == 0 &&
              static_cast<uint32_t>(Collective::kAllToAll) == 7 &&
              static_cast<uint32_t>(Collective::kBarrier) == 8);

// "all_reduce", as torch.distributed names it.
constexpr const char* collective_name(Collective op) {
  constexpr const char* names[] = {
#define DOMINO_NAME(e, name, entry, reduces, rooted, sized_by, traffic) name,
      DOMINO_COLLECTIVES(DOMINO_NAME)
#undef DOMINO_NAME
  };
  const auto i = static_cast<size_t>(op);
  return i < kCollectiveCount ? names[i] : "?";
}

// "allreduce", as the plugin ABI's entry is named.
constexpr const char* entry_name(Collective op) {
  constexpr const char* names[] = {
#define DOMINO_ENTRY(e, name, entry, reduces, rooted, sized_by, traffic) entry,
      DOMINO_COLLECTIVES(DOMINO_ENTRY)
#undef DOMINO_ENTRY
  };
  const auto i = static_cast<size_t>(op);
  return i < kCollectiveCount ? names[i] : "?";
}

// Which of a call's buffers gives its message's size and dtype.
enum class SizedBy : uint8_t { kSend, kRecv };

// What one rank moves through a plain transport, in messages of n bytes (the size sized_by
// gives): the router's price for an in-host step that no table entry prices.
enum class Traffic : uint8_t {
  kNothing,      // one latency, no payload (a barrier)
  kMessage,      // one latency, the message once
  kOtherBlocks,  // one latency, the other ranks' blocks: (p - 1) n
  kSharesTwice,  // a reduce-scatter then an all-gather: two latencies, 2 (p - 1) / p n
};

// The op's facts, from its entry in DOMINO_COLLECTIVES.
struct CollectiveFacts {
  bool reduces;      // combines values: takes a reduction
  bool rooted;       // has a root
  SizedBy sized_by;  // the buffer that gives its message's size and dtype
  Traffic traffic;   // what one rank moves through a plain transport
};

constexpr CollectiveFacts facts(Collective op) {
  constexpr CollectiveFacts all[] = {
#define DOMINO_FACTS(e, name, entry, reduces, rooted, sized_by, traffic) \
  {reduces, rooted, SizedBy::sized_by, Traffic::traffic},
      DOMINO_COLLECTIVES(DOMINO_FACTS)
#undef DOMINO_FACTS
  };
  const auto i = static_cast<size_t>(op);
  return i < kCollectiveCount ? all[i]
                              : CollectiveFacts{false, false, SizedBy::kSend, Traffic::kMessage};
}

// Latencies and messages one of `ranks` ranks pays for the op through a plain transport.
struct Movement {
  double latencies;
  double messages;
};
constexpr Movement plain_movement(Collective op, int ranks) {
  const double p = ranks;
  switch (facts(op).traffic) {
    case Traffic::kNothing:
      return {1, 0};
    case Traffic::kMessage:
      return {1, 1};
    case Traffic::kOtherBlocks:
      return {1, p - 1};
    case Traffic::kSharesTwice:
      return {2, 2 * (p - 1) / p};
  }
  return {1, 1};
}

constexpr bool reduces(Collective op) {
  return facts(op).reduces;
}
constexpr bool rooted(Collective op) {
  return facts(op).rooted;
}
// Whether the output (recv) gives the message's size and dtype; else the input (send).
constexpr bool sized_by_output(Collective op) {
  return facts(op).sized_by == SizedBy::kRecv;
}

}  // namespace domino::topology
