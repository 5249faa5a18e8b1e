// Shape-changing ops of the differential tester: reductions (with and without keepdim, softmax, argmax),
// movement ops (views: the reference maps output indices to input indices), cat/stack, matmul and gather.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "leaf_data.hpp"
#include "ops.hpp"
#include "reference.hpp"

namespace tg::difftest {

using namespace ref;

namespace {

int64_t norm_axis(int64_t a, size_t n) { return a < 0 ? a + static_cast<int64_t>(n) : a; }
size_t sz(int64_t v) { return static_cast<size_t>(v); }
bool has_elements(const Node& m) { return !m.shape.empty() && numel(m.shape) > 0; }

// an axis of an n-dim tensor, spelled negative half the time (as users do)
int64_t random_axis(Gen& g, size_t n, bool allow_end = false) {
  int64_t a = g.uniform(0, static_cast<int64_t>(n) - (allow_end ? 0 : 1));
  return g.chance(0.5) ? a - static_cast<int64_t>(n) - (allow_end ? 1 : 0) : a;
}

int pick_any(Gen& g, const std::function<bool(const Node&)>& ok = {}) {
  DType d = g.chance(0.8) ? dtypes::float32 : g.chance(0.7) ? dtypes::int32 : dtypes::bool_;
  int x = g.pick(d, ok);
  return x >= 0 ? x : g.pick(dtypes::float32, ok);
}

// picks an input for a shape-preserving op and starts node n from it (input, dtype, shape); -1 if none fits
int take_input(Gen& g, Node& n, const std::function<bool(const Node&)>& ok = {}) {
  int x = pick_any(g, ok);
  if (x >= 0) n.in = {x}, n.dtype = g.node(x).dtype, n.shape = g.node(x).shape;
  return x;
}

// calls f(flat indices of one line along axis) for every line
void along_axis(const Shape& s, int64_t axis, const std::function<void(const std::vector<size_t>&)>& f) {
  Shape outer = s;
  outer[sz(axis)] = 1;
  auto st = strides(s);
  for_each_index(outer, [&](const std::vector<int64_t>& idx, int64_t) {
    int64_t base = 0;
    for (size_t d = 0; d < idx.size(); ++d) base += idx[d] * st[d];
    std::vector<size_t> line;
    for (int64_t i = 0; i < s[sz(axis)]; ++i) line.push_back(sz(base + i * st[sz(axis)]));
    f(line);
  });
}

// ---- reductions ----
struct Reduce {
  const char* name;
  Tensor (Tensor::*fn)(Axes, bool) const;
  FoldFn fold;
  bool ints;
};

// an empty max is -inf and an empty min +inf, exactly (ints: their type's extremes, set by the caller)
std::pair<double, double> max_fold(const std::vector<double>& v, const std::vector<double>& e) {
  if (v.empty()) return {-kInf, 0};
  return {*std::max_element(v.begin(), v.end()), *std::max_element(e.begin(), e.end())};
}
std::pair<double, double> min_fold(const std::vector<double>& v, const std::vector<double>& e) {
  if (v.empty()) return {kInf, 0};
  return {*std::min_element(v.begin(), v.end()), *std::max_element(e.begin(), e.end())};
}
std::pair<double, double> mean_fold(const std::vector<double>& v, const std::vector<double>& e) {
  auto [s, err] = sum_fold(v, e);
  double n = static_cast<double>(v.size()), r = s / n;
  return {r, err / n + 2 * round_err(r)};
}

std::vector<OpDef> reduce_defs() {
  static const std::vector<Reduce> t = {{"sum", &Tensor::sum, sum_fold, true},
                                        {"max", &Tensor::max, max_fold, true},
                                        {"min", &Tensor::min, min_fold, true},
                                        {"mean", &Tensor::mean, mean_fold, false}};
  std::vector<OpDef> out;
  for (const Reduce& r : t) {
    out.push_back(OpDef{r.name, 3,
                        [r](Gen& g, Node& n) {
                          int x = g.pick(r.ints && g.chance(0.2) ? dtypes::int32 : dtypes::float32,
                                         [](const Node& m) { return !m.shape.empty(); });
                          if (x < 0) return false;
                          const Shape s = g.node(x).shape;  // a copy: helpers may grow the node list
                          std::vector<int64_t> axes;
                          if (!g.chance(0.2))  // else: all axes
                            for (size_t d = 0; d < s.size(); ++d)
                              if (g.chance(0.4))
                                axes.push_back(g.chance(0.3) ? static_cast<int64_t>(d) - static_cast<int64_t>(s.size())
                                                             : static_cast<int64_t>(d));
                          n.in = {x}, n.ints = axes, n.flag = g.chance(0.5), n.dtype = g.node(x).dtype;
                          for (size_t d = 0; d < s.size(); ++d) {
                            bool red = axes.empty() || std::any_of(axes.begin(), axes.end(), [&](int64_t a) {
                                         return norm_axis(a, s.size()) == static_cast<int64_t>(d);
                                       });
                            if (!red)
                              n.shape.push_back(s[d]);
                            else if (n.flag)
                              n.shape.push_back(1);
                          }
                          return true;
                        },
                        [r](const std::vector<Tensor>& in, const Node& n) { return (in[0].*r.fn)(n.ints, n.flag); },
                        [r](const std::vector<const Val*>& in, const Node& n) {
                          std::vector<int64_t> axes;
                          for (size_t d = 0; d < in[0]->shape.size(); ++d)
                            if (n.ints.empty() || std::any_of(n.ints.begin(), n.ints.end(), [&](int64_t a) {
                                  return norm_axis(a, in[0]->shape.size()) == static_cast<int64_t>(d);
                                }))
                              axes.push_back(static_cast<int64_t>(d));
                          Val v = fold_axes(*in[0], axes, r.fold);
                          if (n.dtype == dtypes::int32)  // int sums are exact: only the inputs' uncertainty stays
                            for (size_t i = 0; i < v.v.size(); ++i) {
                              v.e[i] = v.e[i] >= 1 ? kInf : 0;
                              if (std::isinf(v.v[i])) v.v[i] = v.v[i] < 0 ? -2147483648.0 : 2147483647.0;
                            }
                          v.shape = n.shape;
                          return v;
                        },
                        [r](const std::vector<std::string>& in, const Node& n) {
                          std::string axes = n.ints.size() == 1 ? std::to_string(n.ints[0])
                                                                : ints_cpp(n.ints);  // sum(1) or sum({0, 2})
                          return in[0] + "." + r.name + "(" + axes + (n.flag ? ", true)" : ")");
                        }});
  }
  out.push_back(OpDef{"argmax", 1,
                      [](Gen& g, Node& n) {
                        int x = g.pick(g.chance(0.8) ? dtypes::float32 : dtypes::int32, has_elements);
                        if (x < 0) return false;
                        n.in = {x}, n.shape = g.node(x).shape, n.dtype = dtypes::int32, n.flag = g.chance(0.5);
                        n.ints = {random_axis(g, n.shape.size())};
                        int64_t a = norm_axis(n.ints[0], n.shape.size());
                        if (n.flag)
                          n.shape[sz(a)] = 1;
                        else
                          n.shape.erase(n.shape.begin() + a);
                        return true;
                      },
                      [](const std::vector<Tensor>& in, const Node& n) { return in[0].argmax(n.ints[0], n.flag); },
                      [](const std::vector<const Val*>& in, const Node& n) {
                        Val v = fold_axes(*in[0], {norm_axis(n.ints[0], in[0]->shape.size())},
                                          [](const std::vector<double>& x, const std::vector<double>& e) {
                                            size_t best = static_cast<size_t>(std::max_element(x.begin(), x.end()) -
                                                                              x.begin());  // the first maximal
                                            bool unsure = false;
                                            for (size_t j = 0; j < x.size(); ++j)
                                              unsure |= j != best && e[j] + e[best] > 0 &&
                                                        !(x[j] < x[best] - (e[j] + e[best]));  // NaN: unsure
                                            return std::pair{static_cast<double>(best), unsure ? kInf : 0.0};
                                          });
                        v.shape = n.shape;
                        return v;
                      },
                      [](const std::vector<std::string>& in, const Node& n) {
                        return in[0] + ".argmax(" + std::to_string(n.ints[0]) + (n.flag ? ", true)" : ")");
                      }});
  for (bool log : {false, true}) {
    out.push_back(
        OpDef{log ? "log_softmax" : "softmax", 1,
              [](Gen& g, Node& n) {
                int x = g.pick(dtypes::float32, [](const Node& m) { return !m.shape.empty(); });
                if (x < 0) return false;
                n.in = {x}, n.shape = g.node(x).shape, n.ints = {random_axis(g, n.shape.size())};
                return true;
              },
              [log](const std::vector<Tensor>& in, const Node& n) {
                return log ? in[0].log_softmax(n.ints[0]) : in[0].softmax(n.ints[0]);
              },
              [log](const std::vector<const Val*>& in, const Node& n) {
                Val out = make_val(n.shape);
                along_axis(n.shape, norm_axis(n.ints[0], n.shape.size()), [&](const std::vector<size_t>& line) {
                  double m = -kInf, me = 0, s = 0;
                  for (size_t i : line) m = std::max(m, in[0]->v[i]), me = std::max(me, in[0]->e[i]);
                  for (size_t i : line) s += std::exp(in[0]->v[i] - m);
                  double k = static_cast<double>(line.size()) + 8;
                  for (size_t i : line) {
                    double d = in[0]->v[i] - m;
                    if (log) {
                      out.v[i] = d - std::log(s);
                      out.e[i] = in[0]->e[i] + 2 * me + 4 * kU * (std::fabs(d) + std::fabs(std::log(s)) + k);
                    } else {
                      double p = std::exp(d) / s;
                      out.v[i] = p;
                      out.e[i] = p * (std::expm1(2 * (me + in[0]->e[i])) + k * kU + 2 * kU * std::fabs(d)) + kTiny;
                    }
                  }
                });
                return out;
              },
              [log](const std::vector<std::string>& in, const Node& n) {
                return in[0] + (log ? ".log_softmax(" : ".softmax(") + std::to_string(n.ints[0]) + ")";
              }});
  }
  return out;
}

// ---- movement ----
// a random shape with the same element count
Shape refactor(Gen& g, int64_t numel) {
  if (numel == 0) {
    Shape s(sz(g.uniform(1, 3)), 1);
    for (auto& d : s) d = g.uniform(1, 4);
    s[sz(g.uniform(0, static_cast<int64_t>(s.size()) - 1))] = 0;
    return s;
  }
  std::vector<int64_t> primes;
  for (int64_t p = 2, m = numel; m > 1; ++p)
    while (m % p == 0) primes.push_back(p), m /= p;
  std::shuffle(primes.begin(), primes.end(), g.rng);
  Shape s(sz(g.uniform(1, 4)), 1);
  for (int64_t p : primes) s[sz(g.uniform(0, static_cast<int64_t>(s.size()) - 1))] *= p;
  return s;
}

// out index -> flat input index through a per-dim map (-1: outside the input, a zero)
Val remap(const Val& in, const Shape& out, const std::function<int64_t(size_t d, int64_t i)>& dim_map,
          const std::function<size_t(size_t d)>& in_dim = {}) {
  auto st = strides(in.shape);
  return view(in, out, [&](const std::vector<int64_t>& idx) {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t j = dim_map(d, idx[d]);
      if (j < 0) return int64_t{-1};
      flat += j * st[in_dim ? in_dim(d) : d];
    }
    return flat;
  });
}

OpDef movement(const char* name, std::function<bool(Gen&, Node&)> make,
               std::function<Tensor(const Tensor&, const Node&)> run,
               std::function<Val(const Val&, const Node&)> ref_fn,
               std::function<std::string(const std::string&, const Node&)> cpp) {
  return OpDef{name,
               2,
               std::move(make),
               [run](const std::vector<Tensor>& in, const Node& n) { return run(in[0], n); },
               [ref_fn](const std::vector<const Val*>& in, const Node& n) { return ref_fn(*in[0], n); },
               [cpp](const std::vector<std::string>& in, const Node& n) { return cpp(in[0], n); }};
}

std::vector<std::pair<int64_t, int64_t>> pairs(const std::vector<int64_t>& v) {
  std::vector<std::pair<int64_t, int64_t>> p;
  for (size_t i = 0; i + 1 < v.size(); i += 2) p.emplace_back(v[i], v[i + 1]);
  return p;
}
std::string pairs_cpp(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i + 1 < v.size(); i += 2)
    s += (i ? ", {" : "{") + std::to_string(v[i]) + ", " + std::to_string(v[i + 1]) + "}";
  return s + "}";
}

