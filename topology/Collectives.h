// The collectives, listed once. Every enumeration of them expands this list: the router's
// Collective (plans, the report, the algorithm table's ops), the transports' call signatures
// (UCX's message tags, shared memory's round descriptors) and the names in their messages.
// Each entry: the enumerator, the name torch.distributed gives the op (the router, the table
// and the report use it), and the plugin ABI's entry name (the transports' messages use it).
// Adding a collective starts here, at the end: an entry's place is wire format (shared memory's
// round descriptors and UCX's message signatures carry it), so entries are only ever appended.
// Torch-free, header only.
#pragma once

#include <cstdint>
#include <string_view>

#define DOMINO_COLLECTIVES(X)                           \
  X(kAllReduce, "all_reduce", "allreduce")              \
  X(kBroadcast, "broadcast", "broadcast")               \
  X(kReduce, "reduce", "reduce")                        \
  X(kAllGather, "all_gather", "allgather")              \
  X(kReduceScatter, "reduce_scatter", "reduce_scatter") \
  X(kGather, "gather", "gather")                        \
  X(kScatter, "scatter", "scatter")                     \
  X(kAllToAll, "all_to_all", "alltoall")                \
  X(kBarrier, "barrier", "barrier")

namespace domino::topology {

enum class Collective : uint32_t {
#define DOMINO_ENUMERATOR(e, name, entry) e,
  DOMINO_COLLECTIVES(DOMINO_ENUMERATOR)
#undef DOMINO_ENUMERATOR
};

inline constexpr Collective kCollectives[] = {
#define DOMINO_VALUE(e, name, entry) Collective::e,
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
#define DOMINO_NAME(e, name, entry) name,
      DOMINO_COLLECTIVES(DOMINO_NAME)
#undef DOMINO_NAME
  };
  const auto i = static_cast<size_t>(op);
  return i < kCollectiveCount ? names[i] : "?";
}

// "allreduce", as the plugin ABI's entry is named.
constexpr const char* entry_name(Collective op) {
  constexpr const char* names[] = {
#define DOMINO_ENTRY(e, name, entry) entry,
      DOMINO_COLLECTIVES(DOMINO_ENTRY)
#undef DOMINO_ENTRY
  };
  const auto i = static_cast<size_t>(op);
  return i < kCollectiveCount ? names[i] : "?";
}

// Whether op combines values (takes a reduction) and whether it has a root.
constexpr bool reduces(Collective op) {
  return op == Collective::kAllReduce || op == Collective::kReduce ||
         op == Collective::kReduceScatter;
}
constexpr bool rooted(Collective op) {
  return op == Collective::kReduce || op == Collective::kBroadcast || op == Collective::kGather ||
         op == Collective::kScatter;
}

}  // namespace domino::topology
