#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "domino/plugin.h"

namespace domino::kernels::generic {
#include "ReductionKernels.inl"

void reduce(void* out, const void* const* in, int n, size_t count, domino_dtype_t dtype,
            domino_redop_t op) {
  reduce_dispatch(out, in, n, count, dtype, op);
}

void divide(void* buf, size_t count, domino_dtype_t dtype, int divisor) {
  divide_dispatch(buf, count, dtype, divisor);
}
}  // namespace domino::kernels::generic