std::vector<OpDef> movement_defs() {
  std::vector<OpDef> out;
  out.push_back(movement(
      "reshape",
      [](Gen& g, Node& n) {
        int x = pick_any(g);
        if (x < 0) return false;
        n.in = {x}, n.dtype = g.node(x).dtype, n.shape = refactor(g, numel(g.node(x).shape));
        return true;
      },
      [](const Tensor& x, const Node& n) { return x.reshape(n.shape); },
      [](const Val& x, const Node& n) { return Val{n.shape, x.v, x.e}; },
      [](const std::string& x, const Node& n) { return x + ".reshape(" + ints_cpp(n.shape) + ")"; }));
  out.push_back(movement(
      "permute",
      [](Gen& g, Node& n) {
        int x = pick_any(g, [](const Node& m) { return m.shape.size() >= 2; });
        if (x < 0) return false;
        const Shape s = g.node(x).shape;  // a copy: helpers may grow the node list
        n.ints.resize(s.size());
        std::iota(n.ints.begin(), n.ints.end(), 0);
        std::shuffle(n.ints.begin(), n.ints.end(), g.rng);
        n.in = {x}, n.dtype = g.node(x).dtype;
        for (int64_t p : n.ints) n.shape.push_back(s[sz(p)]);
        return true;
      },
      [](const Tensor& x, const Node& n) { return x.permute(n.ints); },
      [](const Val& x, const Node& n) {
        return remap(x, n.shape, [](size_t, int64_t i) { return i; }, [&](size_t d) { return sz(n.ints[d]); });
      },
      [](const std::string& x, const Node& n) { return x + ".permute(" + ints_cpp(n.ints) + ")"; }));
  out.push_back(movement(
      "transpose",
      [](Gen& g, Node& n) {
        int x = take_input(g, n, [](const Node& m) { return m.shape.size() >= 2; });
        if (x < 0) return false;
        n.ints = {random_axis(g, n.shape.size()), random_axis(g, n.shape.size())};
        std::swap(n.shape[sz(norm_axis(n.ints[0], n.shape.size()))], n.shape[sz(norm_axis(n.ints[1], n.shape.size()))]);
        return true;
      },
      [](const Tensor& x, const Node& n) { return x.transpose(n.ints[0], n.ints[1]); },
      [](const Val& x, const Node& n) {
        size_t a = sz(norm_axis(n.ints[0], n.shape.size())), b = sz(norm_axis(n.ints[1], n.shape.size()));
        return remap(
            x, n.shape, [](size_t, int64_t i) { return i; }, [=](size_t d) { return d == a   ? b
                                                                                    : d == b ? a
                                                                                             : d; });
      },
      [](const std::string& x, const Node& n) {
        return x + ".transpose(" + std::to_string(n.ints[0]) + ", " + std::to_string(n.ints[1]) + ")";
      }));
  out.push_back(movement(
      "expand",
      [](Gen& g, Node& n) {
        int x = take_input(g, n, [](const Node& m) { return std::count(m.shape.begin(), m.shape.end(), 1) > 0; });
        if (x < 0) return false;
        for (size_t d = 0; d < n.shape.size(); ++d) {
          n.ints.push_back(n.shape[d] == 1 ? g.uniform(1, 5) : g.chance(0.3) ? -1 : n.shape[d]);
          if (n.ints[d] != -1) n.shape[d] = n.ints[d];
        }
        return true;
      },
      [](const Tensor& x, const Node& n) { return x.expand(n.ints); },
      [](const Val& x, const Node& n) {
        return remap(x, n.shape, [&](size_t d, int64_t i) { return x.shape[d] == 1 ? 0 : i; });
      },
      [](const std::string& x, const Node& n) { return x + ".expand(" + ints_cpp(n.ints) + ")"; }));
  out.push_back(movement(
      "unsqueeze",
      [](Gen& g, Node& n) {
        int x = take_input(g, n, [](const Node& m) { return m.shape.size() < 4; });
        if (x < 0) return false;
        n.ints = {random_axis(g, n.shape.size(), true)};
        n.shape.insert(n.shape.begin() + norm_axis(n.ints[0], n.shape.size() + 1), 1);
        return true;
      },
      [](const Tensor& x, const Node& n) { return x.unsqueeze(n.ints[0]); },
      [](const Val& x, const Node& n) { return Val{n.shape, x.v, x.e}; },
      [](const std::string& x, const Node& n) { return x + ".unsqueeze(" + std::to_string(n.ints[0]) + ")"; }));
  out.push_back(movement(
      "squeeze",
      [](Gen& g, Node& n) {
        int x = take_input(g, n, [](const Node& m) { return std::count(m.shape.begin(), m.shape.end(), 1) > 0; });
        if (x < 0) return false;
        int64_t a = std::find(n.shape.begin(), n.shape.end(), 1) - n.shape.begin();
        n.ints = {g.chance(0.5) ? a : a - static_cast<int64_t>(n.shape.size())};
        n.shape.erase(n.shape.begin() + a);
        return true;
      },
      [](const Tensor& x, const Node& n) { return x.squeeze(n.ints[0]); },
      [](const Val& x, const Node& n) { return Val{n.shape, x.v, x.e}; },
      [](const std::string& x, const Node& n) { return x + ".squeeze(" + std::to_string(n.ints[0]) + ")"; }));
  out.push_back(movement(
      "pad",
      [](Gen& g, Node& n) {
        int x = take_input(g, n, [](const Node& m) { return !m.shape.empty(); });
        if (x < 0) return false;
        for (auto& d : n.shape) {
          int64_t b = g.chance(0.5) ? g.uniform(0, 3) : 0, a = g.chance(0.5) ? g.uniform(0, 3) : 0;
          n.ints.push_back(b), n.ints.push_back(a), d += a + b;
        }
        return true;
      },
      [](const Tensor& x, const Node& n) { return x.pad(pairs(n.ints)); },
      [](const Val& x, const Node& n) {
        return remap(x, n.shape, [&](size_t d, int64_t i) {
          int64_t j = i - n.ints[2 * d];
          return j < 0 || j >= x.shape[d] ? int64_t{-1} : j;
        });
      },
      [](const std::string& x, const Node& n) { return x + ".pad(" + pairs_cpp(n.ints) + ")"; }));
  out.push_back(movement(
      "shrink",
      [](Gen& g, Node& n) {
        int x = take_input(g, n, has_elements);
        if (x < 0) return false;
        for (auto& d : n.shape) {
          int64_t s = g.uniform(0, d - 1), e = g.uniform(s + 1, d);
          n.ints.push_back(s), n.ints.push_back(e), d = e - s;
        }
        return true;
      },
      [](const Tensor& x, const Node& n) { return x.shrink(pairs(n.ints)); },
      [](const Val& x, const Node& n) {
        return remap(x, n.shape, [&](size_t d, int64_t i) { return i + n.ints[2 * d]; });
      },
      [](const std::string& x, const Node& n) { return x + ".shrink(" + pairs_cpp(n.ints) + ")"; }));
  out.push_back(movement(
      "slice",  // python semantics: negative starts and ends count from the end, ends past the dim clamp
      [](Gen& g, Node& n) {
        int x = take_input(g, n, has_elements);
        if (x < 0) return false;
        int64_t a = random_axis(g, n.shape.size()), d = n.shape[sz(norm_axis(a, n.shape.size()))];
        int64_t s = g.uniform(0, d - 1), e = g.uniform(s + 1, d + 2);
        n.ints = {a, g.chance(0.4) ? s - d : s, g.chance(0.4) && e < d ? e - d : e};
        n.shape[sz(norm_axis(a, n.shape.size()))] = std::min(e, d) - s;
        return true;
      },
      [](const Tensor& x, const Node& n) { return x.slice(n.ints[0], n.ints[1], n.ints[2]); },
      [](const Val& x, const Node& n) {
        size_t a = sz(norm_axis(n.ints[0], x.shape.size()));
        int64_t s = n.ints[1] < 0 ? n.ints[1] + x.shape[a] : n.ints[1];
        return remap(x, n.shape, [&](size_t d, int64_t i) { return d == a ? i + s : i; });
      },
      [](const std::string& x, const Node& n) {
        return x + ".slice(" + std::to_string(n.ints[0]) + ", " + std::to_string(n.ints[1]) + ", " +
               std::to_string(n.ints[2]) + ")";
      }));
  out.push_back(movement(
      "flip",
      [](Gen& g, Node& n) {
        int x = take_input(g, n, [](const Node& m) { return !m.shape.empty(); });
        if (x < 0) return false;
        for (size_t d = 0; d < n.shape.size(); ++d)
          if (g.chance(0.5))
            n.ints.push_back(g.chance(0.3) ? static_cast<int64_t>(d) - static_cast<int64_t>(n.shape.size())
                                           : static_cast<int64_t>(d));
        if (n.ints.empty()) n.ints.push_back(0);
        return true;
      },
      [](const Tensor& x, const Node& n) { return x.flip(n.ints); },
      [](const Val& x, const Node& n) {
        std::vector<bool> f(x.shape.size());
        for (int64_t a : n.ints) f[sz(norm_axis(a, x.shape.size()))] = true;
        return remap(x, n.shape, [&](size_t d, int64_t i) { return f[d] ? x.shape[d] - 1 - i : i; });
      },
      [](const std::string& x, const Node& n) { return x + ".flip(" + ints_cpp(n.ints) + ")"; }));
  out.push_back(movement(
      "contiguous",
      [](Gen& g, Node& n) {
        int x = take_input(g, n);
        if (x < 0) return false;
        return true;
      },
      [](const Tensor& x, const Node&) { return x.contiguous(); }, [](const Val& x, const Node&) { return x; },
      [](const std::string& x, const Node&) { return x + ".contiguous()"; }));
  return out;
}

