#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "plugins/common/Dtype.h"
#include "plugins/common/Reduction.h"
#include "plugins/common/ReductionVariants.h"

namespace domino {

namespace {

float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round-to-nearest-even, independent of the kernel's own conversion.
uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);
}

std::vector<std::vector<float>> random_inputs(int n, size_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<std::vector<float>> out(static_cast<size_t>(n), std::vector<float>(count));
  for (auto& v : out) {
    for (auto& x : v) x = std::round(dist(gen) * 8.0f) / 8.0f;  // exact in every float type
  }
  return out;
}

template <class T>
void check_exact(domino_dtype_t dtype, domino_redop_t op, int n, size_t count) {
  auto values = random_inputs(n, count, static_cast<unsigned>(count * 7 + static_cast<size_t>(n)));
  std::vector<std::vector<T>> in(static_cast<size_t>(n), std::vector<T>(count));
  for (int k = 0; k < n; ++k) {
    for (size_t i = 0; i < count; ++i) {
      in[k][i] = static_cast<T>(values[k][i] * (std::is_floating_point_v<T> ? 1.0f : 4.0f));
    }
  }
  std::vector<const void*> ptrs;
  for (auto& v : in) ptrs.push_back(v.data());
  std::vector<T> out(count);
  reduce_buffers(out.data(), ptrs.data(), n, count, dtype, op);
  for (size_t i = 0; i < count; ++i) {
    T expect = in[0][i];
    for (int k = 1; k < n; ++k) {
      const T v = in[k][i];
      switch (op) {
        case DOMINO_SUM:
        case DOMINO_AVG:
          if constexpr (std::is_integral_v<T>) {
            expect = static_cast<T>(static_cast<uint64_t>(expect) + static_cast<uint64_t>(v));
          } else {
            expect = expect + v;
          }
          break;
        case DOMINO_PRODUCT:
          if constexpr (std::is_integral_v<T>) {
            expect = static_cast<T>(static_cast<uint64_t>(expect) * static_cast<uint64_t>(v));
          } else {
            expect = expect * v;
          }
          break;
        case DOMINO_MIN:
          expect = v < expect ? v : expect;
          break;
        case DOMINO_MAX:
          expect = expect < v ? v : expect;
          break;
        default:
          if constexpr (std::is_integral_v<T>) {
            if (op == DOMINO_BAND) expect = static_cast<T>(expect & v);
            if (op == DOMINO_BOR) expect = static_cast<T>(expect | v);
            if (op == DOMINO_BXOR) expect = static_cast<T>(expect ^ v);
          }
      }
    }
    if (op == DOMINO_AVG) expect = static_cast<T>(expect * (T(1) / static_cast<T>(n)));
    if constexpr (std::is_floating_point_v<T>) {
      ASSERT_NEAR(out[i], expect, 1e-5 * (1 + std::fabs(expect))) << i;
    } else {
      ASSERT_EQ(out[i], expect) << i;
    }
  }
}

class ReductionSizes : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(ReductionSizes, MatchesAScalarReferenceForEveryOp) {
  const auto [n, count] = GetParam();
  for (domino_redop_t op : {DOMINO_SUM, DOMINO_AVG, DOMINO_PRODUCT, DOMINO_MIN, DOMINO_MAX}) {
    check_exact<float>(DOMINO_FLOAT32, op, n, count);
    check_exact<double>(DOMINO_FLOAT64, op, n, count);
  }
  for (domino_redop_t op :
       {DOMINO_SUM, DOMINO_PRODUCT, DOMINO_MIN, DOMINO_MAX, DOMINO_BAND, DOMINO_BOR, DOMINO_BXOR}) {
    check_exact<int32_t>(DOMINO_INT32, op, n, count);
    check_exact<int64_t>(DOMINO_INT64, op, n, count);
    check_exact<int8_t>(DOMINO_INT8, op, n, count);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReductionSizes,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 8, 12),
                                            ::testing::Values(size_t{0}, size_t{1}, size_t{7},
                                                              size_t{513}, size_t{4099})));

