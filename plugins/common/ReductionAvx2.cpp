// Built with -mavx2 -mf16c -mfma (see CMakeLists.txt); used only where the CPU has them.
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "domino/plugin.h"

namespace domino::kernels::avx2 {
#include "ReductionKernels.inl"

void reduce(void* out, const void* const* in, int n, size_t count, domino_dtype_t dtype,
            domino_redop_t op) {
  reduce_dispatch(out, in, n, count, dtype, op);
}
}  // namespace domino::kernels::avx2
