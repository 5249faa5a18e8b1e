// Host reference semantics of KIR ops (see reference.hpp). Plain C++ loops over the documented rules: ints wrap,
// IDIV/MOD truncate, SHR is arithmetic for signed, float MAX propagates NaN, CMP gives bool, CAST float->int
// truncates, BITCAST keeps bits. Floats are computed in double (long double for the transcendentals) and
// rounded once to the dtype: for +, -, *, /, sqrt of float32/float16/bfloat16 operands that double rounding is
// innocuous (53 >= 2*24+2 bits), so the result is the correctly rounded one. Built with -ffp-contract=off so
// the compiler never fuses a reference a*b+c.
#include "reference.hpp"

#include <tg/sdk/c_renderer.hpp>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

namespace tg::conformance {

using sdk::is_float;
using sdk::is_int;
using sdk::is_signed_int;

namespace {

// Exponent and fraction bits of the small float formats.
struct SmallFloat {
  int ebits, mbits;
};
SmallFloat small_format(uint32_t dtype) { return dtype == TG_DTYPE_FLOAT16 ? SmallFloat{5, 10} : SmallFloat{8, 7}; }

// `value` rounded to nearest-even in a binary float with `ebits` exponent and `mbits` fraction bits: its bits.
// Scales by powers of two (exact) and lets nearbyint() do the rounding in the default round-to-nearest-even mode.
uint64_t round_small(double value, SmallFloat f) {
  const uint64_t sign = std::signbit(value) ? uint64_t{1} << (f.ebits + f.mbits) : 0;
  const uint64_t exp_all_ones = (uint64_t{1} << f.ebits) - 1;
  const int bias = (1 << (f.ebits - 1)) - 1;
  if (std::isnan(value)) return sign | (exp_all_ones << f.mbits) | (uint64_t{1} << (f.mbits - 1));
  const double a = std::fabs(value);
  if (std::isinf(a)) return sign | (exp_all_ones << f.mbits);
  if (a == 0) return sign;
  int e = 0;
  std::frexp(a, &e);                            // a = m * 2^e with m in [0.5, 1): floor(log2 a) = e - 1
  const int scale = std::max(e - 1, 1 - bias);  // subnormals share the smallest normal's quantum
  const double rounded = std::ldexp(std::nearbyint(std::ldexp(a, f.mbits - scale)), scale - f.mbits);
  if (rounded == 0) return sign;
  std::frexp(rounded, &e);
  const int exponent = e - 1;
  if (exponent > bias) return sign | (exp_all_ones << f.mbits);  // overflow (also after rounding up): inf
  if (exponent < 1 - bias) return sign | static_cast<uint64_t>(std::ldexp(rounded, bias - 1 + f.mbits));
  const uint64_t fraction = static_cast<uint64_t>(std::ldexp(rounded, f.mbits - exponent)) - (uint64_t{1} << f.mbits);
  return sign | (static_cast<uint64_t>(exponent + bias) << f.mbits) | fraction;
}

double small_to_double(uint64_t bits, SmallFloat f) {
  const int bias = (1 << (f.ebits - 1)) - 1;
  const uint64_t exp_all_ones = (uint64_t{1} << f.ebits) - 1;
  const uint64_t fraction = bits & ((uint64_t{1} << f.mbits) - 1), exp = (bits >> f.mbits) & exp_all_ones;
  const double sign = (bits >> (f.ebits + f.mbits)) & 1 ? -1.0 : 1.0;
  if (exp == exp_all_ones) return fraction ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(static_cast<double>(fraction), 1 - bias - f.mbits);
  return sign *
         std::ldexp(static_cast<double>(fraction | (uint64_t{1} << f.mbits)), static_cast<int>(exp) - bias - f.mbits);
}

uint64_t bool_bits(bool b) { return b ? 1 : 0; }

// Units in the last place of `x` in a float dtype: the gap to the next representable value away from zero.
double ulp(uint32_t dtype, double x) {
  const double a = std::fabs(x);
  if (dtype == TG_DTYPE_FLOAT64) return std::nextafter(a, INFINITY) - a;
  if (dtype == TG_DTYPE_FLOAT32) {
    const float f = static_cast<float>(a);
    return static_cast<double>(std::nextafter(f, INFINITY)) - static_cast<double>(f);
  }
  const SmallFloat f = small_format(dtype);
  const int bias = (1 << (f.ebits - 1)) - 1;
  int e = 0;
  std::frexp(a, &e);
  return std::ldexp(1.0, std::max(e - 1, 1 - bias) - f.mbits);
}

// Allowed error of the approximate ops, in ulps of the exact result (SIN also allows an absolute error: the
// usual GPU approximations are accurate in absolute terms near the zeros of sine, not in ulps).
double ulp_tolerance(uint32_t op, uint32_t dtype) {
  if (dtype == TG_DTYPE_FLOAT16 || dtype == TG_DTYPE_BFLOAT16) return 1;
  switch (op) {
    case TG_KIR_SQRT: return 1;
    case TG_KIR_EXP2:
    case TG_KIR_LOG2:
    case TG_KIR_SIN: return 2;
    default: return 0;
  }
}
double sin_abs_tolerance(uint32_t dtype) { return dtype == TG_DTYPE_FLOAT64 ? 0x1p-50 : 0x1p-21; }

uint64_t float_op(uint32_t op, uint32_t dtype, const uint64_t* srcs) {
  const double a = to_double(dtype, srcs[0]);
  const double b = op >= TG_KIR_ADD && op != TG_KIR_WHERE ? to_double(dtype, srcs[1]) : 0;
  const auto r = [&](double v) { return from_double(dtype, v); };
  const auto rl = [&](long double v) { return from_double(dtype, static_cast<double>(v)); };
  switch (op) {
    case TG_KIR_NEG: return r(-a);
    case TG_KIR_EXP2: return rl(std::exp2(static_cast<long double>(a)));
    case TG_KIR_LOG2: return rl(std::log2(static_cast<long double>(a)));
    case TG_KIR_SIN: return rl(std::sin(static_cast<long double>(a)));
    case TG_KIR_SQRT: return r(std::sqrt(a));
    case TG_KIR_RECIP: return r(1.0 / a);
    case TG_KIR_TRUNC: return r(std::trunc(a));
    case TG_KIR_ADD: return r(a + b);
    case TG_KIR_SUB: return r(a - b);
    case TG_KIR_MUL: return r(a * b);
    case TG_KIR_FDIV: return r(a / b);
    case TG_KIR_MAX: return std::isnan(a) || std::isnan(b) ? r(NAN) : r(a > b ? a : b);
    case TG_KIR_CMPLT: return bool_bits(a < b);
    case TG_KIR_CMPNE: return bool_bits(a != b);
    case TG_KIR_CMPEQ: return bool_bits(a == b);
    case TG_KIR_WHERE: return srcs[0] ? srcs[1] : srcs[2];
    case TG_KIR_FMA:  // one rounding, in the dtype itself (fma in double, then rounded again, could differ)
      if (dtype == TG_DTYPE_FLOAT32)
        return r(
            std::fmaf(static_cast<float>(a), static_cast<float>(b), static_cast<float>(to_double(dtype, srcs[2]))));
      return r(std::fma(a, b, to_double(dtype, srcs[2])));
    case TG_KIR_MULACC: {  // two roundings, as the unfused a*b+c; acceptable() also takes the fused result
      const uint64_t product = r(a * b);
      return r(to_double(dtype, product) + to_double(dtype, srcs[2]));
    }
    default: return 0;
  }
}

uint64_t int_op(uint32_t op, uint32_t dtype, const uint64_t* srcs) {
  const uint32_t bits = 8 * tg_dtype_size(dtype);
  const bool is_signed = is_signed_int(dtype);
  const uint64_t ua = srcs[0], ub = op >= TG_KIR_ADD && op != TG_KIR_WHERE ? srcs[1] : 0;
  const int64_t sa = to_signed(dtype, ua), sb = to_signed(dtype, ub);
  const auto t = [&](uint64_t v) { return truncate_bits(dtype, v); };
  const auto lt = [&] { return is_signed ? sa < sb : ua < ub; };
  switch (op) {
    case TG_KIR_NEG: return t(0 - ua);
    case TG_KIR_ADD: return t(ua + ub);
    case TG_KIR_SUB: return t(ua - ub);
    case TG_KIR_MUL: return t(ua * ub);
    // The battery never divides by zero or INT_MIN by -1 (the core guards both), so C's rules apply.
    case TG_KIR_IDIV: return is_signed ? t(static_cast<uint64_t>(sa / sb)) : t(ua / ub);
    case TG_KIR_MOD: return is_signed ? t(static_cast<uint64_t>(sa % sb)) : t(ua % ub);
    case TG_KIR_MAX: return lt() ? ub : ua;
    case TG_KIR_CMPLT: return bool_bits(lt());
    case TG_KIR_CMPNE: return bool_bits(ua != ub);
    case TG_KIR_CMPEQ: return bool_bits(ua == ub);
    case TG_KIR_AND: return ua & ub;
    case TG_KIR_OR: return ua | ub;
    case TG_KIR_XOR: return ua ^ ub;
    case TG_KIR_SHL: return t(ua << (ub % bits));
    case TG_KIR_SHR: return is_signed ? t(static_cast<uint64_t>(sa >> (ub % bits))) : ua >> (ub % bits);
    case TG_KIR_WHERE: return srcs[0] ? srcs[1] : srcs[2];
    case TG_KIR_MULACC: return t(ua * ub + srcs[2]);
    case TG_KIR_LUT16: {  // int32: byte i = entry (byte i of srcs[0]) & 15 of the 16 bytes of srcs[1..4]
      uint64_t out = 0;
      for (int i = 0; i < 32; i += 8) {
        const uint64_t n = (srcs[0] >> i) & 15;
        out |= ((srcs[1 + n / 4] >> (8 * (n % 4))) & 255) << i;
      }
      return t(out);
    }
    case TG_KIR_DOT4: {  // int32: srcs[0] + unsigned bytes of srcs[1] x signed bytes of srcs[2]
      uint64_t sum = srcs[0];
      for (int i = 0; i < 4; ++i)
        sum += static_cast<uint64_t>(int64_t{static_cast<uint8_t>(srcs[1] >> (8 * i))} *
                                     static_cast<int8_t>(srcs[2] >> (8 * i)));
      return t(sum);
    }
    default: return 0;
  }
}

uint64_t cast(uint32_t from, uint32_t to, uint64_t bits) {
  if (to == TG_DTYPE_BOOL) return bool_bits(is_float(from) ? to_double(from, bits) != 0 : bits != 0);
  if (is_int(to)) {
    if (!is_float(from)) return truncate_bits(to, static_cast<uint64_t>(to_signed(from, bits)));
    // In-range inputs only (the battery picks them): truncation toward zero.
    const double v = std::trunc(to_double(from, bits));
    return truncate_bits(to, v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v));
  }
  if (is_float(from) || from == TG_DTYPE_BOOL) return from_double(to, to_double(from, bits));
  // Integers round once, to the target itself where the host can (int64 -> float32 through double would round
  // twice); float16/bfloat16 go through double, exact for every int that does not overflow them anyway.
  const bool is_signed = is_signed_int(from);
  const int64_t s = to_signed(from, bits);
  if (to == TG_DTYPE_FLOAT32)
    return std::bit_cast<uint32_t>(is_signed ? static_cast<float>(s) : static_cast<float>(static_cast<uint64_t>(s)));
  if (to == TG_DTYPE_FLOAT64)
    return std::bit_cast<uint64_t>(is_signed ? static_cast<double>(s) : static_cast<double>(static_cast<uint64_t>(s)));
  return from_double(to, is_signed ? static_cast<double>(s) : static_cast<double>(static_cast<uint64_t>(s)));
}

}  // namespace

