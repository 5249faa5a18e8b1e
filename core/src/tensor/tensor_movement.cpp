// The Tensor front end's movement ops: reshape, permute, expand, pad, shrink, flip, squeeze, cat, stack and gather,
// each a view (or a few) over its source's node, with the shape checks and symbolic dims that go with them.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "ir/sym_shape.hpp"
#include "ir/uop.hpp"
#include "tensor/tensor_internal.hpp"

namespace tg {

using namespace ir;
using namespace detail;

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
  // one kernel reads every piece as a buffer of its own, and renderers take a bounded number (caps.max_params, 256
  // on the CPU): many pieces are joined in groups first, each group stored by a kernel of its own (a MoE prefill
  // chunk's outputs of 256 experts were 257 buffers)
  constexpr size_t kPiecesPerKernel = 64;
  if (ts.size() > kPiecesPerKernel) {
    std::vector<Tensor> groups;
    for (size_t i = 0; i < ts.size(); i += kPiecesPerKernel) {
      const auto end = ts.begin() + static_cast<std::ptrdiff_t>(std::min(ts.size(), i + kPiecesPerKernel));
      groups.push_back(cat(std::vector<Tensor>(ts.begin() + static_cast<std::ptrdiff_t>(i), end), axis).contiguous());
    }
    return cat(groups, axis);
  }
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

}  // namespace tg
