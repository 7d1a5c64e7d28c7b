#include "Reduction.h"

namespace domino {
namespace kernels {
namespace generic {
void reduce(void*, const void* const*, int, size_t, domino_dtype_t, domino_redop_t);
void divide(void*, size_t, domino_dtype_t, int);
}  // namespace generic
namespace avx2 {
void reduce(void*, const void* const*, int, size_t, domino_dtype_t, domino_redop_t);
}
}  // namespace kernels

namespace {
using ReduceFn = void (*)(void*, const void* const*, int, size_t, domino_dtype_t, domino_redop_t);

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("fma");
}

const bool kUseAvx2 = cpu_has_avx2();
}  // namespace

void reduce_buffers(void* out, const void* const* inputs, int n_inputs, size_t count,
                    domino_dtype_t dtype, domino_redop_t op) {
  if (count == 0 || n_inputs <= 0) return;
  const ReduceFn fn = kUseAvx2 ? kernels::avx2::reduce : kernels::generic::reduce;
  fn(out, inputs, n_inputs, count, dtype, op);
}

void divide_buffer(void* buf, size_t count, domino_dtype_t dtype, int divisor) {
  if (count == 0 || divisor <= 1) return;
  kernels::generic::divide(buf, count, dtype, divisor);
}

const char* reduction_isa() {
  return kUseAvx2 ? "avx2+f16c" : "generic";
}

}  // namespace domino
