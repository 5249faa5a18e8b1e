// Polynomial exp2, log2 and sin as UOp graphs (float32 and float64 scalars) for renderers without them.
// Measured max error in ulp, against exp2/log2/sin in double (float32) and long double (float64), graphs run by an
// interpreter with C semantics (tests/unit/codegen/transcendental_test.cpp holds one and asserts these bounds):
//   exp2 float32 1.15 (every 3rd float in [-160, 160], subnormal results included)   float64 1.13 (random, all x)
//   log2 float32 0.86 (every float in [0.5, 2], every 61st positive float)            float64 0.79 (random, all x > 0)
//   sin  float32 2.35 (every 3rd float with |x| <= 12867, floats next to k*pi/2)       float64 2.32 (|x| <= 1.6e9)
//
// Only ADD SUB MUL FDIV NEG CMPLT CMPNE CMPEQ WHERE TRUNC CAST BITCAST SHL SHR AND OR and CONST are emitted, on the
// float type and its same-size signed int. Every float->int CAST sees an in-range value (inputs are sanitized
// first), shifts only see non-negative values, and special values are decided on the integer bits so that a
// fast-math backend cannot fold them away.
//
// exp2: x = q + s, q = round(x), |s| <= 1/2; 2^s by the Taylor series of e^(s ln2) (degree 7 / 13); 2^q applied in
//   two exact power-of-two steps so overflow gives inf and the subnormal range rounds once. exp2(+inf) = inf,
//   exp2(-inf) = 0, exp2(nan) = nan.
// log2: fdlibm's scheme. x = 2^k * m, m in [sqrt(2)/2, sqrt(2)), f = m - 1, s = f/(2+f),
//   log(1+f) = f - f^2/2 + s*(f^2/2 + R(s^2)) with R the atanh series (4 / 10 terms); the result is split into
//   hi + lo and multiplied by 1/ln2 = ivln2hi + ivln2lo so log2 stays accurate near 1. Subnormals are pre-scaled.
//   log2(+-0) = -inf, log2(x < 0) = nan, log2(inf) = inf, log2(nan) = nan, log2(1) = +0.
// sin: Cody-Waite reduction x = q*pi/2 + r with pi/2 split in 5 parts whose first 4 have few enough bits that
//   q*P_i is exact while |q| < 2^13 (float32) / 2^30 (float64), i.e. |x| <= 12867 / 1.68e9: the documented range.
//   3 parts are not enough: floats next to multiples of pi leave |r| down to 2^-27 below 1e4, and a 3-part split
//   with the same 11-bit parts measured 14 ulp for |x| < 256 and 530 ulp for |x| < 12867. Then Taylor polynomials
//   for sin / cos on |r| <= pi/4 (degree 9/10 float32, 17/16 float64) and the quadrant q mod 4.
//   Beyond the range the products q*P_i round and the error grows with |x|, measured as absolute errors:
//   float32 < 1e-6 up to 1e5, 0.03 up to 1e6, meaningless (any value in [-1, 1]) from ~1e7 on; float64 < 1e-6
//   up to 1e10, 6e-5 up to 1e12, 0.11 up to 1e15, meaningless from ~1e16 on. r is clamped to [-0.8, 0.8] so the
//   result is always in [-1, 1] and never NaN for finite x. sin(+-inf) = sin(nan) = nan, sin(-0) = -0, sin is odd.
#include "codegen/transcendental.hpp"

#include <cmath>
#include <initializer_list>
#include <limits>

#include "tg/error.hpp"

namespace tg::codegen {

using namespace ir;

namespace {

// The float type being built for and its integer twin, with the IEEE layout constants.
struct Ctx {
  DType ft, it;
  bool f64;
  int mant;          // explicit mantissa bits: 23 / 52
  int64_t bias;      // exponent bias: 127 / 1023
  int64_t inf_bits;  // bit pattern of +inf
  int64_t abs_mask;  // all bits but the sign
  int64_t one_bits;  // bit pattern of 1.0

