// The Tensor front end: creation, elementwise ops with broadcasting and dtype promotion, reductions, softmax and
// matmul, and realizing through the scheduler. Movement ops live in tensor_movement.cpp.
#include "tg/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "ir/sym_shape.hpp"
#include "ir/uop.hpp"
#include "runtime/device.hpp"
#include "runtime/executor.hpp"
#include "runtime/memory_plan.hpp"
#include "runtime/options.hpp"
#include "runtime/schedule_cache.hpp"
#include "schedule/schedule.hpp"
#include "tensor/multi.hpp"
#include "tensor/tensor_internal.hpp"
#include "tg/device.hpp"

namespace tg {

using namespace ir;
using namespace detail;

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << (s.size() == 1 ? ",)" : ")");
  return os.str();
}

struct Tensor::Impl {
  UOpPtr node;
  std::string device;
};

std::string resolve_device(const std::string& d) {
  if (d.empty()) return default_device();
  if (!is_device_list(d)) return canonical_device(d);
  std::vector<std::string> list;
  for (const auto& one : split_devices(d)) list.push_back(canonical_device(one));
  return join_devices(list);
}

UOpPtr mk(Op op, DType dtype, std::vector<UOpPtr> src, Arg arg, const Dims& dims) {
  auto [shape, sym] = shape_args(dims);
  return UOp::make(op, dtype, std::move(src), std::move(arg), std::move(shape), std::move(sym));
}

namespace {

// Creating data (a buffer) needs one device; a tensor on several is made on one and sharded.
std::string one_device(const std::string& device, const char* what) {
  std::string d = resolve_device(device);
  if (is_device_list(d)) bad(std::string(what) + " on several devices (" + d + "): make it on one and shard() it");
  return d;
}

}  // namespace

Tensor::Tensor(std::shared_ptr<const UOp> node, std::string device)
    : impl_(std::make_shared<Impl>(Impl{std::move(node), std::move(device)})) {}

std::shared_ptr<const UOp> Tensor::node() const { return impl_->node; }
const Shape& Tensor::shape() const { return impl_->node->shape; }
DType Tensor::dtype() const { return impl_->node->dtype; }
const std::string& Tensor::device() const { return impl_->device; }
int64_t Tensor::numel() const { return prod(shape()); }
std::vector<Dim> Tensor::dims() const { return to_api(dims_of(*this)); }
bool Tensor::is_symbolic() const { return !impl_->node->sym_shape.empty(); }

// ---- creation ------------------------------------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, DType dtype, const std::string& device) {
  for (int64_t d : shape)
    if (d < 0) bad("negative dimension in shape " + shape_str(shape));
  std::string dev = one_device(device, "empty()");
  auto buf = std::make_shared<rt::Buffer>(rt::Device::get(dev), dtype, prod(shape));
  return Tensor(rt::buffer_node(buf, shape), dev);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, const std::string& device) {
  for (int64_t d : shape)
    if (d < 0) bad("negative dimension in shape " + shape_str(shape));
  UOpPtr c = mk(Op::CONST, dtype, {}, dtype.is_float() ? Arg(value) : Arg(saturating_int(value)), {});
  Tensor t(c, resolve_device(device));
  return t.reshape(Shape(shape.size(), 1)).expand(shape);
}
Tensor Tensor::zeros(const Shape& shape, DType dtype, const std::string& device) {
  return full(shape, 0, dtype, device);
}
Tensor Tensor::ones(const Shape& shape, DType dtype, const std::string& device) {
  return full(shape, 1, dtype, device);
}

