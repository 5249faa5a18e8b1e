// The Tensor front end: builds tensor-level UOp graphs (broadcasting, dtype promotion, shape checks) and
// realizes them through the scheduler. Composite ops (softmax, gelu, matmul...) are spelled in primitives here.
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

int64_t prod(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

[[noreturn]] void bad(const std::string& msg) { throw std::invalid_argument("tg: " + msg); }

// Creating data (a buffer) needs one device; a tensor on several is made on one and sharded.
std::string one_device(const std::string& device, const char* what) {
  std::string d = resolve_device(device);
  if (is_device_list(d)) bad(std::string(what) + " on several devices (" + d + "): make it on one and shard() it");
  return d;
}

Dims dims_of(const Tensor& t) { return ir::dims_of(*t.node()); }
Dims to_ir(const std::vector<Dim>& ds) {
  Dims out;
  for (const auto& d : ds) out.push_back(d.node());
  return out;
}
std::vector<Dim> to_api(const Dims& ds) { return std::vector<Dim>(ds.begin(), ds.end()); }
Shape values(const Dims& ds) { return shape_args(ds).first; }

int64_t norm_axis(int64_t axis, int64_t ndim, const Shape& shape) {
  int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim) bad("axis " + std::to_string(axis) + " is out of range for shape " + shape_str(shape));
  return a;
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

// ---- movement ------------------------------------------------------------------------------------------------

Tensor Tensor::reshape(Shape s) const { return reshape(std::vector<Dim>(s.begin(), s.end())); }

Tensor Tensor::reshape(const std::vector<Dim>& dims) const {
  Dims s = to_ir(dims), in = dims_of(*this);
  int64_t infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!is_static(s[i])) {
      if (dim_min(s[i]) < 0) bad("reshape to " + dims_str(s) + ": dim " + dim_str(s[i]) + " can be negative");
    } else if (s[i]->arg_int() == -1) {
      if (infer >= 0) bad("reshape to " + dims_str(s) + ": only one dimension can be -1");
      infer = static_cast<int64_t>(i);
    } else if (s[i]->arg_int() < 0) {
      bad("reshape to " + dims_str(s) + ": negative dimension");
    }
  }
  UOpPtr total = dims_prod(in);
  if (infer >= 0) {
    Dims rest = s;
    rest.erase(rest.begin() + infer);
    UOpPtr known = dims_prod(rest);
    if (is_static(total) && is_static(known)) {
      if (known->arg_int() == 0 || total->arg_int() % known->arg_int())
        bad("cannot reshape " + dims_str(in) + " to " + dims_str(s));
      s[infer] = dim_const(total->arg_int() / known->arg_int());
    } else {
      UOpPtr q = dim_div(total, known);
      if (!q)
        bad("cannot reshape " + dims_str(in) + " to " + dims_str(s) + ": " + dim_str(total) +
            " elements are not provably a multiple of " + dim_str(known));
      s[infer] = q;
    }
  }
  UOpPtr count = dims_prod(s);
  if (!same_dim(count, total)) {
    std::string why = is_static(count) && is_static(total)
                          ? ""
                          : ": " + dim_str(total) + " and " + dim_str(count) + " elements are not provably equal";
    bad("cannot reshape " + dims_str(in) + " to " + dims_str(s) + why);
  }
  if (same_dims(s, in)) return *this;
  return Tensor(mk(Op::RESHAPE, dtype(), {node()}, values(s), s), device());
}

Tensor Tensor::permute(std::vector<int64_t> order) const {
  int64_t n = ndim();
  if (static_cast<int64_t>(order.size()) != n)
    bad("permute order has " + std::to_string(order.size()) + " axes, shape " + shape_str(shape()) + " has " +
        std::to_string(n));
  std::vector<bool> seen(n, false);
  Dims in = dims_of(*this), out(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t a = norm_axis(order[i], n, shape());
    if (seen[a]) bad("permute order repeats axis " + std::to_string(a) + " for shape " + shape_str(shape()));
    seen[a] = true;
    order[i] = a;
    out[i] = in[a];
  }
  bool identity = true;
  for (int64_t i = 0; i < n; ++i) identity &= order[i] == i;
  if (identity) return *this;
  return Tensor(mk(Op::PERMUTE, dtype(), {node()}, order, out), device());
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  std::vector<int64_t> order(ndim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[norm_axis(a, ndim(), shape())], order[norm_axis(b, ndim(), shape())]);
  return permute(order);
}