uint64_t truncate_bits(uint32_t dtype, uint64_t bits) {
  const uint32_t size = tg_dtype_size(dtype);
  return size >= 8 ? bits : bits & ((uint64_t{1} << (8 * size)) - 1);
}

int64_t to_signed(uint32_t dtype, uint64_t bits) {
  const uint32_t shift = 64 - 8 * tg_dtype_size(dtype);
  if (!is_signed_int(dtype)) return static_cast<int64_t>(truncate_bits(dtype, bits));
  return static_cast<int64_t>(bits << shift) >> shift;
}

double to_double(uint32_t dtype, uint64_t bits) {
  switch (dtype) {
    case TG_DTYPE_FLOAT64: return std::bit_cast<double>(bits);
    case TG_DTYPE_FLOAT32: return std::bit_cast<float>(static_cast<uint32_t>(bits));
    case TG_DTYPE_FLOAT16:
    case TG_DTYPE_BFLOAT16: return small_to_double(bits, small_format(dtype));
    default: break;
  }
  if (is_signed_int(dtype)) return static_cast<double>(to_signed(dtype, bits));
  return static_cast<double>(truncate_bits(dtype, bits));
}

uint64_t from_double(uint32_t dtype, double value) {
  if (dtype == TG_DTYPE_FLOAT64) return std::bit_cast<uint64_t>(value);
  if (dtype == TG_DTYPE_FLOAT32) return std::bit_cast<uint32_t>(static_cast<float>(value));
  return round_small(value, small_format(dtype));
}

