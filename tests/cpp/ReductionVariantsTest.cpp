// Every reduction variant this CPU can run gives the same bits for bfloat16 and float16, as
// ranks on different CPUs must: NaN, infinities, subnormals, ties, every arithmetic op, input
// counts on both sides of the fused kernels' limit, lengths with and without a vector tail, and
// the result is float32 accumulation rounded once to nearest even.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"
#include "plugins/common/ReductionVariants.h"

namespace domino {
namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Widening, written here from the formats' definitions, independent of the kernels.
float widen(uint16_t h, domino_dtype_t dtype) {
  if (dtype == DOMINO_BFLOAT16) return bits_to_float(static_cast<uint32_t>(h) << 16);
  const uint32_t sign = (h & 0x8000u) ? 1u : 0u;
  const int exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ffu;
  float magnitude;
  if (exponent == 0x1f) {
    magnitude = mantissa ? NAN : INFINITY;
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

// Rounding to nearest even, from the definitions: the 16-bit neighbours of f are found by
// widening candidates, not by the kernels' bit tricks.
uint16_t narrow(float f, domino_dtype_t dtype) {
  const bool negative = std::signbit(f);
  const float magnitude = std::fabs(f);
  // Positive 16-bit patterns are ordered like their values: binary search the largest pattern
  // whose value is <= magnitude (0x7f80 / 0x7c00 is infinity).
  const uint32_t infinity = dtype == DOMINO_BFLOAT16 ? 0x7f80u : 0x7c00u;
  uint32_t lo = 0, hi = infinity;
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (widen(static_cast<uint16_t>(mid), dtype) <= magnitude)
      lo = mid;
    else
      hi = mid - 1;
  }
  uint32_t pick = lo;
  if (lo < infinity) {
    const double below = widen(static_cast<uint16_t>(lo), dtype);
    // The next value up; past the largest finite one, the value the format would have there.
    const double above = lo + 1 < infinity ? widen(static_cast<uint16_t>(lo + 1), dtype)
                                           : 2.0 * widen(static_cast<uint16_t>(lo), dtype) -
                                                 widen(static_cast<uint16_t>(lo - 1), dtype);
    const double gap_below = magnitude - below, gap_above = above - magnitude;
    if (gap_above < gap_below || (gap_above == gap_below && (lo & 1u))) pick = lo + 1;
  }
  return static_cast<uint16_t>(pick | (negative ? 0x8000u : 0u));
}

// Every NaN result is the one quiet NaN with the sign clear, whatever NaNs went in.
uint16_t quiet_nan(domino_dtype_t dtype) {
  return dtype == DOMINO_BFLOAT16 ? 0x7fc0 : 0x7e00;
}

float reference_op(float acc, float x, domino_redop_t op) {
  switch (op) {
    case DOMINO_PRODUCT:
      return acc * x;
    case DOMINO_MIN:
      return x < acc ? x : acc;
    case DOMINO_MAX:
      return acc < x ? x : acc;
    default:
      return acc + x;
  }
}

// Values that exercise every rounding case: specials, subnormals, the largest finite values,
// and pairs whose float32 sum sits exactly halfway between two 16-bit values. Without nans,
// every NaN drawn becomes 1.0: the vector kernels take another path for a block holding a NaN,
// and with NaNs among 15% of the values nearly every block of several inputs holds one.
std::vector<std::vector<uint16_t>> hard_inputs(domino_dtype_t dtype, int n, size_t count,
                                               unsigned seed, bool nans = true) {
  const bool bf16 = dtype == DOMINO_BFLOAT16;
  const std::vector<uint16_t> specials =
      bf16 ? std::vector<uint16_t>{0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1,
                                   0x7f81, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f,
                                   0xff7f, 0x3f80, 0x3b80, 0x3bc0, 0x3f81, 0x4000}
           : std::vector<uint16_t>{0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01,
                                   0x7c01, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff,
                                   0xfbff, 0x3c00, 0x1400, 0x1600, 0x3c01, 0x4000};
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pick(0, 99);
  std::uniform_int_distribution<uint32_t> any(0, 0xffff);
  std::uniform_int_distribution<size_t> special(0, specials.size() - 1);
  // Exponents near one another, so that sums carry and round.
  const uint32_t base = bf16 ? 0x3f00u : 0x3800u;
  std::vector<std::vector<uint16_t>> in(static_cast<size_t>(n), std::vector<uint16_t>(count));
  for (auto& row : in) {
    for (auto& h : row) {
      const int p = pick(gen);
      if (p < 15) {
        h = specials[special(gen)];
      } else if (p < 25) {
        h = static_cast<uint16_t>(any(gen));
      } else {
        h = static_cast<uint16_t>((base + any(gen) % 0x0400u) | (any(gen) & 0x8000u));
      }
      if (!nans && std::isnan(widen(h, dtype))) h = bf16 ? 0x3f80 : 0x3c00;
    }
  }
  return in;
}

std::vector<uint16_t> run(const ReductionVariant& variant,
                          const std::vector<std::vector<uint16_t>>& in, size_t count,
                          domino_dtype_t dtype, domino_redop_t op) {
  std::vector<const void*> ptrs;
  for (const auto& row : in) ptrs.push_back(row.data());
  std::vector<uint16_t> out(count);
  variant.reduce(out.data(), ptrs.data(), static_cast<int>(in.size()), count, dtype, op);
  return out;
}

TEST(ReductionVariants, TheGenericVariantIsAlwaysRunnableAndLast) {
  const auto& variants = runnable_reduction_variants();
  ASSERT_FALSE(variants.empty());
  EXPECT_EQ(std::string(variants.back().name), "generic");
  EXPECT_EQ(std::string(variants.front().name), reduction_isa());
  for (const auto& v : variants) std::printf("runnable reduction variant: %s\n", v.name);
}

TEST(ReductionVariants, AChosenVariantIsUsedAndOneThisCpuCannotRunIsRefused) {
  const auto& variants = runnable_reduction_variants();
  for (const auto& variant : variants) {
    use_reduction_variant(variant.name);
    EXPECT_EQ(std::string(reduction_isa()), variant.name);
  }
  use_reduction_variant("auto");
  EXPECT_EQ(std::string(reduction_isa()), variants.front().name);
  try {
    use_reduction_variant("neon");
    FAIL() << "a variant no x86 CPU runs was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("generic"), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::string(reduction_isa()), variants.front().name);
}

TEST(ReductionVariants, SixteenBitFloatsGiveTheSameBitsOnEveryVariant) {
  const auto& variants = runnable_reduction_variants();
  const ReductionVariant& generic = variants.back();
  size_t checked = 0;
  for (bool nans : {true, false}) {
    for (domino_dtype_t dtype : {DOMINO_BFLOAT16, DOMINO_FLOAT16}) {
      for (domino_redop_t op : {DOMINO_SUM, DOMINO_AVG, DOMINO_PRODUCT, DOMINO_MIN, DOMINO_MAX}) {
        for (int n : {1, 2, 3, 4, 5, 8, 9, 12}) {
          // 32785: past the size from which the AVX-512 variant runs its own lanes, with a tail.
          for (size_t count :
               {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{17},
                size_t{31}, size_t{33}, size_t{100}, size_t{1029}, size_t{32785}}) {
            const auto in =
                hard_inputs(dtype, n, count, static_cast<unsigned>(count * 131 + n), nans);
            const auto want = run(generic, in, count, dtype, op);
            // The generic kernel against float32 arithmetic and rounding from the definitions
            // (on the smaller lengths: the reference is slow).
            for (size_t i = 0; i < count && count <= 1029; ++i) {
              float acc = widen(in[0][i], dtype);
              for (int k = 1; k < n; ++k) acc = reference_op(acc, widen(in[k][i], dtype), op);
              if (op == DOMINO_AVG) acc *= 1.0f / static_cast<float>(n);
              if (std::isnan(acc)) {
                ASSERT_EQ(want[i], quiet_nan(dtype)) << redop_name(op) << " n=" << n << " i=" << i;
              } else {
                ASSERT_EQ(want[i], narrow(acc, dtype))
                    << (dtype == DOMINO_BFLOAT16 ? "bf16 " : "f16 ") << redop_name(op) << " n=" << n
                    << " i=" << i << " float32 " << acc << " (0x" << std::hex << float_to_bits(acc)
                    << ")";
              }
            }
            for (const auto& variant : variants) {
              const auto got = run(variant, in, count, dtype, op);
              for (size_t i = 0; i < count; ++i) {
                ASSERT_EQ(got[i], want[i])
                    << variant.name << (dtype == DOMINO_BFLOAT16 ? " bf16 " : " f16 ")
                    << redop_name(op) << " n=" << n << " count=" << count << " i=" << i
                    << (nans ? "" : " (no NaN inputs)");
              }
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST(ReductionVariants, AnOutputThatIsAnInputGetsTheSameBits) {
  for (const auto& variant : runnable_reduction_variants()) {
    for (domino_dtype_t dtype : {DOMINO_BFLOAT16, DOMINO_FLOAT16}) {
      for (int n : {2, 3, 9}) {
        const size_t count = 33000;
        auto in = hard_inputs(dtype, n, count, 5);
        const auto want = run(runnable_reduction_variants().back(), in, count, dtype, DOMINO_SUM);
        std::vector<const void*> ptrs;
        for (const auto& row : in) ptrs.push_back(row.data());
        variant.reduce(in[1].data(), ptrs.data(), n, count, dtype, DOMINO_SUM);
        EXPECT_EQ(in[1], want) << variant.name << " n=" << n;
      }
    }
  }
}

TEST(ReductionVariants, DivisionGivesTheSameBitsOnEveryVariant) {
  for (domino_dtype_t dtype : {DOMINO_BFLOAT16, DOMINO_FLOAT16}) {
    for (int divisor : {2, 3, 7}) {
      for (size_t count : {size_t{1}, size_t{17}, size_t{1029}, size_t{32785}}) {
        const auto in = hard_inputs(dtype, 1, count, static_cast<unsigned>(divisor));
        std::vector<uint16_t> want = in[0];
        runnable_reduction_variants().back().divide(want.data(), count, dtype, divisor);
        for (size_t i = 0; i < count; ++i) {
          const float scaled = widen(in[0][i], dtype) * (1.0f / static_cast<float>(divisor));
          if (std::isnan(scaled)) {
            ASSERT_EQ(want[i], quiet_nan(dtype));
          } else {
            ASSERT_EQ(want[i], narrow(scaled, dtype)) << divisor << " " << i;
          }
        }
        for (const auto& variant : runnable_reduction_variants()) {
          std::vector<uint16_t> got = in[0];
          variant.divide(got.data(), count, dtype, divisor);
          EXPECT_EQ(got, want) << variant.name << " divisor " << divisor << " count " << count;
        }
      }
    }
  }
}

}  // namespace
}  // namespace domino