Tensor Tensor::expand(Shape s) const { return expand(std::vector<Dim>(s.begin(), s.end())); }

Tensor Tensor::expand(const std::vector<Dim>& dims) const {
  Dims s = to_ir(dims), in = dims_of(*this);
  if (s.size() < in.size()) bad("cannot expand " + dims_str(in) + " to fewer dims " + dims_str(s));
  if (s.size() > in.size()) {
    Dims r(s.size() - in.size(), dim_const(1));
    r.insert(r.end(), in.begin(), in.end());
    return reshape(to_api(r)).expand(dims);
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (is_static(s[i]) && s[i]->arg_int() == -1) s[i] = in[i];
    if (!same_dim(s[i], in[i]) && !is_one(in[i])) {
      std::string why = is_static(s[i]) && is_static(in[i])
                            ? ""
                            : ": dims " + dim_str(in[i]) + " and " + dim_str(s[i]) + " are not provably equal";
      bad("cannot expand " + dims_str(in) + " to " + dims_str(s) + why);
    }
    if (dim_min(s[i]) < 0) bad("cannot expand to negative size " + dims_str(s));
  }
  if (same_dims(s, in)) return *this;
  return Tensor(mk(Op::EXPAND, dtype(), {node()}, values(s), s), device());
}

Tensor Tensor::pad(std::vector<std::pair<int64_t, int64_t>> p) const {
  if (static_cast<int64_t>(p.size()) != ndim())
    bad("pad needs one (before, after) pair per dim of " + shape_str(shape()));
  std::vector<int64_t> arg;
  Dims out = dims_of(*this);
  bool any = false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i].first < 0 || p[i].second < 0) bad("negative padding for shape " + shape_str(shape()) + " (use shrink)");
    arg.push_back(p[i].first), arg.push_back(p[i].second);
    out[i] = dim_add(out[i], dim_const(p[i].first + p[i].second));
    any |= p[i].first || p[i].second;
  }
  if (!any) return *this;
  return Tensor(mk(Op::PAD, dtype(), {node()}, arg, out), device());
}

Tensor Tensor::shrink(std::vector<std::pair<int64_t, int64_t>> b) const {
  if (static_cast<int64_t>(b.size()) != ndim())
    bad("shrink needs one [start, end) pair per dim of " + shape_str(shape()));
  Dims in = dims_of(*this), out;
  std::vector<int64_t> arg;
  for (size_t i = 0; i < b.size(); ++i) {
    // a symbolic dim: the end must fit its smallest value
    if (b[i].first < 0 || b[i].first > b[i].second || b[i].second > dim_min(in[i]))
      bad("shrink [" + std::to_string(b[i].first) + ", " + std::to_string(b[i].second) + ") is out of range for dim " +
          std::to_string(i) + " of shape " + dims_str(in));
    arg.push_back(b[i].first), arg.push_back(b[i].second);
    out.push_back(dim_const(b[i].second - b[i].first));
  }
  if (same_dims(out, in)) return *this;
  return Tensor(mk(Op::SHRINK, dtype(), {node()}, arg, out), device());
}

Tensor Tensor::slice(int64_t axis, int64_t start, int64_t end) const {
  int64_t a = norm_axis(axis, ndim(), shape());
  if (!is_static(dims_of(*this)[a])) bad("slice of the symbolic dim " + dim_str(dims_of(*this)[a]) + " (use shrink)");
  int64_t n = shape()[a];
  auto clampi = [n](int64_t v) { return std::clamp(v < 0 ? v + n : v, int64_t{0}, n); };
  int64_t s = clampi(start), e = std::max(clampi(end), s);
  return shrink(a, s, e - s);
}