Tensor Tensor::arange(double start, double stop, double step, DType dtype, const std::string& device) {
  if (step == 0) bad("arange step must not be 0");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((stop - start) / step)));
  // computed on the host in double: exact for every integer range and correctly rounded for float steps
  std::vector<double> host(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) host[i] = start + static_cast<double>(i) * step;
  // integers that fit go to the device as int32, which every renderer has (METAL has no float64 to cast from)
  const auto is_int32 = [](double v) { return v == std::trunc(v) && v >= INT32_MIN && v <= INT32_MAX; };
  if (std::all_of(host.begin(), host.end(), is_int32)) {
    std::vector<int32_t> ints(host.begin(), host.end());
    return from_bytes(ints.data(), ints.size() * sizeof(int32_t), {n}, dtypes::int32, device).cast(dtype);
  }
  return from_bytes(host.data(), host.size() * sizeof(double), {n}, dtypes::float64, device).cast(dtype);
}

Tensor Tensor::eye(int64_t n, DType dtype, const std::string& device) {
  if (n < 0) bad("eye size must be >= 0");
  // ones (n, 1) padded to (n, n+1), flattened, cut to n*n: the ones land on the diagonal
  Tensor t = ones({n, 1}, dtype, device).pad({{0, 0}, {0, n}}).reshape({n * (n + 1)});
  return t.shrink({{0, n * n}}).reshape({n, n});
}

