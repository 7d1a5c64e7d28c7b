// Built with -mavx512f -mavx512bw -mavx512vl -mavx2 -mf16c -mfma (see CMakeLists.txt); used only
// where the CPU has them, and only for bfloat16 and float16 messages of kWideFrom elements or
// more. Other dtypes and smaller messages take the AVX2 kernels, which give the same bits:
// float32 streams from memory no faster in 512-bit code (bench/cpp/reduction_throughput), a
// first build that used it for everything measured small and float32 all-reduces up to 25%
// slower end to end, and a thread that touched 512-bit state saves more of it at every switch.
// bfloat16 is rounded with integer operations rather than AVX512_BF16's VCVTNEPS2BF16, which
// flushes subnormal inputs and outputs to zero where the scalar kernel, and torch, keep them;
// float16 is reduced in float32 rather than with AVX512_FP16's own arithmetic, which would round
// at every step.
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "ReductionVariants.h"
#include "domino/plugin.h"

namespace domino::kernels::avx512 {
#include "ReductionKernels.inl"

namespace {
// Sixteen float32 lanes.
struct Lanes {
  static constexpr size_t kWidth = 16;
  using F = __m512;
  static F load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store_f16(uint16_t* p, F v) {
    const __m256i rounded = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm256_mask_blend_epi16(nan, rounded, _mm256_set1_epi16(kFloat16QuietNan)));
  }
  static F load_bf16(const uint16_t* p) {
    const __m512i wide =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  static void store_bf16(uint16_t* p, F v) {
    // Round to nearest even; a NaN becomes the one quiet NaN (ReductionKernels.inl).
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    const __m512i magnitude = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
    const __m512i bits =
        _mm512_mask_blend_epi32(nan, rounded, _mm512_set1_epi32(kBFloat16QuietNan));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bits));
  }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F min_first_if_less(F a, F b) { return _mm512_min_ps(a, b); }
  static F max_first_if_greater(F a, F b) { return _mm512_max_ps(a, b); }
  static F splat(float x) { return _mm512_set1_ps(x); }
};
}  // namespace

#include "ReductionHalfKernels.inl"

constexpr size_t kWideFrom = 2048;

void reduce(void* out, const void* const* in, int n, size_t count, domino_dtype_t dtype,
            domino_redop_t op) {
  if (count >= kWideFrom && half::reduce<Lanes>(out, in, n, count, dtype, op)) return;
  avx2::reduce(out, in, n, count, dtype, op);
}

void divide(void* buf, size_t count, domino_dtype_t dtype, int divisor) {
  if (count >= kWideFrom && half::divide<Lanes>(buf, count, dtype, divisor)) return;
  avx2::divide(buf, count, dtype, divisor);
}
}  // namespace domino::kernels::avx512
