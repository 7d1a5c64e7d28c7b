// Reduction kernels, written once and compiled per instruction set: each including file wraps
// this in its own namespace and picks its own -m flags. Plain loops the compiler vectorises.

struct BFloat16Bits {
  uint16_t bits;
};

template <class T>
struct Lane {
  using Acc = T;
  static Acc load(T v) { return v; }
  static T store(Acc v) { return v; }
};

// A 16-bit NaN result is the one quiet NaN (sign clear): when two NaNs meet, which one x86
// returns depends on the operand order the compiler picked, and ranks must not disagree on it.
constexpr uint16_t kFloat16QuietNan = 0x7e00;
constexpr uint16_t kBFloat16QuietNan = 0x7fc0;

template <>
struct Lane<_Float16> {
  using Acc = float;
  static Acc load(_Float16 v) { return static_cast<float>(v); }
  static _Float16 store(Acc v) {
    if (__builtin_isnan(v)) {
      _Float16 nan;
      __builtin_memcpy(&nan, &kFloat16QuietNan, sizeof nan);
      return nan;
    }
    return static_cast<_Float16>(v);
  }
};

template <>
struct Lane<BFloat16Bits> {
  using Acc = float;
  static Acc load(BFloat16Bits v) {
    uint32_t u = static_cast<uint32_t>(v.bits) << 16;
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
  }
  static BFloat16Bits store(Acc f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, sizeof u);
    // Round to nearest even, as torch does; a NaN becomes the one quiet NaN.
    if ((u & 0x7fffffffu) > 0x7f800000u) return BFloat16Bits{kBFloat16QuietNan};
    u += 0x7fffu + ((u >> 16) & 1u);
    return BFloat16Bits{static_cast<uint16_t>(u >> 16)};
  }
};

// Integer arithmetic wraps like torch's instead of overflowing into undefined behaviour.
template <class A>
A wrapping_add(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <class A>
A wrapping_mul(A a, A b) {
  if constexpr (std::is_integral_v<A> && sizeof(A) >= sizeof(int)) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return static_cast<A>(a * b);
  }
}

struct OpSum {
  template <class A>
  static A apply(A a, A b) {
    return wrapping_add(a, b);
  }
};
struct OpProduct {
  template <class A>
  static A apply(A a, A b) {
    return wrapping_mul(a, b);
  }
};
struct OpMin {
  template <class A>
  static A apply(A a, A b) {
    return b < a ? b : a;
  }
};
struct OpMax {
  template <class A>
  static A apply(A a, A b) {
    return a < b ? b : a;
  }
};
struct OpAnd {
  template <class A>
  static A apply(A a, A b) {
    return static_cast<A>(a & b);
  }
};
struct OpOr {
  template <class A>
  static A apply(A a, A b) {
    return static_cast<A>(a | b);
  }
};
struct OpXor {
  template <class A>
  static A apply(A a, A b) {
    return static_cast<A>(a ^ b);
  }
};

// One pass over the output with every input read in the same iteration: a block accumulator
// re-reads and re-writes itself once per input and ran at half the speed.
template <class T, class Op, size_t... K>
void reduce_fixed(void* out_raw, const void* const* inputs_raw, size_t count, bool average,
                  std::index_sequence<K...>) {
  using L = Lane<T>;
  using Acc = typename L::Acc;
  const T* const in[] = {static_cast<const T*>(inputs_raw[K])...};
  T* out = static_cast<T*>(out_raw);
  Acc scale = Acc(1);
  if constexpr (std::is_floating_point_v<Acc>) {
    if (average) scale = Acc(1) / static_cast<Acc>(sizeof...(K));
  }
  // The output may be one of the inputs, at the same index only: no dependence across i.
#pragma GCC ivdep
  for (size_t i = 0; i < count; ++i) {
    Acc acc = L::load(in[0][i]);
    ((K == 0 ? void() : void(acc = Op::apply(acc, L::load(in[K][i])))), ...);
    if constexpr (std::is_floating_point_v<Acc>) {
      if (average) acc *= scale;  // only then: under DAZ a multiply by 1 would flush subnormals
    }
    out[i] = L::store(acc);
  }
}

// The one-pass kernels for 1 to kMaxFusedInputs inputs, indexed by input count - 1.
constexpr size_t kMaxFusedInputs = 8;
template <class T, class Op, size_t... N>
constexpr auto fused_reducers(std::index_sequence<N...>) {
  return std::array{+[](void* out, const void* const* in, size_t count, bool average) {
    reduce_fixed<T, Op>(out, in, count, average, std::make_index_sequence<N + 1>());
  }...};
}

