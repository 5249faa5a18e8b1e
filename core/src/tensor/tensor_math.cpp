// The Tensor front end's math: the unary functions, as single ops where KIR has them (EXP2, LOG2, SIN, SQRT,
// RECIP) and as composites of them otherwise, each accurate to a few ulp over its whole range.
#include <cmath>
#include <numbers>

#include "codegen/transcendental.hpp"
#include "tensor/tensor_internal.hpp"

namespace tg {

using ir::Op;

Tensor Tensor::exp2() const { return unary(float_of(*this), Op::EXP2); }
Tensor Tensor::log2() const { return unary(float_of(*this), Op::LOG2); }
Tensor Tensor::exp() const {
  return in_float32(*this, [](const Tensor& x) { return (x * (1.0 / std::numbers::ln2)).exp2(); });
}
Tensor Tensor::log() const {
  return in_float32(*this, [](const Tensor& x) { return x.log2() * std::numbers::ln2; });
}
Tensor Tensor::sin() const { return unary(float_of(*this), Op::SIN); }
// cos(x) = +-sin of r or of pi/2 - r, where x = q pi/2 + r, |r| <= pi/4: the quadrant reduction is done here,
// exactly (sin(pi/2 - x) directly would lose ulp(x)/2 of x in the subtraction: cos(10000) was off by 1.5e-4)
Tensor Tensor::cos() const {
  return in_float32(*this, [](const Tensor& x) {
    Tensor half = x.scalar_like(0.5);
    Tensor q = unary(x * (2 / std::numbers::pi) + where(x.lt(x.scalar_like(0)), -half, half), Op::TRUNC);
    Tensor r = x;
    for (double p : x.dtype() == dtypes::float64 ? codegen::kHalfPiParts64 : codegen::kHalfPiParts32) r = r - q * p;
    // the quadrant q mod 4 in 0..3, kept in float whatever |q| is (a non-finite x gives NaN through r)
    Tensor qm = q - unary(q * 0.25, Op::TRUNC) * 4.0;
    qm = where(qm.lt(x.scalar_like(0)), qm + 4.0, qm);
    Tensor s = where((qm - 2.0).abs().eq(x.scalar_like(1)), r, r.neg() + std::numbers::pi / 2).sin();  // q odd: sin r
    return where((qm - 1.5).abs().lt(x.scalar_like(1)), s.neg(), s);  // q = 1, 2: negated
  });
}
Tensor Tensor::sqrt() const { return unary(float_of(*this), Op::SQRT); }
Tensor Tensor::reciprocal() const { return unary(float_of(*this), Op::RECIP); }
Tensor Tensor::rsqrt() const { return sqrt().reciprocal(); }
Tensor Tensor::abs() const {
  if (dtype().is_unsigned() || dtype().is_bool()) return *this;
  Tensor r = where(lt(scalar_like(0)), -*this, *this);
  return dtype().is_float() ? r + 0.0 : r;  // + 0.0 turns -0.0 into +0.0
}
Tensor Tensor::relu() const { return maximum(scalar_like(0)); }
Tensor Tensor::sigmoid() const {
  return in_float32(*this, [](const Tensor& x) { return ((-x).exp() + 1.0).reciprocal(); });
}
// 2 sigmoid(2x) - 1, except near 0 where that cancels (tanh(1e-6) was 7% off): there the odd Taylor series,
// whose terms past x^19 are below the precision for |x| < 0.55 (float32) or 0.15 (float64)
Tensor Tensor::tanh() const {
  return in_float32(*this, [](const Tensor& x) {
    Tensor z = x * x, p = x.scalar_like(-443861162.0 / 1856156927625);
    for (double c : {6404582.0 / 10854718875, -929569.0 / 638512875, 21844.0 / 6081075, -1382.0 / 155925, 62.0 / 2835,
                     -17.0 / 315, 2.0 / 15, -1.0 / 3, 1.0})
      p = p * z + c;
    return where(x.abs().lt(x.scalar_like(x.dtype() == dtypes::float64 ? 0.15 : 0.55)), x * p,
                 (x * 2.0).sigmoid() * 2.0 - 1.0);
  });
}
Tensor Tensor::gelu() const {
  return in_float32(*this, [](const Tensor& x) {
    return x * 0.5 * (((x + x * x * x * 0.044715) * std::sqrt(2.0 / std::numbers::pi)).tanh() + 1.0);
  });
}
Tensor Tensor::silu() const {
  return in_float32(*this, [](const Tensor& x) { return x * x.sigmoid(); });
}

Tensor Tensor::pow(const Tensor& e) const {
  DType out = dtypes::promote(dtype(), e.dtype());
  DType calc = out.is_float() && out.itemsize() > 2 ? out : dtypes::float32;  // 16-bit floats: see in_float32
  Tensor x = cast(out).cast(calc), y = e.cast(out).cast(calc);
  Tensor zero = x.scalar_like(0);
  Tensor r = (y * x.abs().log2()).exp2();
  Tensor ty = unary(y, Op::TRUNC);
  Tensor is_int = ty.eq(y), odd = unary(ty * 0.5, Op::TRUNC).ne(ty * 0.5);
  Tensor neg_base = where(is_int, where(odd, -r, r), x.scalar_like(NAN));
  r = where(x.lt(zero), neg_base, r);
  r = where(y.eq(zero), x.scalar_like(1), r);
  if (out.is_float()) return r.cast(out);
  Tensor rounded = unary(r + where(r.lt(zero), r.scalar_like(-0.5), r.scalar_like(0.5)), Op::TRUNC);
  return rounded.cast(out);
}
Tensor Tensor::pow(double e) const {
  return pow(full({}, e, dtype().is_float() ? dtype() : dtypes::float32, device()));
}

}  // namespace tg
