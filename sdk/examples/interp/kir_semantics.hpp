// KIR value semantics for the INTERP interpreter: the C++ type of each dtype and how a lane is stored in a 64-bit
// slot, exact float16/bfloat16 conversions, casts as the CPU plugin's compiled C performs them, and apply<OP, T>(),
// one lane of every ALU op. This is the file to read for what each op means, dtype by dtype.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/status.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tg::interp {
// ---- dtypes ---------------------------------------------------------------------------------------------------------

// The two 16-bit float storage types, distinct so that casts can tell them apart.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <class T>
uint64_t to_raw(T v) {
  if constexpr (std::is_same_v<T, bool>)
    return v ? 1 : 0;
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return v.bits;
  else if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<uint32_t>(v);
  else if constexpr (std::is_same_v<T, double>)
    return std::bit_cast<uint64_t>(v);
  else if constexpr (std::is_signed_v<T>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return static_cast<uint64_t>(v);
}

template <class T>
T from_raw(uint64_t raw) {
  if constexpr (std::is_same_v<T, bool>)
    return raw != 0;
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return T{static_cast<uint16_t>(raw)};
  else if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<float>(static_cast<uint32_t>(raw));
  else if constexpr (std::is_same_v<T, double>)
    return std::bit_cast<double>(raw);
  else
    return static_cast<T>(raw);  // modular since C++20; raw is already in T's range
}

// Calls f(T{}) with T the C++ type of a KIR dtype.
template <class F>
decltype(auto) with_type(uint32_t dtype, F&& f) {
  switch (static_cast<tg_dtype>(dtype)) {
    case TG_DTYPE_BOOL: return f(bool{});
    case TG_DTYPE_INT8: return f(int8_t{});
    case TG_DTYPE_INT16: return f(int16_t{});
    case TG_DTYPE_INT32: return f(int32_t{});
    case TG_DTYPE_INT64: return f(int64_t{});
    case TG_DTYPE_UINT8: return f(uint8_t{});
    case TG_DTYPE_UINT16: return f(uint16_t{});
    case TG_DTYPE_UINT32: return f(uint32_t{});
    case TG_DTYPE_UINT64: return f(uint64_t{});
    case TG_DTYPE_FLOAT16: return f(Half{});
    case TG_DTYPE_BFLOAT16: return f(BFloat16{});
    case TG_DTYPE_FLOAT32: return f(float{});
    case TG_DTYPE_FLOAT64: return f(double{});
    case TG_DTYPE_COUNT: break;
  }
  throw sdk::Error(TG_ERR_INTERNAL, sdk::cat("no C++ type for dtype ", dtype));
}

// ---- float16 / bfloat16 (the CPU plugin's kHalfHelpers, in C++)
// ------------------------------------------------------

// d rounded to nearest even in a binary float with ebits exponent and mbits mantissa bits: its bits.
inline uint16_t round_small_float(double d, int ebits, int mbits) {
  const uint64_t b = std::bit_cast<uint64_t>(d), man = b & 0xfffffffffffffULL;
  const uint32_t sign = static_cast<uint32_t>(b >> 63) << (ebits + mbits), emax = (1u << ebits) - 1u;
  const int exp = static_cast<int>((b >> 52) & 0x7ff), e = exp - 1023 + (1 << (ebits - 1)) - 1;
  if (exp == 0x7ff)  // inf, or a quiet NaN keeping the top of the payload
    return static_cast<uint16_t>(sign | (emax << mbits) |
                                 (man ? (1u << (mbits - 1)) | static_cast<uint32_t>(man >> (52 - mbits)) : 0u));
  if (e >= static_cast<int>(emax)) return static_cast<uint16_t>(sign | (emax << mbits));  // overflow: inf
  const uint64_t m = man | (1ULL << 52);
  const int shift = 52 - mbits + (e <= 0 ? 1 - e : 0);  // bits to drop; subnormal results drop more
  if (shift > 54) return static_cast<uint16_t>(sign);   // below half the smallest subnormal
  uint32_t q = e <= 0
                   ? static_cast<uint32_t>(m >> shift)
                   : (static_cast<uint32_t>(e) << mbits) | static_cast<uint32_t>((m >> shift) & ((1u << mbits) - 1u));
  const uint64_t rem = m & ((1ULL << shift) - 1ULL), half_ulp = 1ULL << (shift - 1);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u))) q += 1u;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | q);
}