  explicit Ctx(DType t) : ft(t) {
    if (t.count != 1 || (t.scalar != ScalarType::Float32 && t.scalar != ScalarType::Float64))
      throw Error("transcendental: only scalar float32/float64 are supported, got " + t.name());
    f64 = t.scalar == ScalarType::Float64;
    it = f64 ? dtypes::int64 : dtypes::int32;
    mant = f64 ? 52 : 23;
    bias = f64 ? 1023 : 127;
    inf_bits = f64 ? 0x7ff0000000000000LL : 0x7f800000LL;
    abs_mask = f64 ? 0x7fffffffffffffffLL : 0x7fffffffLL;
    one_bits = f64 ? 0x3ff0000000000000LL : 0x3f800000LL;
  }

  // float constant; for float32 rounded to float here so the graph holds exactly what a renderer prints
  UOpPtr f(double v) const { return const_float(ft, f64 ? v : static_cast<double>(static_cast<float>(v))); }
  UOpPtr i(int64_t v) const { return const_int(it, v); }
  UOpPtr to_int_bits(const UOpPtr& x) const { return UOp::make(Op::BITCAST, it, {x}); }
  UOpPtr to_float_bits(const UOpPtr& x) const { return UOp::make(Op::BITCAST, ft, {x}); }
  // 2^n for an integer node n whose value keeps the exponent normal
  UOpPtr pow2(const UOpPtr& n) const { return to_float_bits(alu(Op::SHL, alu(Op::ADD, n, i(bias)), i(mant))); }
};

UOpPtr add(const UOpPtr& a, const UOpPtr& b) { return alu(Op::ADD, a, b); }
UOpPtr sub(const UOpPtr& a, const UOpPtr& b) { return alu(Op::SUB, a, b); }
UOpPtr mul(const UOpPtr& a, const UOpPtr& b) { return alu(Op::MUL, a, b); }
UOpPtr lt(const UOpPtr& a, const UOpPtr& b) { return alu(Op::CMPLT, a, b); }
UOpPtr where(const UOpPtr& c, const UOpPtr& a, const UOpPtr& b) { return alu(Op::WHERE, c, a, b); }

// Horner: c[0] + x*(c[1] + x*(c[2] + ...)).
UOpPtr horner(const Ctx& k, const UOpPtr& x, std::initializer_list<double> coeffs) {
  const double* c = coeffs.begin();
  size_t n = coeffs.size();
  UOpPtr acc = k.f(c[n - 1]);
  for (size_t j = n - 1; j-- > 0;) acc = add(k.f(c[j]), mul(x, acc));
  return acc;
}

// |bits| > inf_bits: x is NaN (decided on the integer bits)
UOpPtr is_nan_bits(const Ctx& k, const UOpPtr& x) {
  return lt(k.i(k.inf_bits), alu(Op::AND, k.to_int_bits(x), k.i(k.abs_mask)));
}

}  // namespace

UOpPtr xexp2(const UOpPtr& x) {
  Ctx k(x->dtype);
  const double lim = k.f64 ? 1100.0 : 160.0;  // beyond: overflow to inf / underflow to 0 either way
  UOpPtr nan = is_nan_bits(k, x);
  UOpPtr xc = where(lt(x, k.f(-lim)), k.f(-lim), x);
  xc = where(lt(k.f(lim), xc), k.f(lim), xc);
  xc = where(nan, k.f(0.0), xc);  // in [-lim, lim], so the casts below stay in range
  UOpPtr q = alu(Op::TRUNC, add(xc, where(lt(xc, k.f(0.0)), k.f(-0.5), k.f(0.5))));  // round half away
  UOpPtr s = sub(xc, q);                                                             // exact, |s| <= 1/2
  // 2^s = sum (s ln2)^n / n!; truncation error < 0.1 ulp on |s| <= 1/2
  UOpPtr p = k.f64
                 ? horner(k, s,
                          {1.0, 0x1.62e42fefa39efp-1, 0x1.ebfbdff82c58fp-3, 0x1.c6b08d704a0c0p-5, 0x1.3b2ab6fba4e77p-7,
                           0x1.5d87fe78a6731p-10, 0x1.430912f86c787p-13, 0x1.ffcbfc588b0c7p-17, 0x1.62c0223a5c824p-20,
                           0x1.b5253d395e7c4p-24, 0x1.e4cf5158b8ecap-28, 0x1.e8cac7351bb25p-32, 0x1.c3bd650fc2986p-36,
                           0x1.816193166d0f9p-40})
                 : horner(k, s,
                          {1.0, 0x1.62e42fefa39efp-1, 0x1.ebfbdff82c58fp-3, 0x1.c6b08d704a0c0p-5, 0x1.3b2ab6fba4e77p-7,
                           0x1.5d87fe78a6731p-10, 0x1.430912f86c787p-13, 0x1.ffcbfc588b0c7p-17});
  // 2^q in two halves: each factor is a normal power of two, the first product is exact, the second rounds once
  UOpPtr q1f = alu(Op::TRUNC, mul(q, k.f(0.5)));
  UOpPtr q1 = cast(q1f, k.it), q2 = cast(sub(q, q1f), k.it);
  UOpPtr r = mul(mul(p, k.pow2(q1)), k.pow2(q2));
  return where(nan, x, r);
}

UOpPtr xlog2(const UOpPtr& x) {
  Ctx k(x->dtype);
  UOpPtr bits = k.to_int_bits(x);
  // work on a positive finite value; zero, negatives, inf and nan are patched at the end
  UOpPtr xs = where(lt(bits, k.i(1)), k.f(1.0), x);
  xs = where(lt(bits, k.i(k.inf_bits)), xs, k.f(1.0));
  // subnormals: scale into the normal range first
  const int pre = k.f64 ? 54 : 25;
  UOpPtr tiny = lt(k.to_int_bits(xs), k.i(int64_t{1} << k.mant));
  xs = where(tiny, mul(xs, k.f(std::ldexp(1.0, pre))), xs);
  UOpPtr b = k.to_int_bits(xs);  // positive
  UOpPtr e = add(sub(alu(Op::SHR, b, k.i(k.mant)), k.i(k.bias)), where(tiny, k.i(-pre), k.i(0)));
  UOpPtr m = alu(Op::AND, b, k.i((int64_t{1} << k.mant) - 1));
  // i = implicit bit when the mantissa is >= sqrt(2): then use m/2 and k+1
  const int64_t sqrt2_mant = k.f64 ? 0x6a09e667f3bcdLL : 0x3504f3LL;
  UOpPtr ibit = alu(Op::AND, add(m, k.i((int64_t{1} << k.mant) - sqrt2_mant)), k.i(int64_t{1} << k.mant));
  UOpPtr xn = k.to_float_bits(alu(Op::OR, m, sub(k.i(k.one_bits), ibit)));  // in [sqrt(2)/2, sqrt(2))
  UOpPtr y = cast(add(e, alu(Op::SHR, ibit, k.i(k.mant))), k.ft);
  UOpPtr f = sub(xn, k.f(1.0));  // exact
  UOpPtr hfsq = mul(mul(k.f(0.5), f), f);
  UOpPtr s = alu(Op::FDIV, f, add(k.f(2.0), f));  // |s| <= 0.1716
  UOpPtr z = mul(s, s);
  // R(z) = sum_{n>=1} 2 z^n / (2n+1)  (log(1+f) = 2 atanh(s) = 2s + s*R)
  UOpPtr R = k.f64 ? mul(z, horner(k, z,
                                   {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11, 2.0 / 13, 2.0 / 15, 2.0 / 17,
                                    2.0 / 19, 2.0 / 21}))
                   : mul(z, horner(k, z, {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9}));
  UOpPtr r = mul(s, add(hfsq, R));
  // hi: f - hfsq with its low mantissa bits cleared so hi*ivln2hi is exact
  const int64_t hi_mask = k.f64 ? static_cast<int64_t>(0xffffffff00000000ULL) : int64_t{-4096};  // 0xfffff000
  UOpPtr hi = k.to_float_bits(alu(Op::AND, k.to_int_bits(sub(f, hfsq)), k.i(hi_mask)));
  UOpPtr lo = add(sub(sub(f, hi), hfsq), r);
  const double ivln2hi = k.f64 ? 0x1.71547652p+0 : 0x1.716p+0;
  const double ivln2lo = k.f64 ? 0x1.705fc2eefa2p-33 : -0x1.7135a8p-13;
  UOpPtr val_hi = mul(hi, k.f(ivln2hi));
  UOpPtr val_lo = add(mul(add(lo, hi), k.f(ivln2lo)), mul(lo, k.f(ivln2hi)));
  UOpPtr w = add(y, val_hi);  // y + val_hi as an exact-sum pair (|y| >= |val_hi| or y == 0)
  val_lo = add(val_lo, add(sub(y, w), val_hi));
  UOpPtr res = add(val_lo, w);
  // special values, on the bits of the original x
  UOpPtr abits = alu(Op::AND, bits, k.i(k.abs_mask));
  res = where(alu(Op::CMPEQ, bits, k.i(k.inf_bits)), k.f(std::numeric_limits<double>::infinity()), res);
  res = where(lt(bits, k.i(0)), k.f(std::numeric_limits<double>::quiet_NaN()), res);  // negative (incl -inf)
  res = where(lt(k.i(k.inf_bits), abits), x, res);                                    // nan stays nan
  res = where(alu(Op::CMPEQ, abits, k.i(0)), k.f(-std::numeric_limits<double>::infinity()), res);  // +-0
  return res;
}

UOpPtr xsin(const UOpPtr& x) {
  Ctx k(x->dtype);
  UOpPtr abits = alu(Op::AND, k.to_int_bits(x), k.i(k.abs_mask));
  UOpPtr nonfinite = lt(k.i(k.inf_bits - 1), abits);
  UOpPtr xs = where(nonfinite, k.f(0.0), x);
  UOpPtr q = alu(Op::TRUNC, add(mul(xs, k.f(0x1.45f306dc9c883p-1)),  // round(x * 2/pi), half away from zero
                                where(lt(xs, k.f(0.0)), k.f(-0.5), k.f(0.5))));
  UOpPtr r = xs;
  for (double p : k.f64 ? kHalfPiParts64 : kHalfPiParts32) r = sub(r, mul(q, k.f(p)));
  // in range |r| <= pi/4 (+ rounding); beyond the documented range keep the polynomials on their domain
  r = where(lt(r, k.f(-0.8)), k.f(-0.8), r);
  r = where(lt(k.f(0.8), r), k.f(0.8), r);
  UOpPtr z = mul(r, r);
  // Taylor: sin r = r + r*z*(-1/3! + z/5! - ...), cos r = 1 + z*(-1/2! + z/4! - ...)
  UOpPtr sp = k.f64 ? horner(k, z,
                             {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800, 1.0 / 6227020800,
                              -1.0 / 1307674368000, 1.0 / 355687428096000})
                    : horner(k, z, {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880});
  UOpPtr cp = k.f64 ? horner(k, z,
                             {-0.5, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600,
                              -1.0 / 87178291200, 1.0 / 20922789888000})
                    : horner(k, z, {-0.5, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800});
  UOpPtr sinr = add(r, mul(r, mul(z, sp)));
  UOpPtr cosr = add(k.f(1.0), mul(z, cp));
  // quadrant q mod 4, computed in float so the cast sees a value in [-3, 3] whatever |x| is
  UOpPtr qm = sub(q, mul(k.f(4.0), alu(Op::TRUNC, mul(q, k.f(0.25)))));
  UOpPtr quad = cast(qm, k.it);  // & below: two's complement gives the right residue for negative q
  UOpPtr odd = alu(Op::CMPNE, alu(Op::AND, quad, k.i(1)), k.i(0));
  UOpPtr neg = alu(Op::CMPNE, alu(Op::AND, quad, k.i(2)), k.i(0));
  UOpPtr v = where(odd, cosr, sinr);
  v = where(neg, alu(Op::NEG, v), v);
  v = where(alu(Op::CMPEQ, xs, k.f(0.0)), xs, v);  // sin(-0) = -0
  return where(nonfinite, k.f(std::numeric_limits<double>::quiet_NaN()), v);
}

}  // namespace tg::codegen