bool is_nan_bits(uint32_t dtype, uint64_t bits) { return is_float(dtype) && std::isnan(to_double(dtype, bits)); }

bool has_reference(uint32_t op, uint32_t dtype) {
  if (op == TG_KIR_CAST || op == TG_KIR_BITCAST || op == TG_KIR_WHERE) return true;
  const bool cmp_or_logic = op == TG_KIR_CMPLT || op == TG_KIR_CMPNE || op == TG_KIR_CMPEQ;
  const bool bitwise = op == TG_KIR_AND || op == TG_KIR_OR || op == TG_KIR_XOR;
  if (dtype == TG_DTYPE_BOOL) return cmp_or_logic || bitwise;
  if (is_float(dtype))
    return op == TG_KIR_NEG || (op >= TG_KIR_EXP2 && op <= TG_KIR_TRUNC) || op == TG_KIR_ADD || op == TG_KIR_SUB ||
           op == TG_KIR_MUL || op == TG_KIR_FDIV || op == TG_KIR_MAX || cmp_or_logic || op == TG_KIR_MULACC ||
           (op == TG_KIR_FMA && (dtype == TG_DTYPE_FLOAT32 || dtype == TG_DTYPE_FLOAT64));
  return op == TG_KIR_NEG || (op >= TG_KIR_ADD && op <= TG_KIR_MOD) || op == TG_KIR_MAX || cmp_or_logic || bitwise ||
         op == TG_KIR_SHL || op == TG_KIR_SHR || op == TG_KIR_MULACC ||
         ((op == TG_KIR_DOT4 || op == TG_KIR_LUT16) && dtype == TG_DTYPE_INT32);
}

