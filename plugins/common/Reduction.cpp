#include "Reduction.h"

#include "ReductionVariants.h"

#include <atomic>
#include <stdexcept>

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

// Set by use_reduction_variant at a group's set-up, read on every call from any thread; null
// (constant-initialized, so valid before any other static initializer runs) means the fastest.
std::atomic<const ReductionVariant*> chosen{nullptr};

const ReductionVariant& current() {
  const ReductionVariant* variant = chosen.load(std::memory_order_relaxed);
  return variant != nullptr ? *variant : runnable_reduction_variants().front();
}
}  // namespace

const std::vector<ReductionVariant>& runnable_reduction_variants() {
  static const std::vector<ReductionVariant> variants = find_runnable();
  return variants;
}

void reduce_buffers(void* out, const void* const* inputs, int n_inputs, size_t count,
                    domino_dtype_t dtype, domino_redop_t op) {
  if (count == 0 || n_inputs <= 0) return;
  current().reduce(out, inputs, n_inputs, count, dtype, op);
}

void divide_buffer(void* buf, size_t count, domino_dtype_t dtype, int divisor) {
  if (count == 0 || divisor <= 1) return;
  current().divide(buf, count, dtype, divisor);
}

const char* reduction_isa() {
  return current().name;
}

void use_reduction_variant(const std::string& name) {
  const auto& variants = runnable_reduction_variants();
  if (name == "auto") {
    chosen.store(&variants.front(), std::memory_order_relaxed);
    return;
  }
  std::string runnable;
  for (const ReductionVariant& variant : variants) {
    if (variant.name == name) {
      chosen.store(&variant, std::memory_order_relaxed);
      return;
    }
    runnable += std::string(runnable.empty() ? "" : ", ") + variant.name;
  }
  throw std::invalid_argument("the reduction kernels '" + name +
                              "' cannot run on this CPU; it runs " + runnable + " (or set auto)");
}

}  // namespace domino
