// The semantics battery: KIR rules a generated program breaks only when its compiler is allowed to assume
// something KIR does not promise. Each kernel is written so that an optimizer leaning on C's undefined signed
// overflow, or fusing a MUL and a separate ADD into one FMA, computes a different answer than KIR defines:
//   - integer ADD and MUL wrap (two's complement): `x < x + 1` is false for the largest x, and `x * 2 < x` is not
//     `x < 0` (a compiler that treats signed overflow as impossible folds both; C needs -fwrapv or unsigned math);
//   - MUL then ADD, as two instructions, round twice: only MULACC may fuse (one or two roundings), and FMA must.
#include "harness.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tg::conformance {
namespace {

constexpr uint32_t kBool = TG_DTYPE_BOOL;

void require_ops(uint32_t dtype, std::initializer_list<uint32_t> ops) {
  const Session& s = session();
  if (!s.claims_dtype(dtype)) throw Skip(cat("the renderer does not claim ", sdk::dtype_name(dtype)));
  for (uint32_t op : ops)
    if (!s.claims_op(dtype, op))
      throw Skip(cat("the renderer does not claim ", sdk::dtype_name(dtype), " ", sdk::op_name(op)));
}

// Per work-item g: lt[g] = x < x + 1 and neg[g] = x * 2 < x, for x = in[g] at the edges of a signed dtype.
template <class T>
void signed_overflow_wraps(uint32_t dtype) {
  require_ops(dtype, {TG_KIR_ADD, TG_KIR_MUL, TG_KIR_CMPLT});
  require_ops(TG_DTYPE_INT32, {TG_KIR_ADD, TG_KIR_MUL});  // the index arithmetic
  constexpr T kMax = std::numeric_limits<T>::max(), kMin = std::numeric_limits<T>::min();
  const std::vector<T> x = {kMax, 0, -1, kMin, kMax - 1, 1};
  const uint32_t n = static_cast<uint32_t>(x.size());
  Kir k;
  const int lt = k.buffer(kBool, true), neg = k.buffer(kBool, true), in = k.buffer(dtype);
  const int g = k.global_id(n);
  const int v = k.load(dtype, in, g);
  k.store(lt, g, k.alu(TG_KIR_CMPLT, kBool, {v, k.alu(TG_KIR_ADD, dtype, {v, k.constant(dtype, 1)})}));
  k.store(neg, g, k.alu(TG_KIR_CMPLT, kBool, {k.alu(TG_KIR_MUL, dtype, {v, k.constant(dtype, 2)}), v}));
  Kernel kernel(k, cat("conf_wrap_", sdk::dtype_name(dtype)));
  Buffer blt(std::vector<unsigned char>(n, 0xCD)), bneg(std::vector<unsigned char>(n, 0xCD)), bin(x);
  kernel.launch({blt.addr(), bneg.addr(), bin.addr()}, {{n, 1, 1}, {1, 1, 1}});
  const std::vector<unsigned char> got_lt = blt.read(), got_neg = bneg.read();
  for (uint32_t i = 0; i < n; ++i) {
    using U = std::make_unsigned_t<T>;  // the wrapped results, computed without overflow on the host
    const T plus1 = static_cast<T>(static_cast<U>(x[i]) + 1u), times2 = static_cast<T>(static_cast<U>(x[i]) * 2u);
    const bool want_lt = x[i] < plus1, want_neg = times2 < x[i];
    if (got_lt[i] != want_lt || got_neg[i] != want_neg)
      kernel.fail(cat("x = ", +x[i], ": (x < x+1) gave ", +got_lt[i], ", expected ", want_lt, "; (x*2 < x) gave ",
                      +got_neg[i], ", expected ", want_neg,
                      ". KIR's integer ADD and MUL wrap; a C compiler that "
                      "assumes signed overflow never happens folds these comparisons (compile with -fwrapv or "
                      "render signed arithmetic through unsigned types)"));
  }
}

// out = (a * b) + c as two KIR instructions, with a * b inexact: the product must round before the sum. A
// compiler contracting the two into one FMA (gcc's default -ffp-contract=fast, nvcc's --fmad=true) gives the
// fused result instead.
template <class T>
void mul_then_add_rounds_twice(uint32_t dtype, int half_mantissa) {
  require_ops(dtype, {TG_KIR_ADD, TG_KIR_MUL});
  // a * a = 1 + 2^(1-h) + 2^-2h, whose last term is at most half an ulp of 1: it rounds away unless fused
  const T a = static_cast<T>(1) + std::ldexp(static_cast<T>(1), -half_mantissa);
  const std::vector<T> va(4, a), vc(4, static_cast<T>(-1));
  Kir k;
  const int out = k.buffer(dtype, true), pa = k.buffer(dtype), pc = k.buffer(dtype);
  const int g = k.global_id(4);
  const int x = k.load(dtype, pa, g);
  const int product = k.alu(TG_KIR_MUL, dtype, {x, x});
  k.store(out, g, k.alu(TG_KIR_ADD, dtype, {product, k.load(dtype, pc, g)}));
  Kernel kernel(k, cat("conf_mul_add_", sdk::dtype_name(dtype)));
  Buffer bout(std::vector<T>(4, static_cast<T>(7))), ba(va), bc(vc);
  kernel.launch({bout.addr(), ba.addr(), bc.addr()}, {{4, 1, 1}, {1, 1, 1}});
  const T rounded_twice = static_cast<T>(static_cast<T>(a * a) + static_cast<T>(-1));  // built with -ffp-contract=off
  const T fused = std::fma(a, a, static_cast<T>(-1));
  for (T got : bout.read_as<T>()) {
    if (got == rounded_twice) continue;
    kernel.fail(cat("MUL then ADD of a = 1 + 2^-", half_mantissa, ": a*a - 1 gave ", got, ", expected ", rounded_twice,
                    got == fused ? " (the fused result: MUL and ADD were contracted into an FMA; only MULACC may fuse, "
                                   "compile with -ffp-contract=off or its equivalent)"
                                 : ""));
  }
}

}  // namespace

void add_semantics_tests(Tests& tests) {
  tests.push_back(
      {"semantics.int32_overflow_wraps", Tier::Core, [] { signed_overflow_wraps<int32_t>(TG_DTYPE_INT32); }});
  tests.push_back(
      {"semantics.int64_overflow_wraps", Tier::Core, [] { signed_overflow_wraps<int64_t>(TG_DTYPE_INT64); }});
  tests.push_back({"semantics.float32_mul_then_add_rounds_twice", Tier::Core,
                   [] { mul_then_add_rounds_twice<float>(TG_DTYPE_FLOAT32, 12); }});
  tests.push_back({"semantics.float64_mul_then_add_rounds_twice", Tier::Core,
                   [] { mul_then_add_rounds_twice<double>(TG_DTYPE_FLOAT64, 27); }});
}

}  // namespace tg::conformance