uint64_t evaluate(uint32_t op, uint32_t src_dtype, uint32_t dst_dtype, const uint64_t* srcs) {
  if (op == TG_KIR_CAST) return cast(src_dtype, dst_dtype, srcs[0]);
  if (op == TG_KIR_BITCAST) return truncate_bits(dst_dtype, srcs[0]);
  if (src_dtype == TG_DTYPE_BOOL) {
    const bool a = srcs[0] != 0, b = srcs[1] != 0;
    switch (op) {
      case TG_KIR_AND: return bool_bits(a && b);
      case TG_KIR_OR: return bool_bits(a || b);
      case TG_KIR_XOR: return bool_bits(a != b);
      case TG_KIR_CMPLT: return bool_bits(!a && b);
      case TG_KIR_CMPNE: return bool_bits(a != b);
      case TG_KIR_CMPEQ: return bool_bits(a == b);
      case TG_KIR_WHERE: return srcs[0] ? srcs[1] : srcs[2];
      default: return 0;
    }
  }
  return is_float(src_dtype) ? float_op(op, src_dtype, srcs) : int_op(op, src_dtype, srcs);
}

bool acceptable(uint32_t op, uint32_t src_dtype, uint32_t dst_dtype, const uint64_t* srcs, uint64_t got) {
  got = truncate_bits(dst_dtype, got);
  const uint64_t want = evaluate(op, src_dtype, dst_dtype, srcs);
  if (got == want) return true;
  if (!is_float(dst_dtype)) return false;  // ints and bools are exact: a bool is the byte 0 or 1
  if (is_nan_bits(dst_dtype, want)) return is_nan_bits(dst_dtype, got);  // NaN payloads and signs are free
  if (is_nan_bits(dst_dtype, got) || op == TG_KIR_BITCAST || op == TG_KIR_CAST) return false;
  const double g = to_double(dst_dtype, got), w = to_double(dst_dtype, want);
  if (op == TG_KIR_MAX) return g == 0 && w == 0;  // MAX(-0, +0) may give either zero
  if (op == TG_KIR_MULACC) {                      // fused (one rounding) is as good as two roundings
    const double a = to_double(src_dtype, srcs[0]), b = to_double(src_dtype, srcs[1]),
                 c = to_double(src_dtype, srcs[2]);
    const uint64_t fused =
        src_dtype == TG_DTYPE_FLOAT32
            ? from_double(dst_dtype, std::fmaf(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)))
            : from_double(dst_dtype, std::fma(a, b, c));
    return got == fused;
  }
  const double tolerance = ulp_tolerance(op, dst_dtype);
  if (tolerance == 0 || std::isinf(w) || std::isinf(g)) return false;
  const double err = std::fabs(g - w);
  if (op == TG_KIR_SIN && err <= sin_abs_tolerance(dst_dtype)) return true;
  return err <= tolerance * ulp(dst_dtype, w);
}