template <class T, class Op>
void reduce_typed(void* out_raw, const void* const* inputs_raw, int n, size_t count, bool average) {
  if (static_cast<size_t>(n) <= kMaxFusedInputs) {
    static constexpr auto kFused =
        fused_reducers<T, Op>(std::make_index_sequence<kMaxFusedInputs>());
    return kFused[static_cast<size_t>(n) - 1](out_raw, inputs_raw, count, average);
  }
  using L = Lane<T>;
  using Acc = typename L::Acc;
  constexpr size_t kBlock = 512;
  alignas(64) Acc acc[kBlock];
  T* out = static_cast<T*>(out_raw);
  for (size_t base = 0; base < count; base += kBlock) {
    const size_t m = count - base < kBlock ? count - base : kBlock;
    const T* first = static_cast<const T*>(inputs_raw[0]) + base;
    for (size_t i = 0; i < m; ++i) acc[i] = L::load(first[i]);
    for (int k = 1; k < n; ++k) {
      const T* in = static_cast<const T*>(inputs_raw[k]) + base;
      for (size_t i = 0; i < m; ++i) acc[i] = Op::apply(acc[i], L::load(in[i]));
    }
    if constexpr (std::is_floating_point_v<Acc>) {
      if (average) {
        const Acc scale = Acc(1) / static_cast<Acc>(n);
        for (size_t i = 0; i < m; ++i) acc[i] *= scale;
      }
    }
    for (size_t i = 0; i < m; ++i) out[base + i] = L::store(acc[i]);
  }
}

template <class T>
void reduce_ordered(void* out, const void* const* in, int n, size_t count, domino_redop_t op) {
  switch (op) {
    case DOMINO_SUM:
      return reduce_typed<T, OpSum>(out, in, n, count, false);
    case DOMINO_AVG:
      return reduce_typed<T, OpSum>(out, in, n, count, true);
    case DOMINO_PRODUCT:
      return reduce_typed<T, OpProduct>(out, in, n, count, false);
    case DOMINO_MIN:
      return reduce_typed<T, OpMin>(out, in, n, count, false);
    case DOMINO_MAX:
      return reduce_typed<T, OpMax>(out, in, n, count, false);
    default:
      return;
  }
}

template <class T>
void reduce_integral(void* out, const void* const* in, int n, size_t count, domino_redop_t op) {
  switch (op) {
    case DOMINO_BAND:
      return reduce_typed<T, OpAnd>(out, in, n, count, false);
    case DOMINO_BOR:
      return reduce_typed<T, OpOr>(out, in, n, count, false);
    case DOMINO_BXOR:
      return reduce_typed<T, OpXor>(out, in, n, count, false);
    default:
      return reduce_ordered<T>(out, in, n, count, op);
  }
}

inline void reduce_dispatch(void* out, const void* const* in, int n, size_t count,
                            domino_dtype_t dtype, domino_redop_t op) {
  switch (dtype) {
    case DOMINO_FLOAT32:
      return reduce_ordered<float>(out, in, n, count, op);
    case DOMINO_FLOAT64:
      return reduce_ordered<double>(out, in, n, count, op);
    case DOMINO_FLOAT16:
      return reduce_ordered<_Float16>(out, in, n, count, op);
    case DOMINO_BFLOAT16:
      return reduce_ordered<BFloat16Bits>(out, in, n, count, op);
    case DOMINO_INT8:
      return reduce_integral<int8_t>(out, in, n, count, op);
    case DOMINO_UINT8:
      return reduce_integral<uint8_t>(out, in, n, count, op);
    case DOMINO_INT32:
      return reduce_integral<int32_t>(out, in, n, count, op);
    case DOMINO_INT64:
      return reduce_integral<int64_t>(out, in, n, count, op);
    case DOMINO_BOOL:
      // As torch does for bool: SUM is logical or, PRODUCT logical and.
      if (op == DOMINO_SUM) op = DOMINO_MAX;
      if (op == DOMINO_PRODUCT) op = DOMINO_MIN;
      return reduce_integral<uint8_t>(out, in, n, count, op);
    default:
      return;
  }
}

template <class T>
void divide_typed(void* raw, size_t count, int divisor) {
  using L = Lane<T>;
  using Acc = typename L::Acc;
  T* values = static_cast<T*>(raw);
  const Acc scale = Acc(1) / static_cast<Acc>(divisor);
  for (size_t i = 0; i < count; ++i) values[i] = L::store(L::load(values[i]) * scale);
}

inline void divide_dispatch(void* buf, size_t count, domino_dtype_t dtype, int divisor) {
  switch (dtype) {
    case DOMINO_FLOAT32:
      return divide_typed<float>(buf, count, divisor);
    case DOMINO_FLOAT64:
      return divide_typed<double>(buf, count, divisor);
    case DOMINO_FLOAT16:
      return divide_typed<_Float16>(buf, count, divisor);
    case DOMINO_BFLOAT16:
      return divide_typed<BFloat16Bits>(buf, count, divisor);
    default:
      return;
  }
}