namespace {
uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

Tensor Tensor::rand(const Shape& shape, uint64_t seed, DType dtype, const std::string& device) {
  // as many random bits as the target's mantissa holds, so every value is exact and below 1 after the cast
  int bits = dtype.scalar == ScalarType::Float16    ? 11
             : dtype.scalar == ScalarType::BFloat16 ? 8
             : dtype.scalar == ScalarType::Float32  ? 24
                                                    : 53;
  std::vector<double> v(static_cast<size_t>(prod(shape)));
  uint64_t s = seed;
  for (auto& x : v) x = std::ldexp(static_cast<double>(splitmix(s) >> (64 - bits)), -bits);
  return from_bytes(v.data(), v.size() * sizeof(double), shape, dtypes::float64, device).cast(dtype);
}

Tensor Tensor::randn(const Shape& shape, uint64_t seed, DType dtype, const std::string& device) {
  std::vector<double> v(static_cast<size_t>(prod(shape)));
  uint64_t s = seed;
  for (auto& x : v) {  // Box-Muller
    double u1 = (static_cast<double>(splitmix(s) >> 11) + 1) * 0x1.0p-53,
           u2 = static_cast<double>(splitmix(s) >> 11) * 0x1.0p-53;
    x = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  }
  return from_bytes(v.data(), v.size() * sizeof(double), shape, dtypes::float64, device).cast(dtype);
}

Tensor Tensor::from_bytes(const void* data, size_t nbytes, const Shape& shape, DType dtype, const std::string& device) {
  Tensor t = empty(shape, dtype, device);
  size_t need = static_cast<size_t>(t.numel()) * dtype.itemsize();
  if (nbytes != need)
    bad("host data has " + std::to_string(nbytes) + " bytes, shape " + shape_str(shape) + " of " + dtype.name() +
        " needs " + std::to_string(need));
  rt::buffer_of(*t.node())->copy_in(data, nbytes);
  return t;
}

Tensor Tensor::from_host_memory(const void* data, size_t nbytes, const Shape& shape, DType dtype,
                                std::shared_ptr<const void> owner, const std::string& device) {
  std::string dev = one_device(device, "from_host_memory()");
  rt::Device& d = rt::Device::get(dev);
  if (!d.is_host()) return from_bytes(data, nbytes, shape, dtype, dev);
  size_t need = static_cast<size_t>(prod(shape)) * dtype.itemsize();
  if (nbytes != need)
    bad("host memory has " + std::to_string(nbytes) + " bytes, shape " + shape_str(shape) + " of " + dtype.name() +
        " needs " + std::to_string(need));
  auto buf = std::make_shared<rt::Buffer>(d, dtype, prod(shape));
  buf->adopt_host_memory(data, std::move(owner));
  return Tensor(rt::buffer_node(buf, shape), dev);
}

Tensor Tensor::from_variable(const BoundVariable& v, const std::string& device) {
  return Tensor(mk(Op::BIND, v.var().dtype(), {v.var().node()}, v.value(), {}), resolve_device(device));
}

// ---- elementwise ---------------------------------------------------------------------------------------------

namespace {

// A static 1 broadcasts; other dims must be equal for every binding (v and w, or v and 5, might differ).
Dims broadcast_shape(const Dims& a, const Dims& b) {
  size_t n = std::max(a.size(), b.size());
  Dims out(n);
  for (size_t i = 0; i < n; ++i) {
    UOpPtr da = i < n - a.size() ? dim_const(1) : a[i - (n - a.size())],
           db = i < n - b.size() ? dim_const(1) : b[i - (n - b.size())];
    if (!same_dim(da, db) && !is_one(da) && !is_one(db)) {
      std::string why = is_static(da) && is_static(db)
                            ? ""
                            : ": dims " + dim_str(da) + " and " + dim_str(db) + " are not provably equal";
      bad("shapes " + dims_str(a) + " and " + dims_str(b) + " cannot be broadcast" + why);
    }
    out[i] = is_one(da) ? db : da;
  }
  return out;
}

Tensor broadcast_to(const Tensor& t, const Dims& s) {
  Dims in = dims_of(t);
  if (same_dims(in, s)) return t;
  Dims r(s.size() - in.size(), dim_const(1));
  r.insert(r.end(), in.begin(), in.end());
  return t.reshape(to_api(r)).expand(to_api(s));
}

}  // namespace

// The unsigned integer type of the same size: selecting by summing bit patterns (one non-zero term) copies
// values exactly, -0.0 and NaN payloads included, where a float sum would turn -0.0 into +0.0.
static DType bits_type(DType d) {
  switch (d.itemsize()) {
    case 1: return dtypes::uint8;
    case 2: return dtypes::uint16;
    case 4: return dtypes::uint32;
    default: return dtypes::uint64;
  }
}
Tensor to_bits(const Tensor& t) {
  return t.dtype().is_bool() ? t.cast(dtypes::uint8) : t.bitcast(bits_type(t.dtype()));
}
Tensor from_bits(const Tensor& t, DType d) { return d.is_bool() ? t.cast(d) : t.bitcast(d); }

Tensor unary(const Tensor& t, Op op) { return Tensor(mk(op, t.dtype(), {t.node()}, {}, dims_of(t)), t.device()); }
Tensor float_of(const Tensor& t) { return t.dtype().is_float() ? t : t.cast(dtypes::float32); }

// op: an ir::Op; operands broadcast and promoted; comparisons give bool
Tensor Tensor::binop(Op op, const Tensor& o) const {
  if (device() != o.device()) bad("operands are on different devices: " + device() + " and " + o.device());
  Dims s = broadcast_shape(dims_of(*this), dims_of(o));
  DType d = dtypes::promote(dtype(), o.dtype());
  Tensor a = broadcast_to(cast(d), s), b = broadcast_to(o.cast(d), s);
  DType out = is_comparison(op) ? dtypes::bool_ : d;
  return Tensor(mk(op, out, {a.node(), b.node()}, {}, s), device());
}

Tensor Tensor::scalar_like(double v) const {
  DType d = dtype();
  if (!d.is_float() && v != std::trunc(v)) d = dtypes::float32;
  if (d.is_bool() && v != 0 && v != 1) d = dtypes::int32;
  return full({}, v, d, device());
}

Tensor Tensor::operator+(const Tensor& o) const {
  if (dtype().is_bool() && o.dtype().is_bool()) return binop(Op::OR, o);
  return binop(Op::ADD, o);
}
Tensor Tensor::operator-(const Tensor& o) const { return binop(Op::SUB, o); }
Tensor Tensor::operator*(const Tensor& o) const {
  if (dtype().is_bool() && o.dtype().is_bool()) return binop(Op::AND, o);
  return binop(Op::MUL, o);
}
Tensor Tensor::operator/(const Tensor& o) const { return float_of(*this).binop(Op::FDIV, float_of(o)); }
Tensor Tensor::operator+(double s) const { return *this + scalar_like(s); }
Tensor Tensor::operator-(double s) const { return *this - scalar_like(s); }
Tensor Tensor::operator*(double s) const { return *this * scalar_like(s); }
Tensor Tensor::operator/(double s) const { return *this / scalar_like(s); }

// Integer division and remainder with the two cases C leaves undefined made total: x/0 = 0, x%0 = 0, and
// INT_MIN / -1 wraps (the hardware instruction would trap).
Tensor Tensor::idiv(const Tensor& o) const {
  DType d = dtypes::promote(dtype(), o.dtype());
  if (d.is_float()) return (*this / o).cast(d).cast(d);  // floats: true division
  Tensor a = cast(d), b = o.cast(d);
  Tensor zero = b.eq(b.scalar_like(0)), minus1 = d.is_unsigned() ? b.ne(b) : b.eq(b.scalar_like(-1));
  Tensor safe = where(zero + minus1, b.scalar_like(1).cast(d), b);
  Tensor q = a.binop(Op::IDIV, safe);
  return where(zero, a.scalar_like(0).cast(d), where(minus1, -a, q));
}

Tensor Tensor::mod(const Tensor& o) const {
  DType d = dtypes::promote(dtype(), o.dtype());
  if (d.is_float()) bad("mod is defined for integer tensors, got " + d.name());
  Tensor a = cast(d), b = o.cast(d);
  Tensor zero = b.eq(b.scalar_like(0)), minus1 = d.is_unsigned() ? b.ne(b) : b.eq(b.scalar_like(-1));
  Tensor r = a.binop(Op::MOD, where(zero + minus1, b.scalar_like(1).cast(d), b));
  return where(zero + minus1, a.scalar_like(0).cast(d), r);
}

Tensor Tensor::neg() const {
  if (dtype().is_bool()) return logical_not();
  return unary(*this, Op::NEG);
}
Tensor Tensor::maximum(const Tensor& o) const { return binop(Op::MAX, o); }
Tensor Tensor::minimum(const Tensor& o) const {
  DType d = dtypes::promote(dtype(), o.dtype());
  if (d.is_float()) return -((-cast(d)).maximum(-o.cast(d)));  // keeps NaN propagation of MAX
  return where(lt(o), cast(d), o.cast(d));
}
Tensor Tensor::lt(const Tensor& o) const { return binop(Op::CMPLT, o); }
Tensor Tensor::gt(const Tensor& o) const { return o.lt(*this); }
Tensor Tensor::le(const Tensor& o) const { return lt(o) + eq(o); }
Tensor Tensor::ge(const Tensor& o) const { return gt(o) + eq(o); }
Tensor Tensor::eq(const Tensor& o) const { return binop(Op::CMPEQ, o); }
Tensor Tensor::ne(const Tensor& o) const { return binop(Op::CMPNE, o); }
Tensor Tensor::logical_not() const { return cast(dtypes::bool_).binop(Op::XOR, full({}, 1, dtypes::bool_, device())); }

Tensor Tensor::where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (cond.device() != a.device() || a.device() != b.device()) bad("where() operands are on different devices");
  Dims s = broadcast_shape(broadcast_shape(dims_of(cond), dims_of(a)), dims_of(b));
  DType d = dtypes::promote(a.dtype(), b.dtype());
  Tensor c = broadcast_to(cond.cast(dtypes::bool_), s), x = broadcast_to(a.cast(d), s), y = broadcast_to(b.cast(d), s);
  return Tensor(mk(Op::WHERE, d, {c.node(), x.node(), y.node()}, {}, s), a.device());
}