std::string rule_of(uint32_t op, uint32_t src_dtype, uint32_t dst_dtype) {
  using sdk::cat;
  const double tolerance = ulp_tolerance(op, dst_dtype);
  if (op == TG_KIR_BITCAST) return "same bits";
  if (op == TG_KIR_CAST)
    return is_float(src_dtype) && is_int(dst_dtype) ? "float -> int truncates toward zero"
           : is_float(dst_dtype)                    ? "rounded to nearest even"
           : dst_dtype == TG_DTYPE_BOOL             ? "nonzero is true"
                                                    : "ints wrap";
  if (!is_float(src_dtype)) {
    if (op == TG_KIR_IDIV || op == TG_KIR_MOD) return "truncating division, C remainder";
    if (op == TG_KIR_SHR) return is_signed_int(src_dtype) ? "arithmetic shift" : "logical shift";
    if (op == TG_KIR_DOT4) return "c + a's unsigned bytes x b's signed bytes, wrapping";
    if (op == TG_KIR_LUT16) return "byte i = byte (a's byte i & 15) of the table b, c, d, e";
    return "ints wrap";
  }
  if (op == TG_KIR_MAX) return "NaN if either operand is NaN";
  if (op == TG_KIR_MULACC) return "a*b+c with one or two roundings";
  if (op == TG_KIR_FMA) return "a*b+c rounded once";
  if (op == TG_KIR_SIN) return cat("within ", tolerance, " ulp or ", sin_abs_tolerance(dst_dtype), " absolute");
  if (tolerance != 0) return cat("within ", tolerance, " ulp");
  return "IEEE, correctly rounded";
}

std::string show(uint32_t dtype, uint64_t bits) {
  bits = truncate_bits(dtype, bits);
  char text[80];
  if (dtype == TG_DTYPE_BOOL) return bits == 0 ? "false" : bits == 1 ? "true" : sdk::cat("bool(", bits, ")");
  if (is_float(dtype)) {
    std::snprintf(text, sizeof text, "%.*g (0x%llx)", dtype == TG_DTYPE_FLOAT64 ? 17 : 9, to_double(dtype, bits),
                  static_cast<unsigned long long>(bits));
    return text;
  }
  if (is_signed_int(dtype)) return std::to_string(to_signed(dtype, bits));
  return std::to_string(bits);
}

}  // namespace tg::conformance
