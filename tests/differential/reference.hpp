// Building blocks of the float64 reference: broadcasting elementwise maps, views (index maps) and reductions,
// each propagating the per-element error bound next to the value.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "program.hpp"

namespace tg::difftest::ref {

constexpr double kU = 0x1p-24;      // float32 unit roundoff
constexpr double kTiny = 0x1p-126;  // float32 smallest normal: flush-to-zero is allowed
constexpr double kInf = std::numeric_limits<double>::infinity();

// one float32 rounding of r
inline double round_err(double r) { return kU * std::fabs(r) + kTiny; }

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline std::vector<int64_t> strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// calls f(multi-index, flat index) for every element of s in row-major order
inline void for_each_index(const Shape& s, const std::function<void(const std::vector<int64_t>&, int64_t)>& f) {
  int64_t n = numel(s);
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(idx, flat);
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
}

inline Val make_val(const Shape& s) {
  return Val{s, std::vector<double>(static_cast<size_t>(numel(s))), std::vector<double>(static_cast<size_t>(numel(s)))};
}

// the flat index into a (right-aligned, size-1 dims broadcast) input of shape in for output index idx
inline int64_t broadcast_index(const Shape& in, const std::vector<int64_t>& idx) {
  int64_t flat = 0, stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    size_t d = in.size() - 1 - k, o = idx.size() - 1 - k;
    if (in[d] != 1) flat += idx[o] * stride;
    stride *= in[d];
  }
  return flat;
}

// out[i] = f(in values, in errors) elementwise with broadcasting; f returns {value, error}
using EwiseFn = std::function<std::pair<double, double>(const std::vector<double>& v, const std::vector<double>& e)>;
inline Val ewise(const std::vector<const Val*>& in, const Shape& out_shape, const EwiseFn& f) {
  Val out = make_val(out_shape);
  std::vector<double> v(in.size()), e(in.size());
  for_each_index(out_shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    for (size_t k = 0; k < in.size(); ++k) {
      int64_t j = broadcast_index(in[k]->shape, idx);
      v[k] = in[k]->v[static_cast<size_t>(j)], e[k] = in[k]->e[static_cast<size_t>(j)];
    }
    auto [r, err] = f(v, e);
    out.v[static_cast<size_t>(flat)] = r, out.e[static_cast<size_t>(flat)] = std::isfinite(r) ? err : kInf;
  });
  return out;
}

// out[idx] = in[src(idx)], or 0 (exact) where src returns -1
inline Val view(const Val& in, const Shape& out_shape, const std::function<int64_t(const std::vector<int64_t>&)>& src) {
  Val out = make_val(out_shape);
  for_each_index(out_shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t j = src(idx);
    if (j >= 0)
      out.v[static_cast<size_t>(flat)] = in.v[static_cast<size_t>(j)],
      out.e[static_cast<size_t>(flat)] = in.e[static_cast<size_t>(j)];
  });
  return out;
}

// Folds the elements of `in` along `axes` into each output element: fold(values, errors) -> {value, error}.
// The output has in's shape with the axes set to 1 (keepdim); callers reshape.
using FoldFn = std::function<std::pair<double, double>(const std::vector<double>& v, const std::vector<double>& e)>;
inline Val fold_axes(const Val& in, const std::vector<int64_t>& axes, const FoldFn& fold) {
  Shape ks = in.shape;
  for (int64_t a : axes) ks[static_cast<size_t>(a)] = 1;
  std::vector<std::vector<double>> vs(static_cast<size_t>(numel(ks))), es(vs.size());
  auto kst = strides(ks);
  for_each_index(in.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      if (ks[d] != 1) o += idx[d] * kst[d];
    vs[static_cast<size_t>(o)].push_back(in.v[static_cast<size_t>(flat)]);
    es[static_cast<size_t>(o)].push_back(in.e[static_cast<size_t>(flat)]);
  });
  Val out = make_val(ks);
  for (size_t o = 0; o < vs.size(); ++o) {
    auto [r, err] = fold(vs[o], es[o]);
    out.v[o] = r, out.e[o] = std::isfinite(r) || err == 0 ? err : kInf;  // exact: an empty max
  }
  return out;
}

// a sum of n terms in float32 in any order: the classical bound n*u*sum|x| plus the terms' own errors
inline std::pair<double, double> sum_fold(const std::vector<double>& v, const std::vector<double>& e) {
  double s = 0, a = 0, err = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i], a += std::fabs(v[i]), err += e[i];
  return {s, err + static_cast<double>(v.size()) * kU * a + kTiny};
}

}  // namespace tg::difftest::ref