Tensor Tensor::cast(DType d) const {
  if (d == dtype()) return *this;
  return Tensor(mk(Op::CAST, d, {node()}, {}, dims_of(*this)), device());
}

Tensor Tensor::bitcast(DType d) const {
  if (d.itemsize() != dtype().itemsize())
    bad("bitcast needs equal item sizes: " + dtype().name() + " is " + std::to_string(dtype().itemsize()) + " bytes, " +
        d.name() + " is " + std::to_string(d.itemsize()));
  if (d == dtype()) return *this;
  return Tensor(mk(Op::BITCAST, d, {node()}, {}, dims_of(*this)), device());
}

// ---- reductions ----------------------------------------------------------------------------------------------

Tensor Tensor::reduce(ReduceOp rop, std::vector<int64_t> axes, bool keepdim) const {
  int64_t n = ndim();
  if (axes.empty())
    for (int64_t i = 0; i < n; ++i) axes.push_back(i);
  for (auto& a : axes) a = norm_axis(a, n, shape());
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    bad("repeated axis in reduction over shape " + shape_str(shape()));
  Tensor x = *this;
  DType d = dtype();
  // accumulate sums of small types in a wider one (bool counts as int32), 16-bit floats in float32
  if (rop == ReduceOp::SUM) {
    if (d.is_bool() || (d.is_signed_int() && d.itemsize() < 4))
      x = x.cast(dtypes::int32);
    else if (d.is_unsigned() && d.itemsize() < 4)
      x = x.cast(dtypes::uint32);
    else if (d.is_float() && d.itemsize() == 2)
      x = x.cast(dtypes::float32);
  }
  // A large reduction to one value is split in two kernels: partial results over `parts` slices (spread over
  // cores), then a small reduction of those. Same result up to the order of a float sum.
  if (static_cast<int64_t>(axes.size()) == n && !is_symbolic() && x.numel() >= (int64_t{1} << 16)) {
    int64_t parts = 256;
    while (x.numel() % parts) parts /= 2;
    if (parts >= 8) {
      Tensor partial = x.reshape({parts, x.numel() / parts}).reduce(rop, {1}, false).contiguous();
      Tensor r = partial.reduce(rop, {0}, false);  // already accumulated in the wide type
      if (rop == ReduceOp::SUM && d.is_float() && d.itemsize() == 2) r = r.cast(d);
      return keepdim ? r.reshape(Shape(n, 1)) : r;
    }
  }
  Dims in = dims_of(*this), out = in;
  std::vector<int64_t> arg{static_cast<int64_t>(rop)};
  for (int64_t a : axes) out[a] = dim_const(1), arg.push_back(a);
  Tensor r(mk(Op::REDUCE_AXIS, x.dtype(), {x.node()}, arg, out), device());
  if (rop == ReduceOp::SUM && d.is_float() && d.itemsize() == 2) r = r.cast(d);
  if (keepdim) return r;
  Dims squeezed;
  for (int64_t i = 0; i < n; ++i)
    if (!std::binary_search(axes.begin(), axes.end(), i)) squeezed.push_back(in[i]);
  return r.reshape(to_api(squeezed));
}