inline float half_to_float(Half h) {
  const uint32_t b = h.bits, sign = (b & 0x8000u) << 16, exp = (b >> 10) & 0x1fu, man = b & 0x3ffu;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * (static_cast<float>(man) * 0x1p-24f);  // zero or subnormal: exact
  return std::bit_cast<float>(sign | (exp == 0x1fu ? 0x7f800000u : (exp + 112u) << 23) | (man << 13));
}
inline float bf16_to_float(BFloat16 h) { return std::bit_cast<float>(static_cast<uint32_t>(h.bits) << 16); }

// ---- casts: C's conversions as the CPU plugin's clang build performs them on x86-64
// -----------------------------------

// cvttss2si/cvttsd2si: truncation toward zero; NaN and out-of-range give the most negative value. (In the C the
// CPU plugin renders, out-of-range float->int is undefined; this is what its x86-64 code does for scalars.)
template <class I, class F>
I truncate_like_x86(F x) {
  constexpr F lo = static_cast<F>(std::numeric_limits<I>::min());  // -2^31 or -2^63, exact in float and double
  if (!(x >= lo && x < -lo)) return std::numeric_limits<I>::min();
  return static_cast<I>(x);
}

// With AVX-512F, clang converts to uint32/uint64 with vcvttss2usi/vcvttps2udq, whose out-of-range answer (also for
// negative values and NaN) is all ones; without it, through the signed conversions below.
inline bool host_has_avx512f() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

template <class To, class F>
To float_to_int(F x) {
  if constexpr (std::is_same_v<To, int32_t> || std::is_same_v<To, int64_t>)
    return truncate_like_x86<To>(x);
  else if constexpr (sizeof(To) < 4)
    return static_cast<To>(truncate_like_x86<int32_t>(x));  // via a 32-bit cvtt
  else if (host_has_avx512f()) {
    if (!(x > F(-1) && x < F(2) * static_cast<F>(uint64_t{1} << (8 * sizeof(To) - 1)))) return static_cast<To>(~To{0});
    return static_cast<To>(x);
  } else if constexpr (std::is_same_v<To, uint32_t>)
    return static_cast<To>(truncate_like_x86<int64_t>(x));
  else {  // uint64: values at or above 2^63 convert after subtracting 2^63
    constexpr F two63 = static_cast<F>(9223372036854775808.0);
    if (x < two63) return static_cast<uint64_t>(truncate_like_x86<int64_t>(x));
    return static_cast<uint64_t>(truncate_like_x86<int64_t>(x - two63)) ^ (uint64_t{1} << 63);
  }
}

// The value a cast starts from: 16-bit floats widen to float first, as the CPU renderer's helpers do.
template <class From>
auto widen(From v) {
  if constexpr (std::is_same_v<From, Half>)
    return half_to_float(v);
  else if constexpr (std::is_same_v<From, BFloat16>)
    return bf16_to_float(v);
  else
    return v;
}

template <class To, class From>
To convert(From v) {
  const auto wide = widen(v);
  using W = decltype(wide);
  if constexpr (std::is_same_v<To, bool>)
    return wide != 0;
  else if constexpr (std::is_same_v<To, Half>)
    return Half{round_small_float(static_cast<double>(wide), 5, 10)};
  else if constexpr (std::is_same_v<To, BFloat16>)
    return BFloat16{round_small_float(static_cast<double>(wide), 8, 7)};
  else if constexpr (std::is_floating_point_v<To>)
    return static_cast<To>(wide);
  else if constexpr (std::is_floating_point_v<W>)
    return float_to_int<To>(wide);
  else
    return static_cast<To>(wide);  // integer -> integer wraps (C++20 defines it as C compilers do)
}

// ---- ALU ----------------------------------------------------------------------------------------------------------

template <class T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;
template <class T>
constexpr bool kIsBool = std::is_same_v<T, bool>;

// Integer arithmetic in uint64_t, truncated to T: wrap-around without signed overflow.
template <class T>
T wrap(uint64_t v) {
  return static_cast<T>(v);
}
template <class T>
uint64_t u64(T v) {
  return static_cast<uint64_t>(v);
}

