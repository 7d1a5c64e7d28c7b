// Built with -mavx2 -mf16c -mfma (see CMakeLists.txt); used only where the CPU has them.
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "domino/plugin.h"

namespace domino::kernels::avx2 {
#include "ReductionKernels.inl"

namespace {
// Eight float32 lanes; 16-bit floats widened with F16C (float16) or a shift (bfloat16).
struct Lanes {
  static constexpr size_t kWidth = 8;
  static constexpr int kToNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  using F = __m256;
  static F load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void store_f16(uint16_t* p, F v) {
    // A NaN becomes float32's quiet NaN first, which converts to float16's (0x7e00).
    const F quiet = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000));
    const F canonical = _mm256_blendv_ps(v, quiet, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(canonical, kToNearest));
  }
  // Whether either vector of a pair holds a NaN: rare, and the stores' fast paths skip its
  // handling when neither does.
  static bool pair_has_nan(F a, F b) {
    const __m256 unordered = _mm256_cmp_ps(a, b, _CMP_UNORD_Q);
    return !_mm256_testz_ps(unordered, unordered);
  }
  // A pair holding no NaN, the common case, skips the two blends that make NaNs quiet.
  static void store_pair_f16(uint16_t* p, F a, F b) {
    if (pair_has_nan(a, b)) {
      store_f16(p, a);
      store_f16(p + kWidth, b);
      return;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(a, kToNearest));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + kWidth), _mm256_cvtps_ph(b, kToNearest));
  }
  static F load_bf16(const uint16_t* p) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static void store_bf16(uint16_t* p, F v) {
    const __m256i bits = _mm256_srli_epi32(rounding_bf16(v), 16);
    const __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
  }
  // Sixteen elements in one load, widened in place: a holds the even elements (shifted up), b the
  // odd ones (already in the upper half). One shift and one AND, where unpacking would take two
  // of the shuffle ports that the narrowing also needs.
  static void load_pair_bf16(const uint16_t* p, F& a, F& b) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    a = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
    b = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  // Rounded in 16-bit lanes: the kept halves of the even (a) and odd (b) results side by side,
  // each raised by the carry out of its dropped half plus 0x7fff plus its lowest bit, which
  // vpavgw's 17-bit sum yields in its top bit. That is the 32-bit rounding's arithmetic in about
  // half the instructions. A pair holding a NaN, rare, takes the 32-bit path.
  static void store_pair_bf16(uint16_t* p, F a, F b) {
    auto* out = reinterpret_cast<__m256i*>(p);
    if (pair_has_nan(a, b)) {
      const __m256i even = _mm256_srli_epi32(rounding_bf16(a), 16);
      _mm256_storeu_si256(out, _mm256_blend_epi16(even, rounding_bf16(b), 0xaa));
      return;
    }
    const __m256i ua = _mm256_castps_si256(a);
    const __m256i ub = _mm256_castps_si256(b);
    const __m256i kept = _mm256_blend_epi16(_mm256_srli_epi32(ua, 16), ub, 0xaa);
    const __m256i dropped = _mm256_blend_epi16(ua, _mm256_slli_epi32(ub, 16), 0xaa);
    const __m256i bias =
        _mm256_or_si256(_mm256_and_si256(kept, _mm256_set1_epi16(1)), _mm256_set1_epi16(0x7ffe));
    const __m256i carry = _mm256_srli_epi16(_mm256_avg_epu16(dropped, bias), 15);
    _mm256_storeu_si256(out, _mm256_add_epi16(kept, carry));
  }
  // Round to nearest even: the result is the upper 16 bits of each lane, and a NaN becomes the
  // one quiet NaN (ReductionKernels.inl).
  static __m256i rounding_bf16(F v) {
    const __m256i u = _mm256_castps_si256(v);
    // The kept part's lowest bit as 0 or 1, on the integer ports rather than the shift ports
    // that widening and narrowing already keep busy.
    const __m256i lsb =
        _mm256_min_epu32(_mm256_and_si256(u, _mm256_set1_epi32(0x10000)), _mm256_set1_epi32(1));
    const __m256i biased = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(biased, _mm256_set1_epi32(kBFloat16QuietNan << 16), nan);
  }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F min_first_if_less(F a, F b) { return _mm256_min_ps(a, b); }
  static F max_first_if_greater(F a, F b) { return _mm256_max_ps(a, b); }
  static F splat(float x) { return _mm256_set1_ps(x); }
};
}  // namespace

#include "ReductionHalfKernels.inl"

void reduce(void* out, const void* const* in, int n, size_t count, domino_dtype_t dtype,
            domino_redop_t op) {
  if (half::reduce<Lanes>(out, in, n, count, dtype, op)) return;
  reduce_dispatch(out, in, n, count, dtype, op);
}

void divide(void* buf, size_t count, domino_dtype_t dtype, int divisor) {
  if (half::divide<Lanes>(buf, count, dtype, divisor)) return;
  divide_dispatch(buf, count, dtype, divisor);
}
}  // namespace domino::kernels::avx2