Tensor Tensor::sum(Axes axes, bool keepdim) const { return reduce(ReduceOp::SUM, std::move(axes.list), keepdim); }
Tensor Tensor::max(Axes axes, bool keepdim) const { return reduce(ReduceOp::MAX, std::move(axes.list), keepdim); }
Tensor Tensor::min(Axes axes, bool keepdim) const { return reduce(ReduceOp::MIN, std::move(axes.list), keepdim); }

Tensor Tensor::mean(Axes ax, bool keepdim) const {
  std::vector<int64_t>& axes = ax.list;
  Tensor x = float_of(*this);
  Tensor s = x.sum(axes, keepdim);
  if (!is_symbolic()) {
    int64_t count = numel() == 0 ? 0 : numel() / s.numel();  // 0/0 gives NaN, as numpy
    return s / static_cast<double>(count);
  }
  // the count of a symbolic reduction is a dim expression: a scalar the kernel computes from the variables
  Dims in = dims_of(*this), reduced;
  for (int64_t i = 0; i < ndim(); ++i)
    if (axes.empty() ||
        std::any_of(axes.begin(), axes.end(), [&](int64_t a) { return norm_axis(a, ndim(), shape()) == i; }))
      reduced.push_back(in[i]);
  UOpPtr count = dims_prod(reduced);
  if (is_static(count)) return s / static_cast<double>(count->arg_int());
  return s / Tensor(count, device()).cast(s.dtype());
}

