#include "Reduction.h"

#include "ReductionVariants.h"

namespace domino {
namespace {

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("fma");
}

bool cpu_has_avx512() {
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

std::vector<ReductionVariant> find_runnable() {
  std::vector<ReductionVariant> found;
  if (cpu_has_avx512())
    found.push_back({"avx512", kernels::avx512::reduce, kernels::avx512::divide});
  if (cpu_has_avx2()) found.push_back({"avx2+f16c", kernels::avx2::reduce, kernels::avx2::divide});
  found.push_back({"generic", kernels::generic::reduce, kernels::generic::divide});
  return found;
}

const ReductionVariant kBest = runnable_reduction_variants().front();
}  // namespace

const std::vector<ReductionVariant>& runnable_reduction_variants() {
  static const std::vector<ReductionVariant> variants = find_runnable();
  return variants;
}

void reduce_buffers(void* out, const void* const* inputs, int n_inputs, size_t count,
                    domino_dtype_t dtype, domino_redop_t op) {
  if (count == 0 || n_inputs <= 0) return;
  kBest.reduce(out, inputs, n_inputs, count, dtype, op);
}

void divide_buffer(void* buf, size_t count, domino_dtype_t dtype, int divisor) {
  if (count == 0 || divisor <= 1) return;
  kBest.divide(buf, count, dtype, divisor);
}

const char* reduction_isa() {
  return kBest.name;
}

}  // namespace domino
