// Elementwise ops of the differential tester: unary math, scalar and tensor binaries with broadcasting,
// comparisons, where, casts. Each reference carries the float32 error bound: propagated input error (through
// the function's range over [x - e, x + e]) plus the op's own error (roundings; ulps of the decompositions).
#include <cmath>
#include <numbers>
#include <optional>

#include "ops.hpp"
#include "reference.hpp"

namespace tg::difftest {

using namespace ref;

namespace {

bool is_float(DType d) { return d == dtypes::float32; }

// one rounding of a result of node's dtype (ints are exact unless they leave int32)
double own_rounding(const Node& n, double r) {
  if (is_float(n.dtype)) return round_err(r);
  return std::fabs(r) >= 2147483648.0 ? kInf : 0.0;
}

// ---- unary float32 math ----
struct Unary {
  const char* name;
  Tensor (Tensor::*fn)() const;
  double (*f)(double);
  double (*own_err)(double x, double r);  // the op's own error at x (absolute)
  bool positive_domain;                   // the generator feeds it |x| + 0.5
  int weight = 2;
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double gelu(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

const std::vector<Unary>& unaries() {
  static const std::vector<Unary> t = {
      {"neg", &Tensor::neg, [](double x) { return -x; }, [](double, double) { return 0.0; }, false},
      {"abs", &Tensor::abs, [](double x) { return std::fabs(x); }, [](double, double) { return 0.0; }, false},
      {"relu", &Tensor::relu, [](double x) { return x > 0 ? x : 0.0; }, [](double, double) { return 0.0; }, false},
      // exp(x) = exp2(x * log2 e): the product's rounding moves the exponent by u|x|
      {"exp", &Tensor::exp, [](double x) { return std::exp(x); },
       [](double x, double r) { return 4 * kU * std::fabs(r) * (1 + std::fabs(x)) + kTiny; }, false},
      {"exp2", &Tensor::exp2, [](double x) { return std::exp2(x); },
       [](double, double r) { return 4 * kU * std::fabs(r) + kTiny; }, false},
      {"log", &Tensor::log, [](double x) { return std::log(x); },
       [](double, double r) { return 4 * kU * (std::fabs(r) + 1); }, true},
      {"log2", &Tensor::log2, [](double x) { return std::log2(x); },
       [](double, double r) { return 4 * kU * (std::fabs(r) + 1); }, true},
      {"sin", &Tensor::sin, [](double x) { return std::sin(x); },
       [](double, double r) { return 4 * kU * (std::fabs(r) + 1); }, false},
      {"cos", &Tensor::cos, [](double x) { return std::cos(x); },
       [](double, double r) { return 4 * kU * (std::fabs(r) + 1); }, false},
      {"sqrt", &Tensor::sqrt, [](double x) { return std::sqrt(x); },
       [](double, double r) { return 2 * kU * std::fabs(r); }, true},
      {"rsqrt", &Tensor::rsqrt, [](double x) { return 1 / std::sqrt(x); },
       [](double, double r) { return 4 * kU * std::fabs(r); }, true},
      {"reciprocal", &Tensor::reciprocal, [](double x) { return 1 / x; },
       [](double, double r) { return 2 * kU * std::fabs(r); }, true},
      {"sigmoid", &Tensor::sigmoid, sigmoid,
       [](double x, double r) { return 4 * kU * std::fabs(r) * (1 + std::fabs(x)) + kTiny; }, false},
      {"tanh", &Tensor::tanh, [](double x) { return std::tanh(x); },
       [](double x, double r) { return 8 * kU * std::fabs(r) * (1 + std::fabs(x)) + kTiny; }, false},
      {"gelu", &Tensor::gelu, gelu,
       [](double x, double r) { return 8 * kU * (std::fabs(r) + std::fabs(x)) * (1 + x * x) + kTiny; }, false},
      {"silu", &Tensor::silu, [](double x) { return x * sigmoid(x); },
       [](double x, double r) { return 6 * kU * (std::fabs(r) + std::fabs(x)) * (1 + std::fabs(x)) + kTiny; }, false},
  };
  return t;
}

// the largest change of f over [x - e, x + e]: the ends bound it for a monotonic f, and 1.2 e for the others
// (sin, cos, gelu, abs: their slope stays under 1.2)
double propagated(double (*f)(double), double x, double e, double r) {
  if (e == 0) return 0;
  if (!std::isfinite(e)) return kInf;
  double d = std::max({std::fabs(f(x + e) - r), std::fabs(f(x - e) - r), 1.2 * e});
  return std::isnan(d) ? kInf : d;
}

int positive_input(Gen& g) {
  int x = g.pick(dtypes::float32);
  if (x < 0) return -1;
  Node a{.op = "abs", .in = {x}, .shape = g.node(x).shape};
  Node s{.op = "add_s", .in = {g.add(a)}, .f = 0.5, .shape = a.shape};
  return g.add(s);
}

std::vector<OpDef> unary_defs() {
  std::vector<OpDef> out;
  for (const Unary& u : unaries()) {
    out.push_back(OpDef{u.name, u.weight,
                        [u](Gen& g, Node& n) {
                          int x = u.positive_domain ? positive_input(g) : g.pick(dtypes::float32);
                          if (x < 0) return false;
                          n.in = {x}, n.shape = g.node(x).shape;
                          return true;
                        },
                        [u](const std::vector<Tensor>& in, const Node&) { return (in[0].*u.fn)(); },
                        [u](const std::vector<const Val*>& in, const Node& n) {
                          return ewise(in, n.shape, [u](const std::vector<double>& v, const std::vector<double>& e) {
                            double r = u.f(v[0]);
                            return std::pair{r, propagated(u.f, v[0], e[0], r) + u.own_err(v[0], r)};
                          });
                        },
                        [u](const std::vector<std::string>& in, const Node&) { return in[0] + "." + u.name + "()"; }});
  }
  return out;
}

// ---- binaries (tensor op tensor with broadcasting; tensor op scalar) ----
std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1, y = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - 1 - k] = x == 1 ? y : x;  // 1 broadcasts to anything, 0 included
  }
  return out;
}

// a partner for x in a broadcasting op: an earlier node whose shape broadcasts with x's, or a fresh input of x's
// shape with some dims set to 1 (and maybe leading dims dropped)
int partner(Gen& g, int x, DType d) {
  const Shape s = g.node(x).shape;  // a copy: helpers may grow the node list
  if (g.chance(0.6)) {
    int y = g.pick(d, [&](const Node& n) { return n.shape.size() <= s.size() && broadcast(s, n.shape) == s; });
    if (y >= 0) return y;
  }
  Shape b = s;
  for (auto& v : b)
    if (g.chance(0.3)) v = 1;
  if (!b.empty() && g.chance(0.2)) b.erase(b.begin());
  return g.leaf(b, d);
}

using BinFn = std::pair<double, double> (*)(double a, double b, double ea, double eb);

struct Binary {
  const char* name;
  const char* spelling;  // C++: "+", or a method name
  Tensor (*fn)(const Tensor&, const Tensor&);
  BinFn f;  // value and propagated error (the result's own rounding is added by the caller)
  bool float_only = false, int_only = false;
};

std::pair<double, double> div_ref(double a, double b, double ea, double eb) {
  double r = a / b;
  if (std::fabs(b) <= 2 * eb || b == 0) return {r, kInf};
  return {r, (ea + std::fabs(r) * eb) / (std::fabs(b) - eb) + 2 * kU * std::fabs(r)};
}

const std::vector<Binary>& binaries() {
  static const std::vector<Binary> t = {
      {"add", "+", [](const Tensor& a, const Tensor& b) { return a + b; },
       [](double a, double b, double ea, double eb) { return std::pair{a + b, ea + eb}; }},
      {"sub", "-", [](const Tensor& a, const Tensor& b) { return a - b; },
       [](double a, double b, double ea, double eb) { return std::pair{a - b, ea + eb}; }},
      {"mul", "*", [](const Tensor& a, const Tensor& b) { return a * b; },
       [](double a, double b, double ea, double eb) {
         return std::pair{a * b, std::fabs(a) * eb + std::fabs(b) * ea + ea * eb};
       }},
      {"div", "/", [](const Tensor& a, const Tensor& b) { return a / b; }, div_ref, true},
      {"maximum", "maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); },
       [](double a, double b, double ea, double eb) { return std::pair{std::max(a, b), std::max(ea, eb)}; }},
      {"minimum", "minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); },
       [](double a, double b, double ea, double eb) { return std::pair{std::min(a, b), std::max(ea, eb)}; }},
      // ints: truncating division and C remainder, x/0 = x%0 = 0
      {"idiv", "idiv", [](const Tensor& a, const Tensor& b) { return a.idiv(b); },
       [](double a, double b, double ea, double eb) {
         return std::pair{b == 0 ? 0.0 : std::trunc(a / b), ea + eb > 0 ? kInf : 0.0};
       },
       false, true},
      {"mod", "mod", [](const Tensor& a, const Tensor& b) { return a.mod(b); },
       [](double a, double b, double ea, double eb) {
         return std::pair{b == 0 ? 0.0 : std::fmod(a, b), ea + eb > 0 ? kInf : 0.0};
       },
       false, true},
  };
  return t;
}

std::string spell_binary(const char* sp, const std::string& a, const std::string& b) {
  if (std::isalpha(static_cast<unsigned char>(sp[0]))) return a + "." + sp + "(" + b + ")";
  return a + " " + sp + " " + b;
}

Val binary_ref(const std::vector<const Val*>& in, const Node& n, BinFn f) {
  return ewise(in, n.shape, [&](const std::vector<double>& v, const std::vector<double>& e) {
    auto [r, err] = f(v[0], v[1], e[0], e[1]);
    return std::pair{r, err + own_rounding(n, r)};
  });
}

std::vector<OpDef> binary_defs() {
  std::vector<OpDef> out;
  for (const Binary& b : binaries()) {
    out.push_back(
        OpDef{b.name, b.int_only ? 1 : 3,
              [b](Gen& g, Node& n) {
                DType d = b.int_only ? dtypes::int32 : b.float_only || g.chance(0.8) ? dtypes::float32 : dtypes::int32;
                int x = g.pick(d);
                if (x < 0) return false;
                int y = partner(g, x, d);
                n.in = {x, y}, n.dtype = d, n.shape = *broadcast(g.node(x).shape, g.node(y).shape);
                return true;
              },
              [b](const std::vector<Tensor>& in, const Node&) { return b.fn(in[0], in[1]); },
              [b](const std::vector<const Val*>& in, const Node& n) { return binary_ref(in, n, b.f); },
              [b](const std::vector<std::string>& in, const Node&) { return spell_binary(b.spelling, in[0], in[1]); }});
  }
  // tensor op scalar: x + c, x * c, c - x, x / c
  struct Scalar {
    const char* name;
    Tensor (*fn)(const Tensor&, double);
    BinFn f;
    std::string (*cpp)(const std::string&, const std::string&);
  };
  static const std::vector<Scalar> scalars = {
      {"add_s", [](const Tensor& x, double c) { return x + c; }, binaries()[0].f,
       [](const std::string& x, const std::string& c) { return x + " + " + c; }},
      {"mul_s", [](const Tensor& x, double c) { return x * c; }, binaries()[2].f,
       [](const std::string& x, const std::string& c) { return x + " * " + c; }},
      {"rsub_s", [](const Tensor& x, double c) { return c - x; },
       [](double a, double b, double ea, double eb) { return std::pair{b - a, ea + eb}; },
       [](const std::string& x, const std::string& c) { return c + " - " + x; }},
      {"div_s", [](const Tensor& x, double c) { return x / c; }, div_ref,
       [](const std::string& x, const std::string& c) { return x + " / " + c; }},
  };
  static const double consts[] = {0.5, 2, 3, -1.5, 1e-3, 100, 0.1};
  for (const Scalar& s : scalars) {
    out.push_back(OpDef{s.name, 2,
                        [](Gen& g, Node& n) {
                          int x = g.pick(dtypes::float32);
                          if (x < 0) return false;
                          n.in = {x}, n.shape = g.node(x).shape, n.f = consts[g.uniform(0, std::size(consts) - 1)];
                          return true;
                        },
                        [s](const std::vector<Tensor>& in, const Node& n) { return s.fn(in[0], n.f); },
                        [s](const std::vector<const Val*>& in, const Node& n) {
                          return ewise(in, n.shape, [&](const std::vector<double>& v, const std::vector<double>& e) {
                            // the constant itself is rounded to float32 first
                            auto [r, err] = s.f(v[0], static_cast<float>(n.f), e[0], 0);
                            return std::pair{r, err + own_rounding(n, r)};
                          });
                        },
                        [s](const std::vector<std::string>& in, const Node& n) { return s.cpp(in[0], repr(n.f)); }});
  }
  return out;
}

// ---- comparisons (bool results: error 1 where the operands are closer than their errors) and where ----
struct Compare {
  const char* name;
  Tensor (Tensor::*fn)(const Tensor&) const;
  bool (*f)(double, double);
};

std::vector<OpDef> compare_defs() {
  static const std::vector<Compare> cmps = {
      {"lt", &Tensor::lt, [](double a, double b) { return a < b; }},
      {"le", &Tensor::le, [](double a, double b) { return a <= b; }},
      {"gt", &Tensor::gt, [](double a, double b) { return a > b; }},
      {"ge", &Tensor::ge, [](double a, double b) { return a >= b; }},
      {"eq", &Tensor::eq, [](double a, double b) { return a == b; }},
      {"ne", &Tensor::ne, [](double a, double b) { return a != b; }},
  };
  std::vector<OpDef> out;
  for (const Compare& c : cmps) {
    out.push_back(OpDef{
        c.name, 1,
        [](Gen& g, Node& n) {
          DType d = g.chance(0.8) ? dtypes::float32 : dtypes::int32;
          int x = g.pick(d);
          if (x < 0) return false;
          int y = partner(g, x, d);
          n.in = {x, y}, n.dtype = dtypes::bool_, n.shape = *broadcast(g.node(x).shape, g.node(y).shape);
          return true;
        },
        [c](const std::vector<Tensor>& in, const Node&) { return (in[0].*c.fn)(in[1]); },
        [c](const std::vector<const Val*>& in, const Node& n) {
          return ewise(in, n.shape, [c](const std::vector<double>& v, const std::vector<double>& e) {
            bool close = e[0] + e[1] > 0 && std::fabs(v[0] - v[1]) <= e[0] + e[1];
            return std::pair{c.f(v[0], v[1]) ? 1.0 : 0.0, close ? 1.0 : 0.0};
          });
        },
        [c](const std::vector<std::string>& in, const Node&) { return in[0] + "." + c.name + "(" + in[1] + ")"; }});
  }
  out.push_back(OpDef{"where", 2,
                      [](Gen& g, Node& n) {
                        int c = g.pick(dtypes::bool_);
                        if (c < 0) return false;
                        int a = partner(g, c, dtypes::float32);
                        auto s = broadcast(g.node(c).shape, g.node(a).shape);
                        int b = g.pick(dtypes::float32, [&](const Node& m) { return broadcast(*s, m.shape) == *s; });
                        if (b < 0) b = g.leaf(*s, dtypes::float32);
                        n.in = {c, a, b}, n.shape = *s;
                        return true;
                      },
                      [](const std::vector<Tensor>& in, const Node&) { return Tensor::where(in[0], in[1], in[2]); },
                      [](const std::vector<const Val*>& in, const Node& n) {
                        return ewise(in, n.shape, [](const std::vector<double>& v, const std::vector<double>& e) {
                          if (e[0] > 0)
                            return std::pair{v[0] != 0 ? v[1] : v[2], std::max(e[1], e[2]) + std::fabs(v[1] - v[2])};
                          return v[0] != 0 ? std::pair{v[1], e[1]} : std::pair{v[2], e[2]};
                        });
                      },
                      [](const std::vector<std::string>& in, const Node&) {
                        return "Tensor::where(" + in[0] + ", " + in[1] + ", " + in[2] + ")";
                      }});
  return out;
}

// ---- casts ----
std::vector<OpDef> cast_defs() {
  std::vector<OpDef> out;
  // float32 -> half or bfloat16 -> float32: one rounding to 11 or 8 bits (half overflows past 65504)
  struct Narrow {
    const char* name;
    DType d;
    const char* spelling;
    double u, max;
  };
  for (Narrow nw : {Narrow{"roundtrip_f16", dtypes::float16, "tg::dtypes::float16", 0x1p-11, 65504},
                    Narrow{"roundtrip_bf16", dtypes::bfloat16, "tg::dtypes::bfloat16", 0x1p-8, 3e38}}) {
    out.push_back(
        OpDef{nw.name, 1,
              [](Gen& g, Node& n) {
                int x = g.pick(dtypes::float32);
                if (x < 0) return false;
                n.in = {x}, n.shape = g.node(x).shape;
                return true;
              },
              [nw](const std::vector<Tensor>& in, const Node&) { return in[0].cast(nw.d).cast(dtypes::float32); },
              [nw](const std::vector<const Val*>& in, const Node& n) {
                return ewise(in, n.shape, [nw](const std::vector<double>& v, const std::vector<double>& e) {
                  double err =
                      std::fabs(v[0]) + e[0] > nw.max * 0.99 ? kInf : e[0] + nw.u * (std::fabs(v[0]) + e[0]) + 0x1p-24;
                  return std::pair{v[0], err};
                });
              },
              [nw](const std::vector<std::string>& in, const Node&) {
                return in[0] + ".cast(" + nw.spelling + ").cast(tg::dtypes::float32)";
              }});
  }
  out.push_back(OpDef{
      "to_int32", 1,
      [](Gen& g, Node& n) {
        int x = g.pick(dtypes::float32);
        if (x < 0) return false;
        n.in = {x}, n.shape = g.node(x).shape, n.dtype = dtypes::int32;
        return true;
      },
      [](const std::vector<Tensor>& in, const Node&) { return in[0].cast(dtypes::int32); },
      [](const std::vector<const Val*>& in, const Node& n) {
        return ewise(in, n.shape, [](const std::vector<double>& v, const std::vector<double>& e) {
          double r = std::trunc(v[0]);
          bool unsure = std::fabs(v[0]) + e[0] >= 2147483520.0 || std::trunc(v[0] - e[0]) != std::trunc(v[0] + e[0]);
          return std::pair{r, unsure ? kInf : 0.0};
        });
      },
      [](const std::vector<std::string>& in, const Node&) { return in[0] + ".cast(tg::dtypes::int32)"; }});
  out.push_back(
      OpDef{"to_float32", 2,
            [](Gen& g, Node& n) {
              int x = g.pick(g.chance(0.5) ? dtypes::bool_ : dtypes::int32);
              if (x < 0) return false;
              n.in = {x}, n.shape = g.node(x).shape;
              return true;
            },
            [](const std::vector<Tensor>& in, const Node&) { return in[0].cast(dtypes::float32); },
            [](const std::vector<const Val*>& in, const Node& n) {
              return ewise(in, n.shape, [](const std::vector<double>& v, const std::vector<double>& e) {
                return std::pair{v[0], e[0] + (std::fabs(v[0]) >= 0x1p24 ? round_err(v[0]) : 0.0)};
              });
            },
            [](const std::vector<std::string>& in, const Node&) { return in[0] + ".cast(tg::dtypes::float32)"; }});
  return out;
}

}  // namespace

std::vector<OpDef> elementwise_ops() {
  std::vector<OpDef> out;
  for (auto* part : {&unary_defs, &binary_defs, &compare_defs, &cast_defs})
    for (auto& d : part()) out.push_back(std::move(d));
  return out;
}

}  // namespace tg::difftest
