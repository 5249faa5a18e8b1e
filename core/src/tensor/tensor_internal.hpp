// What the Tensor front end's files share: node construction, the one-node unary op, the float promotions of
// math ops, and running a schedule for roots.
#pragma once

#include <functional>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/ops.hpp"
#include "ir/sym_shape.hpp"
#include "runtime/buffer.hpp"
#include "tg/tensor.hpp"

namespace tg {

// The front end's argument checks and dim conversions (tensor.cpp, tensor_movement.cpp).
namespace detail {
inline int64_t prod(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }
[[noreturn]] inline void bad(const std::string& msg) { throw std::invalid_argument("tg: " + msg); }
inline ir::Dims dims_of(const Tensor& t) { return ir::dims_of(*t.node()); }
inline ir::Dims to_ir(const std::vector<Dim>& ds) {
  ir::Dims out;
  for (const auto& d : ds) out.push_back(d.node());
  return out;
}
inline std::vector<Dim> to_api(const ir::Dims& ds) { return std::vector<Dim>(ds.begin(), ds.end()); }
inline Shape values(const ir::Dims& ds) { return ir::shape_args(ds).first; }
// `axis` (negative: from the end) checked against a rank-`ndim` shape.
inline int64_t norm_axis(int64_t axis, int64_t ndim, const Shape& shape) {
  const int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim) bad("axis " + std::to_string(axis) + " is out of range for shape " + shape_str(shape));
  return a;
}
}  // namespace detail

// A tensor node with these dims (symbolic ones kept in sym_shape, their bound values in shape).
ir::UOpPtr mk(ir::Op op, DType dtype, std::vector<ir::UOpPtr> src, ir::Arg arg, const ir::Dims& dims);
// "" -> the default device; a name or a comma-separated list of names, each canonical ("cpu:0,cpu:1" -> "CPU,CPU:1")
std::string resolve_device(const std::string& d);
// A value's bits as the unsigned integer of its size (bools as uint8), and back: placing pieces by adding their
// zero-padded bit patterns copies them exactly (-0.0 and NaN payloads included).
Tensor to_bits(const Tensor& t);
Tensor from_bits(const Tensor& t, DType d);

// A BUFFER, or a MULTI of BUFFERs: nothing left to compute.
inline bool is_realized(const ir::UOp& u) {
  if (u.op == ir::Op::BUFFER) return true;
  if (u.op != ir::Op::MULTI) return false;
  for (const auto& s : u.src)
    if (s->op != ir::Op::BUFFER) return false;
  return true;
}
// Schedules (through the cache) and runs the graphs of `roots`, computing on `device` where a graph names none;
// returns each root's buffer.
std::vector<std::shared_ptr<rt::Buffer>> realize_roots(const std::vector<ir::UOpPtr>& roots, const std::string& device);
// Realizes tensors some of which live on several devices (tensor_multi.cpp); returns each one's new node: a
// BUFFER, or a MULTI of one BUFFER per device.
std::vector<ir::UOpPtr> realize_on_devices(const std::vector<Tensor>& ts);

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