Tensor Tensor::flip(std::vector<int64_t> axes) const {
  std::vector<int64_t> f(ndim(), 0);
  for (int64_t a : axes) {
    int64_t x = norm_axis(a, ndim(), shape());
    if (f[x]) bad("flip repeats axis " + std::to_string(a));
    f[x] = 1;
  }
  if (std::all_of(f.begin(), f.end(), [](int64_t v) { return v == 0; })) return *this;
  return Tensor(mk(Op::FLIP, dtype(), {node()}, f, dims_of(*this)), device());
}

Tensor Tensor::shrink(int64_t axis, const Dim& start, const Dim& length) const {
  int64_t a = norm_axis(axis, ndim(), shape());
  Dims in = dims_of(*this), out = in;
  UOpPtr st = start.node(), len = length.node(), room = dim_sub(in[a], dim_add(st, len));
  if (dim_min(st) < 0 || dim_min(len) < 0 || dim_min(room) < 0)
    bad("shrink of dim " + std::to_string(a) + " of shape " + dims_str(in) + " to [" + dim_str(st) + ", " +
        dim_str(dim_add(st, len)) + ") with start in [" + std::to_string(dim_min(st)) + ", " +
        std::to_string(dim_max(st)) + "] and length in [" + std::to_string(dim_min(len)) + ", " +
        std::to_string(dim_max(len)) + "] can leave the tensor");
  out[a] = len;
  if (is_static(st)) {
    // the scheduler reads only the starts of a SHRINK; its dims carry the (maybe symbolic) lengths
    std::vector<int64_t> arg;
    for (int64_t i = 0; i < ndim(); ++i) {
      int64_t s0 = i == a ? st->arg_int() : 0;
      arg.push_back(s0), arg.push_back(s0 + shape_args({out[i]}).first[0]);
    }
    if (same_dims(out, in)) return *this;
    return Tensor(mk(Op::SHRINK, dtype(), {node()}, arg, out), device());
  }
  return Tensor(mk(Op::SHRINK_VAR, dtype(), {node(), st}, std::vector<int64_t>{a}, out), device());
}

Tensor Tensor::pad(int64_t axis, const Dim& before, const Dim& total) const {
  int64_t a = norm_axis(axis, ndim(), shape());
  Dims in = dims_of(*this), out = in;
  UOpPtr bf = before.node(), tot = total.node(), after = dim_sub(tot, dim_add(bf, in[a]));
  if (dim_min(bf) < 0 || dim_min(after) < 0)
    bad("pad of dim " + std::to_string(a) + " of shape " + dims_str(in) + " by " + dim_str(bf) + " in [" +
        std::to_string(dim_min(bf)) + ", " + std::to_string(dim_max(bf)) + "] does not fit in " + dim_str(tot));
  if (is_static(bf) && is_static(after)) {
    std::vector<std::pair<int64_t, int64_t>> p(ndim(), {0, 0});
    p[a] = {bf->arg_int(), after->arg_int()};
    return pad(p);
  }
  out[a] = tot;
  return Tensor(mk(Op::PAD_VAR, dtype(), {node(), bf}, std::vector<int64_t>{a}, out), device());
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  int64_t a = axis < 0 ? axis + ndim() + 1 : axis;
  if (a < 0 || a > ndim())
    bad("unsqueeze axis " + std::to_string(axis) + " is out of range for shape " + shape_str(shape()));
  Dims s = dims_of(*this);
  s.insert(s.begin() + a, dim_const(1));
  return reshape(to_api(s));
}

Tensor Tensor::squeeze(int64_t axis) const {
  int64_t a = norm_axis(axis, ndim(), shape());
  Dims s = dims_of(*this);
  if (!is_one(s[a])) bad("cannot squeeze dim " + std::to_string(a) + " of shape " + dims_str(s) + ": size is not 1");
  s.erase(s.begin() + a);
  return reshape(to_api(s));
}