Tensor Tensor::argmax(int64_t axis, bool keepdim) const {
  int64_t a = norm_axis(axis, ndim(), shape());
  if (!is_static(dims_of(*this)[a]))
    bad("argmax over the symbolic dim " + dim_str(dims_of(*this)[a]) + " is not supported");
  int64_t n = shape()[a];
  Tensor m = max({a}, true);
  Shape s(ndim(), 1);
  s[a] = n;
  // (n - i) where x is maximal, 0 elsewhere; the largest (n - i) is the first maximal index
  Tensor rev = arange(static_cast<double>(n), 0, -1, dtypes::int32, device()).reshape(s);
  // NaN is maximal: when the max is NaN the hits are the NaNs (x != x), otherwise x == max
  Tensor is_max = dtype().is_float() ? eq(m) + ne(*this) : eq(m);
  Tensor hit = where(is_max, rev, full({}, 0, dtypes::int32, device()));
  Tensor idx = full({}, static_cast<double>(n), dtypes::int32, device()) - hit.max({a}, true);
  return keepdim ? idx : idx.squeeze(a);
}

Tensor Tensor::softmax(int64_t axis) const {
  Tensor x = float_of(*this);
  int64_t a = norm_axis(axis, ndim(), shape());
  Tensor e = (x - x.max({a}, true)).exp();
  return e / e.sum({a}, true);
}

Tensor Tensor::log_softmax(int64_t axis) const {
  Tensor x = float_of(*this);
  int64_t a = norm_axis(axis, ndim(), shape());
  Tensor shifted = x - x.max({a}, true);
  return shifted - shifted.exp().sum({a}, true).log();
}

Tensor Tensor::matmul(const Tensor& o) const {
  if (ndim() == 0 || o.ndim() == 0)
    bad("matmul of a scalar: shapes " + shape_str(shape()) + " and " + shape_str(o.shape()));
  // 16-bit floats are multiplied exactly (a product of two fits float32's mantissa) and summed in float32, as
  // tensor cores and BLAS do, then rounded once
  const DType d = dtype();
  if (d.is_float() && d.itemsize() == 2 && o.dtype() == d)
    return cast(dtypes::float32).matmul(o.cast(dtypes::float32)).cast(d);
  Dims da = dims_of(*this), db = dims_of(o);
  if (ndim() == 1 && o.ndim() == 1) {
    if (!same_dim(da[0], db[0])) bad("matmul: shapes " + dims_str(da) + " and " + dims_str(db) + " do not align");
    return (*this * o).sum({0});
  }
  if (ndim() == 1) return unsqueeze(0).matmul(o).squeeze(-2);
  if (o.ndim() == 1) return matmul(o.unsqueeze(-1)).squeeze(-1);
  const UOpPtr& k = da.back();
  if (!same_dim(db[db.size() - 2], k))
    bad("matmul: shapes " + dims_str(da) + " and " + dims_str(db) + " do not align (" + dim_str(k) +
        " != " + dim_str(db[db.size() - 2]) + ")");
  Dims ba(da.begin(), da.end() - 2), bb(db.begin(), db.end() - 2);
  try {
    broadcast_shape(ba, bb);
  } catch (const std::invalid_argument&) {
    bad("matmul: batch dims of " + shape_str(shape()) + " and " + shape_str(o.shape()) + " cannot be broadcast");
  }
  // (..., M, 1, K) * (..., 1, N, K) summed over K
  Tensor a = unsqueeze(-2);
  Tensor b = o.transpose(-1, -2).unsqueeze(-3);
  return (a * b).sum({-1});
}

