// Vector reductions of bfloat16 and float16, written once over an instruction set's traits V
// (ReductionAvx2.cpp, ReductionAvx512.cpp). Each element is widened to float32, reduced in input
// order in float32, scaled for AVG, and rounded to nearest even once, exactly as the scalar
// kernel (ReductionKernels.inl) does, so every variant gives the same bits: the float32
// operations are IEEE-exact in any width, min and max take the operand order of the scalar
// comparisons, and a tail goes through the same vector code on a zero-padded copy.
//
// V provides: kWidth (float lanes), type F, load_bf16 / store_bf16 / load_f16 / store_f16 over
// kWidth 16-bit elements, add, mul, min_first_if_less (a < b ? a : b), max_first_if_greater
// (a > b ? a : b) and splat. It may provide load_pair_bf16 / store_pair_bf16 / store_pair_f16
// over 2 * kWidth (two vectors holding those elements in any order the pair's store undoes,
// since every operation is per element); without them a pair is two singles.

namespace half {

struct Bf16 {
  template <class V>
  static typename V::F load(const uint16_t* p) {
    return V::load_bf16(p);
  }
  template <class V>
  static void store(uint16_t* p, typename V::F v) {
    V::store_bf16(p, v);
  }
  template <class V>
  static void load_pair(const uint16_t* p, typename V::F& a, typename V::F& b) {
    if constexpr (requires { V::load_pair_bf16(p, a, b); }) {
      V::load_pair_bf16(p, a, b);
    } else {
      a = load<V>(p);
      b = load<V>(p + V::kWidth);
    }
  }
  template <class V>
  static void store_pair(uint16_t* p, typename V::F a, typename V::F b) {
    if constexpr (requires { V::store_pair_bf16(p, a, b); }) {
      V::store_pair_bf16(p, a, b);
    } else {
      store<V>(p, a);
      store<V>(p + V::kWidth, b);
    }
  }
};
struct F16 {
  template <class V>
  static typename V::F load(const uint16_t* p) {
    return V::load_f16(p);
  }
  template <class V>
  static void store(uint16_t* p, typename V::F v) {
    V::store_f16(p, v);
  }
  template <class V>
  static void load_pair(const uint16_t* p, typename V::F& a, typename V::F& b) {
    a = load<V>(p);
    b = load<V>(p + V::kWidth);
  }
  template <class V>
  static void store_pair(uint16_t* p, typename V::F a, typename V::F b) {
    if constexpr (requires { V::store_pair_f16(p, a, b); }) {
      V::store_pair_f16(p, a, b);
    } else {
      store<V>(p, a);
      store<V>(p + V::kWidth, b);
    }
  }
};

// acc (the running value) and x (the next input) as the scalar kernel's Op::apply(acc, x).
struct Sum {
  template <class V>
  static typename V::F apply(typename V::F acc, typename V::F x) {
    return V::add(acc, x);
  }
};
struct Product {
  template <class V>
  static typename V::F apply(typename V::F acc, typename V::F x) {
    return V::mul(acc, x);
  }
};
struct Min {  // x < acc ? x : acc
  template <class V>
  static typename V::F apply(typename V::F acc, typename V::F x) {
    return V::min_first_if_less(x, acc);
  }
};
struct Max {  // acc < x ? x : acc, that is x > acc ? x : acc
  template <class V>
  static typename V::F apply(typename V::F acc, typename V::F x) {
    return V::max_first_if_greater(x, acc);
  }
};

// kWidth elements at offset i of every input: N inputs known at compile time, or n at run time
// where N is 0.
template <class V, class Format, class Op, int N>
inline typename V::F reduce_at(const uint16_t* const* in, int n, size_t i, bool average,
                               typename V::F scale) {
  const int inputs = N > 0 ? N : n;
  typename V::F acc = Format::template load<V>(in[0] + i);
  for (int k = 1; k < inputs; ++k)
    acc = Op::template apply<V>(acc, Format::template load<V>(in[k] + i));
  return average ? V::mul(acc, scale) : acc;
}

// 2 * kWidth elements at offset i of every input, as the pair of vectors Format's load_pair gives.
template <class V, class Format, class Op, int N>
inline void reduce_pair_at(const uint16_t* const* in, int n, size_t i, bool average,
                           typename V::F scale, typename V::F& a, typename V::F& b) {
  const int inputs = N > 0 ? N : n;
  Format::template load_pair<V>(in[0] + i, a, b);
  for (int k = 1; k < inputs; ++k) {
    typename V::F xa, xb;
    Format::template load_pair<V>(in[k] + i, xa, xb);
    a = Op::template apply<V>(a, xa);
    b = Op::template apply<V>(b, xb);
  }
  if (average) {
    a = V::mul(a, scale);
    b = V::mul(b, scale);
  }
}

// average: the result multiplied by factor (1 / inputs for AVG, 1 / divisor for a division).
template <class V, class Format, class Op, int N>
void reduce_inputs(uint16_t* out, const uint16_t* const* in, int n, size_t count, bool average,
                   float factor) {
  constexpr size_t W = V::kWidth;
  const int inputs = N > 0 ? N : n;
  const typename V::F scale = V::splat(factor);
  size_t i = 0;
  // Two vectors an iteration: their loads overlap, and a pair widens and narrows in fewer
  // shuffles than two singles. The output may be an input at the same index only, and each
  // position is read before it is written.
  for (; i + 2 * W <= count; i += 2 * W) {
    typename V::F a, b;
    reduce_pair_at<V, Format, Op, N>(in, n, i, average, scale, a, b);
    Format::template store_pair<V>(out + i, a, b);
  }
  for (; i + W <= count; i += W) {
    Format::template store<V>(out + i, reduce_at<V, Format, Op, N>(in, n, i, average, scale));
  }
  if (i == count) return;
  // The tail through the same lanes: each input's last elements copied into a zero-padded row.
  const size_t rest = count - i;
  alignas(64) uint16_t row[W] = {};
  __builtin_memcpy(row, in[0] + i, rest * sizeof(uint16_t));
  typename V::F acc = Format::template load<V>(row);
  for (int k = 1; k < inputs; ++k) {
    __builtin_memcpy(row, in[k] + i, rest * sizeof(uint16_t));
    acc = Op::template apply<V>(acc, Format::template load<V>(row));
  }
  Format::template store<V>(row, average ? V::mul(acc, scale) : acc);
  __builtin_memcpy(out + i, row, rest * sizeof(uint16_t));
}

template <class V, class Format, class Op, size_t... K>
void reduce_by_count(uint16_t* out, const uint16_t* const* in, int n, size_t count, bool average,
                     std::index_sequence<K...>) {
  using Fn = void (*)(uint16_t*, const uint16_t* const*, int, size_t, bool, float);
  static constexpr Fn kFused[] = {&reduce_inputs<V, Format, Op, static_cast<int>(K) + 1>...};
  const float factor = 1.0f / static_cast<float>(n);
  if (static_cast<size_t>(n) <= sizeof...(K)) {
    return kFused[n - 1](out, in, n, count, average, factor);
  }
  reduce_inputs<V, Format, Op, 0>(out, in, n, count, average, factor);
}

template <class V, class Format>
bool reduce_format(void* out, const void* const* in_raw, int n, size_t count, domino_redop_t op) {
  const auto* const* in = reinterpret_cast<const uint16_t* const*>(in_raw);
  auto* dst = static_cast<uint16_t*>(out);
  const auto fused = std::make_index_sequence<kMaxFusedInputs>();
  switch (op) {
    case DOMINO_SUM:
      reduce_by_count<V, Format, Sum>(dst, in, n, count, false, fused);
      return true;
    case DOMINO_AVG:
      reduce_by_count<V, Format, Sum>(dst, in, n, count, true, fused);
      return true;
    case DOMINO_PRODUCT:
      reduce_by_count<V, Format, Product>(dst, in, n, count, false, fused);
      return true;
    case DOMINO_MIN:
      reduce_by_count<V, Format, Min>(dst, in, n, count, false, fused);
      return true;
    case DOMINO_MAX:
      reduce_by_count<V, Format, Max>(dst, in, n, count, false, fused);
      return true;
    default:
      return false;
  }
}

// True where the vector kernels took the call (16-bit floats and an arithmetic op).
template <class V>
bool reduce(void* out, const void* const* in, int n, size_t count, domino_dtype_t dtype,
            domino_redop_t op) {
  if (dtype == DOMINO_BFLOAT16) return reduce_format<V, Bf16>(out, in, n, count, op);
  if (dtype == DOMINO_FLOAT16) return reduce_format<V, F16>(out, in, n, count, op);
  return false;
}

// The scalar divide's arithmetic: one input, multiplied by 1 / divisor in float32, rounded once.
template <class V, class Format>
void divide_format(uint16_t* values, size_t count, int divisor) {
  const uint16_t* const rows[] = {values};
  reduce_inputs<V, Format, Sum, 1>(values, rows, 1, count, true,
                                   1.0f / static_cast<float>(divisor));
}

// True where the vector kernels took the call (16-bit floats).
template <class V>
bool divide(void* buf, size_t count, domino_dtype_t dtype, int divisor) {
  auto* values = static_cast<uint16_t*>(buf);
  if (dtype == DOMINO_BFLOAT16) return divide_format<V, Bf16>(values, count, divisor), true;
  if (dtype == DOMINO_FLOAT16) return divide_format<V, F16>(values, count, divisor), true;
  return false;
}

}  // namespace half