Tensor Tensor::cat(const std::vector<Tensor>& ts, int64_t axis) {
  if (ts.empty()) bad("cat of no tensors");
  const Tensor& t0 = ts[0];
  int64_t a = norm_axis(axis, t0.ndim(), t0.shape());
  DType d = t0.dtype();
  Dims d0 = dims_of(t0);
  UOpPtr total = dim_const(0);
  for (const auto& t : ts) {
    if (t.ndim() != t0.ndim())
      bad("cat: shapes " + shape_str(t0.shape()) + " and " + shape_str(t.shape()) + " differ in rank");
    Dims dt = dims_of(t);
    for (int64_t i = 0; i < t0.ndim(); ++i)
      if (i != a && !same_dim(dt[i], d0[i]))
        bad("cat along axis " + std::to_string(a) + ": shapes " + dims_str(d0) + " and " + dims_str(dt) + " differ");
    if (t.device() != t0.device()) bad("cat: tensors on " + t0.device() + " and " + t.device());
    d = dtypes::promote(d, t.dtype());
    total = dim_add(total, dt[a]);
  }
  // each piece padded to the full length lands where it belongs; the others contribute zero bits there
  std::optional<Tensor> out;
  UOpPtr off = dim_const(0);
  for (const auto& t : ts) {
    Tensor piece = to_bits(t.cast(d)).pad(a, Dim(off), Dim(total));
    off = dim_add(off, dims_of(t)[a]);
    out = out ? *out + piece : piece;
  }
  return from_bits(*out, d);
}

Tensor Tensor::stack(const std::vector<Tensor>& ts, int64_t axis) {
  if (ts.empty()) bad("stack of no tensors");
  std::vector<Tensor> u;
  for (const auto& t : ts) {
    if (!same_dims(dims_of(t), dims_of(ts[0])))
      bad("stack: shapes " + dims_str(dims_of(ts[0])) + " and " + dims_str(dims_of(t)) + " differ");
    u.push_back(t.unsqueeze(axis));
  }
  return cat(u, axis);
}

Tensor Tensor::gather(int64_t axis, const Tensor& index) const {
  int64_t a = norm_axis(axis, ndim(), shape());
  if (is_symbolic() || index.is_symbolic())
    bad("gather of symbolic shapes " + dims_str(dims_of(*this)) + " and " + dims_str(dims_of(index)) +
        " is not supported");
  if (index.ndim() != ndim())
    bad("gather: index shape " + shape_str(index.shape()) + " and source shape " + shape_str(shape()) +
        " differ in rank");
  if (index.dtype().is_float() || index.dtype().is_bool())
    bad("gather: index must be an integer tensor, got " + index.dtype().name());
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t i = 0; i < ndim(); ++i) {
    if (i != a && index.shape()[i] > shape()[i])
      bad("gather: index shape " + shape_str(index.shape()) + " exceeds source shape " + shape_str(shape()) +
          " in dim " + std::to_string(i));
    b.emplace_back(0, i == a ? shape()[i] : index.shape()[i]);
  }
  int64_t n = shape()[a];
  // move the gathered axis last, put a size-1 axis in its place, broadcast against one-hot(index)
  std::vector<int64_t> order;
  for (int64_t i = 0; i < ndim(); ++i)
    if (i != a) order.push_back(i);
  order.push_back(a);
  Shape full_shape = index.shape();
  full_shape.push_back(n);
  Tensor xs = shrink(b).permute(order).unsqueeze(a).expand(full_shape);
  Tensor onehot =
      index.cast(dtypes::int64).unsqueeze(-1).eq(arange(0, static_cast<double>(n), 1, dtypes::int64, device()));
  Tensor bits = to_bits(xs);
  Tensor picked = where(onehot, bits, full({}, 0, bits.dtype(), device())).sum({-1}).cast(bits.dtype());
  return from_bits(picked, dtype());
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
