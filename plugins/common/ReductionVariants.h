// The reduction kernels compiled per instruction set, for Reduction.cpp's choice and for tests
// that hold every variant this CPU can run to the same bits.
#pragma once

#include <cstddef>
#include <vector>

#include "domino/plugin.h"

namespace domino {
namespace kernels {
#define DOMINO_REDUCTION_VARIANT(isa)                                                  \
  namespace isa {                                                                      \
  void reduce(void*, const void* const*, int, size_t, domino_dtype_t, domino_redop_t); \
  void divide(void*, size_t, domino_dtype_t, int);                                     \
  }
DOMINO_REDUCTION_VARIANT(generic)
DOMINO_REDUCTION_VARIANT(avx2)
DOMINO_REDUCTION_VARIANT(avx512)
#undef DOMINO_REDUCTION_VARIANT
}  // namespace kernels

struct ReductionVariant {
  const char* name;
  void (*reduce)(void*, const void* const*, int, size_t, domino_dtype_t, domino_redop_t);
  void (*divide)(void*, size_t, domino_dtype_t, int);
};

// The variants this CPU can run, fastest first; the last is always the generic one.
const std::vector<ReductionVariant>& runnable_reduction_variants();

}  // namespace domino