TEST(Reduction, Bfloat16AccumulatesInFloat32AndRoundsOnce) {
  const int n = 8;
  const size_t count = 1000;
  std::vector<std::vector<uint16_t>> in(n, std::vector<uint16_t>(count));
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& v : in) {
    for (auto& x : v) x = float_to_bf16(dist(gen));
  }
  std::vector<const void*> ptrs;
  for (auto& v : in) ptrs.push_back(v.data());
  std::vector<uint16_t> out(count);
  reduce_buffers(out.data(), ptrs.data(), n, count, DOMINO_BFLOAT16, DOMINO_SUM);
  for (size_t i = 0; i < count; ++i) {
    float acc = 0;
    for (int k = 0; k < n; ++k) acc += bf16_to_float(in[k][i]);
    ASSERT_EQ(out[i], float_to_bf16(acc)) << i;
  }
}

TEST(Reduction, Float16AccumulatesInFloat32) {
  const int n = 4;
  const size_t count = 257;
  std::vector<std::vector<_Float16>> in(n, std::vector<_Float16>(count));
  for (int k = 0; k < n; ++k) {
    for (size_t i = 0; i < count; ++i)
      in[k][i] =
          static_cast<_Float16>(0.1f * static_cast<float>(k + 1) + 1e-3f * static_cast<float>(i));
  }
  std::vector<const void*> ptrs;
  for (auto& v : in) ptrs.push_back(v.data());
  std::vector<_Float16> out(count);
  reduce_buffers(out.data(), ptrs.data(), n, count, DOMINO_FLOAT16, DOMINO_AVG);
  for (size_t i = 0; i < count; ++i) {
    float acc = 0;
    for (int k = 0; k < n; ++k) acc += static_cast<float>(in[k][i]);
    ASSERT_EQ(static_cast<float>(out[i]), static_cast<float>(static_cast<_Float16>(acc * 0.25f)))
        << i;
  }
}

TEST(Reduction, BoolSumIsLogicalOrAndProductIsLogicalAnd) {
  const uint8_t a[4] = {0, 1, 0, 1};
  const uint8_t b[4] = {0, 0, 1, 1};
  const void* ptrs[2] = {a, b};
  uint8_t out[4];
  reduce_buffers(out, ptrs, 2, 4, DOMINO_BOOL, DOMINO_SUM);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 4), (std::vector<uint8_t>{0, 1, 1, 1}));
  reduce_buffers(out, ptrs, 2, 4, DOMINO_BOOL, DOMINO_PRODUCT);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 4), (std::vector<uint8_t>{0, 0, 0, 1}));
}

TEST(Reduction, OutputMayAliasAnInput) {
  // Every position, with input counts on both sides of the fused kernels' limit of 8.
  for (int n : {2, 4, 8, 11}) {
    for (int aliased = 0; aliased < n; ++aliased) {
      std::vector<std::vector<float>> in(static_cast<size_t>(n));
      std::vector<const void*> ptrs;
      for (int q = 0; q < n; ++q) {
        in[static_cast<size_t>(q)].assign(1500, static_cast<float>(q + 1));
        ptrs.push_back(in[static_cast<size_t>(q)].data());
      }
      auto& out = in[static_cast<size_t>(aliased)];
      reduce_buffers(out.data(), ptrs.data(), n, out.size(), DOMINO_FLOAT32, DOMINO_SUM);
      for (float v : out)
        ASSERT_EQ(v, n * (n + 1) / 2.0f) << n << " inputs, output is input " << aliased;
    }
  }
}

TEST(Reduction, VectorAndGenericKernelsAgree) {
  const auto& variants = runnable_reduction_variants();
  if (variants.size() == 1) GTEST_SKIP() << "no vector variant on this CPU";
  auto values = random_inputs(3, 3001, 11);
  std::vector<const void*> ptrs;
  for (auto& v : values) ptrs.push_back(v.data());
  std::vector<float> want(3001);
  variants.back().reduce(want.data(), ptrs.data(), 3, want.size(), DOMINO_FLOAT32, DOMINO_SUM);
  for (const auto& variant : variants) {
    std::vector<float> got(3001);
    variant.reduce(got.data(), ptrs.data(), 3, got.size(), DOMINO_FLOAT32, DOMINO_SUM);
    EXPECT_EQ(got, want) << variant.name;
  }
}

}  // namespace
}  // namespace domino