// One lane of an ALU op on operands of type T. Comparisons return bool; everything else T. Combinations the caps
// do not declare (AND on floats, ADD on bool, any op on float16) are never decoded, so their branches are unused.
template <uint32_t OP, class T>
auto apply(T a, T b, T c) {
  if constexpr (OP == TG_KIR_CMPLT)
    return a < b;
  else if constexpr (OP == TG_KIR_CMPNE)
    return a != b;
  else if constexpr (OP == TG_KIR_CMPEQ)
    return a == b;
  else if constexpr (kIsBool<T>) {
    if constexpr (OP == TG_KIR_AND)
      return a && b;
    else if constexpr (OP == TG_KIR_OR)
      return a || b;
    else if constexpr (OP == TG_KIR_XOR)
      return a != b;
    else
      return false;
  } else if constexpr (kIsFloat<T>) {
    if constexpr (OP == TG_KIR_NEG)
      return -a;
    else if constexpr (OP == TG_KIR_EXP2)
      return std::exp2(a);  // exp2f/exp2 from libm, as the CPU's kernels call
    else if constexpr (OP == TG_KIR_LOG2)
      return std::log2(a);
    else if constexpr (OP == TG_KIR_SIN)
      return std::sin(a);
    else if constexpr (OP == TG_KIR_SQRT)
      return std::sqrt(a);
    else if constexpr (OP == TG_KIR_RECIP)
      return T(1) / a;
    else if constexpr (OP == TG_KIR_TRUNC)
      return std::trunc(a);
    else if constexpr (OP == TG_KIR_ADD)
      return a + b;
    else if constexpr (OP == TG_KIR_SUB)
      return a - b;
    else if constexpr (OP == TG_KIR_MUL)
      return a * b;
    else if constexpr (OP == TG_KIR_FDIV)
      return a / b;
    else if constexpr (OP == TG_KIR_MAX)
      return (a != a || b != b) ? a + b : (a > b ? a : b);  // a+b: the NaN
    else if constexpr (OP == TG_KIR_MULACC) {
      const T product = a * b;  // rounded: -ffp-contract=off keeps this from becoming an FMA
      return product + c;
    } else if constexpr (OP == TG_KIR_FMA)
      return std::fma(a, b, c);  // one rounding, as the hardware's FMA
    else
      return T{};
  } else {                                                     // integers
    constexpr uint64_t shift_mask = sizeof(T) == 8 ? 63 : 31;  // C shifts the promoted (32- or 64-bit) value
    if constexpr (OP == TG_KIR_NEG)
      return wrap<T>(0 - u64(a));
    else if constexpr (OP == TG_KIR_ADD)
      return wrap<T>(u64(a) + u64(b));
    else if constexpr (OP == TG_KIR_SUB)
      return wrap<T>(u64(a) - u64(b));
    else if constexpr (OP == TG_KIR_MUL)
      return wrap<T>(u64(a) * u64(b));
    else if constexpr (OP == TG_KIR_MULACC)
      return wrap<T>(u64(a) * u64(b) + u64(c));
    else if constexpr (OP == TG_KIR_DOT4) {  // int32 only (the caps say so): unsigned bytes of b, signed of c
      uint64_t sum = u64(a);
      for (int i = 0; i < 4; ++i)
        sum += u64(int64_t{static_cast<uint8_t>(u64(b) >> (8 * i))} * int64_t{static_cast<int8_t>(u64(c) >> (8 * i))});
      return wrap<T>(sum);
    } else if constexpr (OP == TG_KIR_IDIV) {
      if (b == 0) return T{0};
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return wrap<T>(0 - u64(a));  // INT_MIN / -1 wraps to INT_MIN
      }
      return static_cast<T>(a / b);
    } else if constexpr (OP == TG_KIR_MOD) {
      if (b == 0) return T{0};
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return T{0};
      }
      return static_cast<T>(a % b);
    } else if constexpr (OP == TG_KIR_MAX)
      return a > b ? a : b;
    else if constexpr (OP == TG_KIR_AND)
      return wrap<T>(u64(a) & u64(b));
    else if constexpr (OP == TG_KIR_OR)
      return wrap<T>(u64(a) | u64(b));
    else if constexpr (OP == TG_KIR_XOR)
      return wrap<T>(u64(a) ^ u64(b));
    else if constexpr (OP == TG_KIR_SHL)
      return wrap<T>(u64(a) << (u64(b) & shift_mask));
    else if constexpr (OP == TG_KIR_SHR) {
      const uint64_t count = u64(b) & shift_mask;
      if constexpr (std::is_signed_v<T>)
        return static_cast<T>(static_cast<int64_t>(a) >> count);  // arithmetic
      else
        return static_cast<T>(u64(a) >> count);  // logical (narrow types promote to a non-negative int)
    } else
      return T{};
  }
}

}  // namespace tg::interp
