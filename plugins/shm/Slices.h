// How a message is cut into one slice per rank: each rank reduces or copies its own slice, and
// slices start on cache-line boundaries so ranks never write the same line.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>

namespace domino::shm {

inline constexpr size_t kSliceAlignBytes = 64;

// Element range [lo, hi) of slice `index` when `count` elements are cut into `parts`.
inline std::pair<size_t, size_t> slice_of(size_t count, int parts, int index,
                                          size_t element_bytes) {
  const size_t align = std::max<size_t>(1, kSliceAlignBytes / element_bytes);
  size_t per = (count + static_cast<size_t>(parts) - 1) / static_cast<size_t>(parts);
  per = (per + align - 1) / align * align;
  const size_t lo = std::min(count, per * static_cast<size_t>(index));
  return {lo, std::min(count, lo + per)};
}

}  // namespace domino::shm
