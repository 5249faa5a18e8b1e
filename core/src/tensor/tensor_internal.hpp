// What the Tensor front end's files share: the one-node unary op and the float promotions of math ops.
#pragma once

#include "ir/ops.hpp"
#include "tg/tensor.hpp"

namespace tg {

Tensor unary(const Tensor& t, ir::Op op);  // the op on t's node, same dtype and dims
Tensor float_of(const Tensor& t);          // ints and bools as float32, floats as they are

// Composite math on 16-bit floats runs in float32 and rounds once at the end, like a native half op would;
// rounding every intermediate step would cost several ulp.
template <typename F>
Tensor in_float32(const Tensor& t, F&& f) {
  DType d = t.dtype();
  if (d.is_float() && d.itemsize() == 2) return f(t.cast(dtypes::float32)).cast(d);
  return f(float_of(t));
}

}  // namespace tg