// ---- several inputs: cat, stack, matmul, gather ----
std::string list_cpp(const std::vector<std::string>& in) {
  std::string s = "{";
  for (size_t i = 0; i < in.size(); ++i) s += (i ? ", " : "") + in[i];
  return s + "}";
}

std::vector<OpDef> multi_defs() {
  std::vector<OpDef> out;
  out.push_back(OpDef{"cat", 2,
                      [](Gen& g, Node& n) {
                        int x = pick_any(g, [](const Node& m) { return !m.shape.empty(); });
                        if (x < 0) return false;
                        const Node xn = g.node(x);  // a copy: g.leaf() may grow the node list
                        n.ints = {random_axis(g, xn.shape.size())};
                        size_t a = sz(norm_axis(n.ints[0], xn.shape.size()));
                        n.in = {x}, n.dtype = xn.dtype, n.shape = xn.shape;
                        for (int k = 0, parts = static_cast<int>(g.uniform(1, 2)); k < parts; ++k) {
                          Shape want = xn.shape;
                          auto same_but_axis = [&](const Node& m) {
                            if (m.shape.size() != want.size()) return false;
                            for (size_t d = 0; d < want.size(); ++d)
                              if (d != a && m.shape[d] != want[d]) return false;
                            return true;
                          };
                          int y = g.chance(0.5) ? g.pick(xn.dtype, same_but_axis) : -1;
                          if (y < 0) want[a] = g.uniform(1, 4), y = g.leaf(want, n.dtype);
                          n.in.push_back(y), n.shape[a] += g.node(y).shape[a];
                        }
                        return true;
                      },
                      [](const std::vector<Tensor>& in, const Node& n) { return Tensor::cat(in, n.ints[0]); },
                      [](const std::vector<const Val*>& in, const Node& n) {
                        size_t a = sz(norm_axis(n.ints[0], n.shape.size()));
                        Val out = make_val(n.shape);
                        for_each_index(n.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
                          std::vector<int64_t> j = idx;
                          for (const Val* v : in) {
                            if (j[a] < v->shape[a]) {
                              int64_t src = broadcast_index(v->shape, j);
                              out.v[sz(flat)] = v->v[sz(src)], out.e[sz(flat)] = v->e[sz(src)];
                              return;
                            }
                            j[a] -= v->shape[a];
                          }
                        });
                        return out;
                      },
                      [](const std::vector<std::string>& in, const Node& n) {
                        return "Tensor::cat(" + list_cpp(in) + ", " + std::to_string(n.ints[0]) + ")";
                      }});
  out.push_back(OpDef{"stack", 1,
                      [](Gen& g, Node& n) {
                        int x = pick_any(g, [](const Node& m) { return m.shape.size() < 4; });
                        if (x < 0) return false;
                        const Node xn = g.node(x);  // a copy: g.leaf() may grow the node list
                        int y =
                            g.pick(xn.dtype, [&](const Node& m) { return m.shape == xn.shape; });  // may be x itself
                        n.in = {x, y < 0 ? x : y}, n.dtype = xn.dtype, n.shape = xn.shape,
                        n.ints = {random_axis(g, xn.shape.size(), true)};
                        n.shape.insert(n.shape.begin() + norm_axis(n.ints[0], xn.shape.size() + 1), 2);
                        return true;
                      },
                      [](const std::vector<Tensor>& in, const Node& n) { return Tensor::stack(in, n.ints[0]); },
                      [](const std::vector<const Val*>& in, const Node& n) {
                        size_t a = sz(norm_axis(n.ints[0], n.shape.size()));
                        Val out = make_val(n.shape);
                        for_each_index(n.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
                          std::vector<int64_t> j = idx;
                          j.erase(j.begin() + static_cast<int64_t>(a));
                          const Val* v = in[sz(idx[a])];
                          int64_t src = broadcast_index(v->shape, j);
                          out.v[sz(flat)] = v->v[sz(src)], out.e[sz(flat)] = v->e[sz(src)];
                        });
                        return out;
                      },
                      [](const std::vector<std::string>& in, const Node& n) {
                        return "Tensor::stack(" + list_cpp(in) + ", " + std::to_string(n.ints[0]) + ")";
                      }});
  out.push_back(
      OpDef{"matmul", 3,
            [](Gen& g, Node& n) {
              int x = g.pick(dtypes::float32, [](const Node& m) { return !m.shape.empty() && m.shape.size() <= 3; });
              if (x < 0) return false;
              Shape xs = g.node(x).shape;
              int64_t k = xs.back();
              int y;
              if (xs.size() >= 2 && g.chance(0.3)) {  // x @ x^T: one input read two ways
                Node t{.op = "transpose", .in = {x}, .ints = {-2, -1}, .shape = xs};
                std::swap(t.shape[xs.size() - 2], t.shape[xs.size() - 1]);
                y = g.add(t);
              } else {
                Shape ys = {k, g.chance(0.2) ? g.uniform(16, 40) : g.uniform(1, 9)};
                if (g.chance(0.15))
                  ys = {k};
                else if (xs.size() == 3 && g.chance(0.5))
                  ys.insert(ys.begin(), xs[0]);
                y = g.leaf(ys, dtypes::float32);
              }
              Shape ys = g.node(y).shape;
              // numpy: a 1-D operand gains a dim that the result drops again; batch dims broadcast (here one side
              // has them or both have the same)
              Shape out = xs.size() >= 2 ? Shape(xs.begin(), xs.end() - 1) : Shape{};
              if (ys.size() == 3 && xs.size() == 2) out.insert(out.begin(), ys[0]);
              if (ys.size() >= 2) out.push_back(ys.back());
              n.in = {x, y}, n.shape = out;
              return true;
            },
            [](const std::vector<Tensor>& in, const Node&) { return in[0].matmul(in[1]); },
            [](const std::vector<const Val*>& in, const Node& n) {
              const Val &a = *in[0], &b = *in[1];
              int64_t k = a.shape.back(), m = a.shape.size() >= 2 ? a.shape[a.shape.size() - 2] : 1;
              int64_t nn = b.shape.size() >= 2 ? b.shape.back() : 1;
              auto per = [](int64_t total, int64_t each) {
                return each == 0 ? int64_t{1} : std::max<int64_t>(1, total / each);
              };
              int64_t a_batch = per(numel(a.shape), m * k), b_batch = per(numel(b.shape), k * nn);
              Val out = make_val(n.shape);
              int64_t batches = m * nn == 0 ? 0 : numel(n.shape) / (m * nn);
              for (int64_t bt = 0; bt < batches; ++bt)
                for (int64_t i = 0; i < m; ++i)
                  for (int64_t j = 0; j < nn; ++j) {
                    double s = 0, mag = 0, err = 0;
                    for (int64_t q = 0; q < k; ++q) {
                      size_t ia = sz((bt % a_batch) * m * k + i * k + q), ib = sz((bt % b_batch) * k * nn + q * nn + j);
                      double x = a.v[ia], y = b.v[ib], ex = a.e[ia], ey = b.e[ib];
                      s += x * y, mag += std::fabs(x * y), err += std::fabs(x) * ey + std::fabs(y) * ex + ex * ey;
                    }
                    size_t o = sz(bt * m * nn + i * nn + j);
                    out.v[o] = s, out.e[o] = err + static_cast<double>(k + 1) * kU * mag + kTiny;
                  }
              return out;
            },
            [](const std::vector<std::string>& in, const Node&) { return in[0] + ".matmul(" + in[1] + ")"; }});
  out.push_back(
      OpDef{"gather", 1,
            [](Gen& g, Node& n) {
              int x = pick_any(g, has_elements);
              if (x < 0) return false;
              const Shape xs = g.node(x).shape;
              n.ints = {random_axis(g, xs.size())};
              size_t a = sz(norm_axis(n.ints[0], xs.size()));
              Shape is = xs;
              for (size_t d = 0; d < is.size(); ++d) is[d] = d == a ? g.uniform(1, 4) : g.uniform(1, xs[d]);
              Node idx{.op = "leaf",
                       .lo = 0,
                       .hi = static_cast<double>(xs[a] - 1),
                       .seed = g.rng(),
                       .shape = is,
                       .dtype = dtypes::int32};
              n.in = {x, g.add(idx)}, n.dtype = g.node(x).dtype, n.shape = is;
              return true;
            },
            [](const std::vector<Tensor>& in, const Node& n) { return in[0].gather(n.ints[0], in[1]); },
            [](const std::vector<const Val*>& in, const Node& n) {
              size_t a = sz(norm_axis(n.ints[0], n.shape.size()));
              auto st = strides(in[0]->shape);
              return view(*in[0], n.shape, [&](const std::vector<int64_t>& idx) {
                int64_t flat = 0;
                for (size_t d = 0; d < idx.size(); ++d)
                  flat += (d == a ? static_cast<int64_t>(in[1]->v[sz(broadcast_index(n.shape, idx))]) : idx[d]) * st[d];
                return flat;
              });
            },
            [](const std::vector<std::string>& in, const Node& n) {
              return in[0] + ".gather(" + std::to_string(n.ints[0]) + ", " + in[1] + ")";
            }});
  return out;
}

}  // namespace

std::vector<OpDef> shape_ops() {
  std::vector<OpDef> out;
  for (auto* part : {&reduce_defs, &movement_defs, &multi_defs})
    for (auto& d : part()) out.push_back(std::move(d));
  return out;
}

}  // namespace tg::difftest