// ---- execution -----------------------------------------------------------------------------------------------

std::vector<std::shared_ptr<rt::Buffer>> realize_roots(const std::vector<UOpPtr>& roots, const std::string& device) {
  // schedule (or find the schedule of an equal graph), bind its buffers, run it
  std::vector<std::shared_ptr<ir::Payload>> inputs;
  const sched::Schedule s = rt::cached_schedule(roots, device, inputs, rt::read_options().schedule_cache);
  const auto bufs = rt::plan_memory(s, inputs);
  rt::run_schedule(s, bufs);
  std::vector<std::shared_ptr<rt::Buffer>> out;
  for (int slot : s.roots) out.push_back(bufs.at(static_cast<size_t>(slot)));
  return out;
}

void Tensor::realize_all(std::vector<Tensor*> ts) {
  std::vector<Tensor*> todo;
  for (Tensor* t : ts)
    if (!is_realized(*t->node())) todo.push_back(t);
  if (todo.empty()) return;
  // some tensor lives on several devices, or is gathered from them: every device's graph in one schedule
  if (std::any_of(todo.begin(), todo.end(),
                  [](Tensor* t) { return is_device_list(t->device()) || has_multi(t->node()); })) {
    std::vector<Tensor> several;
    for (Tensor* t : todo) several.push_back(*t);
    const std::vector<UOpPtr> nodes = realize_on_devices(several);
    for (size_t i = 0; i < todo.size(); ++i) todo[i]->impl_->node = nodes[i];
    return;
  }
  std::vector<UOpPtr> roots;
  for (Tensor* t : todo) {
    if (t->device() != todo[0]->device()) bad("realize_all: tensors on " + todo[0]->device() + " and " + t->device());
    roots.push_back(t->node());
  }
  const auto bufs = realize_roots(roots, todo[0]->device());  // the roots become their buffers
  for (size_t i = 0; i < todo.size(); ++i)
    todo[i]->impl_->node = rt::buffer_node(bufs[i], todo[i]->node()->shape, todo[i]->node()->sym_shape);
}

Tensor& Tensor::realize() {
  realize_all({this});
  return *this;
}

Tensor Tensor::contiguous() const {
  return Tensor(mk(Op::CONTIGUOUS, dtype(), {node()}, {}, dims_of(*this)), device());
}

Tensor Tensor::to(const std::string& dev) const {
  std::string d = resolve_device(dev);
  if (d == device()) return *this;
  if (is_device_list(d)) return shard(split_devices(d));  // a whole copy on each
  Tensor src = *this;
  return Tensor(mk(Op::COPY, dtype(), {src.node()}, d, dims_of(*this)), d);
}

void Tensor::check_host_type(size_t size) const {
  if (size != static_cast<size_t>(dtype().itemsize()))
    bad("reading a " + dtype().name() + " tensor into host elements of " + std::to_string(size) + " bytes");
}

void Tensor::copy_out(void* dst, size_t nbytes) {
  if (is_device_list(device())) return to(split_devices(device())[0]).copy_out(dst, nbytes);  // gathered first
  realize();
  auto buf = rt::buffer_of(*node());
  // a symbolic tensor's buffer is sized for the max; its elements under the bindings come first
  uint64_t have = static_cast<uint64_t>(numel()) * dtype().itemsize();
  if (nbytes != have)
    bad("copy_out of " + std::to_string(nbytes) + " bytes from a tensor of " + std::to_string(have) + " bytes");
  buf->copy_out(dst, nbytes);
}

}  // namespace tg
