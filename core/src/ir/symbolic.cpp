// Symbolic rules: fold constants, apply identities, and simplify index arithmetic using value bounds.
//   (i*6 + j) / 6  ->  i            when 0 <= j < 6
//   (i*6 + j) % 6  ->  j
//   x < 10         ->  true         when vmax(x) < 10
#include "ir/symbolic.hpp"

#include <cmath>
#include <numeric>
#include <unordered_set>

namespace tg::ir {

namespace {

bool is_int(const UOp& u) { return (u.dtype.is_int() || u.dtype.is_bool()) && u.dtype.count == 1; }

// Wraps an exact integer result into the value range of dtype (two's complement), as the device would.
int64_t wrap_to(DType d, int64_t v) {
  if (d.is_bool()) return v != 0;
  int bits = d.itemsize() * 8;
  if (bits == 64) return v;
  uint64_t mask = (1ull << bits) - 1, u = static_cast<uint64_t>(v) & mask;
  if (d.is_unsigned()) return static_cast<int64_t>(u);
  return static_cast<int64_t>(u & (1ull << (bits - 1)) ? u | ~mask : u);
}

double round_to(DType d, double v) {
  if (d.scalar == ScalarType::Float32) return static_cast<float>(v);
  if (d.scalar == ScalarType::Float16) return half_to_float(float_to_half(static_cast<float>(v)));
  if (d.scalar == ScalarType::BFloat16) return bfloat16_to_float(float_to_bfloat16(static_cast<float>(v)));
  return v;
}

// Folds an ALU node whose sources are all constants. Floats fold only ops that are exactly rounded
// (+ - * / sqrt in double then rounded to the type), so folding never changes a result.
UOpPtr fold_consts(const Match&, const UOpPtr& u) {
  if (u->dtype.count != 1) return nullptr;
  for (auto& s : u->src)
    if (s->op != Op::CONST || s->dtype.count != 1) return nullptr;
  if (u->op == Op::CAST || u->op == Op::BITCAST) {
    const UOpPtr& s = u->src[0];
    if (u->op == Op::BITCAST) return nullptr;
    if (u->dtype.is_float()) return const_float(u->dtype, round_to(u->dtype, s->const_value()));
    if (s->dtype.is_float()) return nullptr;  // float->int conversion is the device's business (range checks)
    return const_int(u->dtype, wrap_to(u->dtype, s->arg_int()));
  }
  if (u->src[0]->dtype.is_float()) {
    double a = u->src[0]->const_value(), b = u->src.size() > 1 ? u->src[1]->const_value() : 0;
    DType d = u->src[0]->dtype;
    switch (u->op) {
      case Op::ADD: return const_float(d, round_to(d, a + b));
      case Op::SUB: return const_float(d, round_to(d, a - b));
      case Op::MUL: return const_float(d, round_to(d, a * b));
      case Op::FDIV: return const_float(d, round_to(d, a / b));
      case Op::NEG: return const_float(d, -a);
      case Op::CMPLT: return const_int(dtypes::bool_, a < b);
      case Op::CMPNE: return const_int(dtypes::bool_, a != b);
      case Op::CMPEQ: return const_int(dtypes::bool_, a == b);
      default: return nullptr;
    }
  }
  // uint64 values live in int64 bits: order-dependent ops on them are the device's business
  if (u->src[0]->dtype.scalar == ScalarType::UInt64 &&
      (u->op == Op::IDIV || u->op == Op::MOD || u->op == Op::CMPLT || u->op == Op::MAX))
    return nullptr;
  auto v = eval_int(u);
  if (!v) return nullptr;
  return const_int(u->dtype, wrap_to(u->dtype, *v));
}

// An integer node whose bounds pin it to one value is that value.
UOpPtr fold_bounds(const Match&, const UOpPtr& u) {
  if (!is_int(*u) || u->op == Op::CONST || u->vmin() != u->vmax()) return nullptr;
  if (!is_alu(u->op) && u->op != Op::RANGE && u->op != Op::DEFINE_VAR) return nullptr;
  if (u->op == Op::DEFINE_VAR) return nullptr;  // a variable keeps its identity even when min == max
  if (u->op == Op::RANGE && u->src[0]->vmax() != 1) return nullptr;  // an empty loop is not the index 0
  return const_int(u->dtype, u->vmin());
}

// --- sums: x = c0 + sum(k_i * t_i) ------------------------------------------------------------------------------

struct Sum {
  std::vector<std::pair<UOpPtr, int64_t>> terms;  // first-appearance order keeps output deterministic
  int64_t constant = 0;
  void add(const UOpPtr& t, int64_t k) {
    for (auto& [n, c] : terms)
      if (n.get() == t.get()) {
        c += k;
        return;
      }
    terms.emplace_back(t, k);
  }
};

void flatten(const UOpPtr& u, int64_t k, Sum& s) {
  if (u->op == Op::ADD) {
    flatten(u->src[0], k, s), flatten(u->src[1], k, s);
    return;
  }
  if (u->op == Op::SUB) {
    flatten(u->src[0], k, s), flatten(u->src[1], -k, s);
    return;
  }
  if (u->op == Op::CONST) {
    s.constant += k * u->arg_int();
    return;
  }
  if (u->op == Op::MUL && u->src[1]->op == Op::CONST) {
    flatten(u->src[0], k * u->src[1]->arg_int(), s);
    return;
  }
  s.add(u, k);
}

UOpPtr build(DType d, const Sum& s) {
  UOpPtr out;
  for (auto& [t, k] : s.terms) {
    if (k == 0) continue;
    UOpPtr term = k == 1 ? t : alu(Op::MUL, t, const_int(d, k));
    out = out ? alu(Op::ADD, out, term) : term;
  }
  if (!out) return const_int(d, s.constant);
  return s.constant ? alu(Op::ADD, out, const_int(d, s.constant)) : out;
}

// Canonical sum: merge equal terms and constants. Only rewrites when it actually shrinks the expression.
UOpPtr fold_sum(const Match&, const UOpPtr& u) {
  if (!is_int(*u) || u->dtype.is_bool()) return nullptr;
  Sum s;
  flatten(u, 1, s);
  size_t nonzero = 0;
  for (auto& [t, k] : s.terms) nonzero += k != 0;
  size_t before = 0;  // number of leaf terms before
  std::function<void(const UOpPtr&)> count = [&](const UOpPtr& x) {
    if (x->op == Op::ADD || x->op == Op::SUB) {
      count(x->src[0]), count(x->src[1]);
      return;
    }
    ++before;
  };
  count(u);
  if (nonzero + (s.constant != 0) >= before) return nullptr;
  return build(u->dtype, s);
}

// (sum) / c and (sum) % c with c > 0 and every part non-negative.
UOpPtr fold_divmod(const Match& m, const UOpPtr& u) {
  const UOpPtr& x = m["x"];
  int64_t c = m["c"]->arg_int();
  if (!is_int(*u) || c <= 0) return nullptr;
  if (c == 1) return u->op == Op::IDIV ? x : const_int(u->dtype, 0);
  if (x->vmin() < 0) return nullptr;
  if (x->vmax() < c) return u->op == Op::IDIV ? const_int(u->dtype, 0) : x;
  Sum s;
  flatten(x, 1, s);
  for (auto& [t, k] : s.terms)
    if (k < 0 || t->vmin() < 0) return nullptr;
  if (s.constant < 0) return nullptr;
  // split off the terms that are multiples of c
  Sum quot, rest;
  rest.constant = s.constant % c, quot.constant = s.constant / c;
  for (auto& [t, k] : s.terms) {
    if (k / c) quot.add(t, k / c);
    if (k % c) rest.add(t, k % c);
  }
  UOpPtr r = build(x->dtype, rest);
  bool split = !quot.terms.empty() || quot.constant != 0;
  if (u->op == Op::MOD) {
    if (r->vmax() < c) return r;
    if (!split) {
      // gcd(k_i, c) shared by every term, the constant k = g*q + j: (g*y + k) % (g*c') = g * ((y + q) % c') + j
      // (a lane offset j below the stride g stays outside the mod: lanes of a vector stay consecutive)
      int64_t g = c;
      for (auto& [t, k] : rest.terms) g = std::gcd(g, k);
      if (g <= 1) return nullptr;
      Sum red;
      red.constant = rest.constant / g;
      for (auto& [t, k] : rest.terms) red.add(t, k / g);
      UOpPtr scaled =
          alu(Op::MUL, alu(Op::MOD, build(x->dtype, red), const_int(x->dtype, c / g)), const_int(x->dtype, g));
      return rest.constant % g ? alu(Op::ADD, scaled, const_int(x->dtype, rest.constant % g)) : scaled;
    }
    return alu(Op::MOD, r, const_int(x->dtype, c));
  }
  UOpPtr q = build(x->dtype, quot);
  if (r->vmax() < c) return q;
  if (split) return alu(Op::ADD, q, alu(Op::IDIV, r, const_int(x->dtype, c)));
  int64_t g = c;
  for (auto& [t, k] : rest.terms) g = std::gcd(g, k);
  if (g <= 1) return nullptr;  // the constant may not share the gcd: floor((g*y + k)/(g*c')) = (y + k/g) / c'
  Sum red;
  red.constant = rest.constant / g;
  for (auto& [t, k] : rest.terms) red.add(t, k / g);
  return alu(Op::IDIV, build(x->dtype, red), const_int(x->dtype, c / g));
}

// (q*y + r) / y -> q and (q*y + r) % y -> r for a non-constant y, when 0 <= r < y is known because r is the
// index of a loop over y (a symbolic dim y is indexed by a RANGE that ends at y) or r is 0.
UOpPtr fold_divmod_var(const Match&, const UOpPtr& u) {
  const UOpPtr &x = u->src[0], &y = u->src[1];
  if (!is_int(*u) || y->op == Op::CONST || x->vmin() < 0) return nullptr;
  Sum s;
  flatten(x, 1, s);
  Sum quot;
  UOpPtr r;
  for (auto& [t, k] : s.terms) {
    if (k == 0) continue;
    if (t.get() == y.get())
      quot.constant += k;
    else if (t->op == Op::MUL && t->src[1].get() == y.get())
      quot.add(t->src[0], k);
    else if (t->op == Op::MUL && t->src[0].get() == y.get())
      quot.add(t->src[1], k);
    else if (!r && k == 1 && t->op == Op::RANGE && t->src[0].get() == y.get())
      r = t;
    else
      return nullptr;
  }
  if (s.constant != 0) return nullptr;
  if (u->op == Op::MOD) return r ? r : const_int(u->dtype, 0);
  return build(u->dtype, quot);
}

// (x / a) / b -> x / (a*b) for x >= 0, a, b > 0
UOpPtr fold_nested_div(const Match& m, const UOpPtr& u) {
  const UOpPtr& x = m["x"];
  int64_t a = m["a"]->arg_int(), b = m["b"]->arg_int();
  if (x->vmin() < 0 || a <= 0 || b <= 0) return nullptr;
  return alu(Op::IDIV, x, const_int(x->dtype, a * b));
}

// (x % (a*b)) / a... and (x % m) % n with n | m -> x % n (x >= 0)
UOpPtr fold_nested_mod(const Match& m, const UOpPtr& u) {
  const UOpPtr& x = m["x"];
  int64_t a = m["a"]->arg_int(), b = m["b"]->arg_int();
  if (x->vmin() < 0 || a <= 0 || b <= 0 || a % b != 0) return nullptr;
  return alu(Op::MOD, x, const_int(x->dtype, b));
}

// (x + c) < d -> x < d - c ; (x * c) < d -> x < ceil(d / c) for c > 0
UOpPtr fold_cmp_const(const Match& m, const UOpPtr& u) {
  const UOpPtr& lhs = u->src[0];
  if (!is_int(*lhs) || lhs->dtype.is_bool()) return nullptr;
  int64_t d = m["d"]->arg_int();
  if (lhs->op == Op::ADD && lhs->src[1]->op == Op::CONST)
    return alu(Op::CMPLT, lhs->src[0], const_int(lhs->dtype, d - lhs->src[1]->arg_int()));
  if (lhs->op == Op::MUL && lhs->src[1]->op == Op::CONST && lhs->src[1]->arg_int() > 0) {
    int64_t c = lhs->src[1]->arg_int();
    int64_t q = d >= 0 ? (d + c - 1) / c : -((-d) / c);
    return alu(Op::CMPLT, lhs->src[0], const_int(lhs->dtype, q));
  }
  // g*y + k < d -> y < ceil((d - k) / g) with g the gcd of a sum's coefficients: the lanes l < g of a vector then
  // share one bound (24p + 8v + l < 1024 is 3p + v < 128 for every l < 8), so a padded load stays one vector
  if (lhs->op == Op::ADD || lhs->op == Op::SUB) {
    Sum s;
    flatten(lhs, 1, s);
    int64_t g = 0;
    for (auto& [t, k] : s.terms) g = std::gcd(g, k);
    if (g <= 1) return nullptr;
    Sum red;
    for (auto& [t, k] : s.terms) red.add(t, k / g);
    const int64_t num = d - s.constant, q = num >= 0 ? (num + g - 1) / g : -((-num) / g);
    return alu(Op::CMPLT, build(lhs->dtype, red), const_int(lhs->dtype, q));
  }
  return nullptr;
}

// A widening integer cast moves inside a sum, difference or product that cannot wrap in its own dtype (its
// bounds are not the whole dtype: compute_bounds gives that only when the exact result fits), so CAST(a + 1) -
// CAST(a) folds to 1: what telling consecutive indices apart in the wide dtype needs.
UOpPtr push_widening_cast(const Match&, const UOpPtr& u) {
  const UOpPtr& x = u->src[0];
  if (!is_int(*u) || !is_int(*x) || x->dtype.is_bool() || u->dtype.is_bool() ||
      u->dtype.itemsize() <= x->dtype.itemsize() || (x->op != Op::ADD && x->op != Op::SUB && x->op != Op::MUL) ||
      (!x->dtype.is_unsigned() && u->dtype.is_unsigned()))
    return nullptr;
  const int bits = 8 * x->dtype.itemsize();
  const int64_t lo = x->dtype.is_unsigned() ? 0 : -(int64_t{1} << (bits - 1));
  const int64_t hi = x->dtype.is_unsigned() ? (int64_t{1} << bits) - 1 : (int64_t{1} << (bits - 1)) - 1;
  if (x->vmin() == lo && x->vmax() == hi) return nullptr;  // it may have wrapped
  return alu(x->op, cast(x->src[0], u->dtype), cast(x->src[1], u->dtype));
}

// Moves a constant operand of a commutative op to the right: c + x -> x + c.
UOpPtr const_right(const Match&, const UOpPtr& u) {
  if (u->src[0]->op != Op::CONST || u->src[1]->op == Op::CONST) return nullptr;
  return u->replace_src({u->src[1], u->src[0]});
}

}  // namespace

const PatternMatcher& pm_symbolic() {
  using namespace pat;
  auto intp = [](const UOp& u) { return is_int(u); };
  static const PatternMatcher pm(
      "symbolic",
      {
          {ops({Op::NEG, Op::ADD, Op::SUB, Op::MUL, Op::IDIV, Op::MOD, Op::FDIV, Op::MAX, Op::CMPLT, Op::CMPNE,
                Op::CMPEQ, Op::AND, Op::OR, Op::XOR, Op::SHL, Op::SHR, Op::CAST}),
           fold_consts},  // c1 op c2 -> c3
          {ops({Op::ADD, Op::SUB, Op::MUL, Op::IDIV, Op::MOD, Op::MAX, Op::CMPLT, Op::CMPNE, Op::CMPEQ, Op::AND, Op::OR,
                Op::WHERE, Op::RANGE}),
           fold_bounds},  // vmin == vmax -> const
          {ops({Op::ADD, Op::MUL, Op::AND, Op::OR, Op::MAX, Op::CMPNE, Op::CMPEQ}), const_right},  // c + x -> x + c
          {op(Op::CAST, {ops({Op::ADD, Op::SUB, Op::MUL})}), push_widening_cast},  // (T)(a+b) -> (T)a+(T)b
          {(any("x") + cint(0)).where(intp), [](const Match& m, const UOpPtr&) { return m["x"]; }},  // x + 0 -> x
          {(any("x") * cint(1)).where(intp), [](const Match& m, const UOpPtr&) { return m["x"]; }},  // x * 1 -> x
          {(any("x") * cint(0)).where(intp),
           [](const Match&, const UOpPtr& u) { return const_int(u->dtype, 0); }},  // x*0 -> 0
          {op(Op::SUB, {any("x"), cint(0)}).where(intp),
           [](const Match& m, const UOpPtr&) { return m["x"]; }},                     // x-0 -> x
          {op(Op::MUL, {op(Op::MUL, {any("x"), cvar("a")}), cvar("b")}).where(intp),  // (x*a)*b -> x*(a*b)
           [](const Match& m, const UOpPtr& u) {
             return alu(Op::MUL, m["x"], const_int(u->dtype, m["a"]->arg_int() * m["b"]->arg_int()));
           }},
          {ops({Op::ADD, Op::SUB}).where(intp), fold_sum},                 // merge terms
          {op(Op::IDIV, {any("x"), cvar("c")}).where(intp), fold_divmod},  // (a*c+r)/c -> a
          {op(Op::MOD, {any("x"), cvar("c")}).where(intp), fold_divmod},   // (a*c+r)%c -> r
          {ops({Op::IDIV, Op::MOD}).where([](const UOp& u) { return is_int(u) && u.src[1]->op != Op::CONST; }),
           fold_divmod_var},  // (q*y+r)/y -> q
          {op(Op::IDIV, {op(Op::IDIV, {any("x"), cvar("a")}), cvar("b")}).where(intp),
           fold_nested_div},  // x/a/b -> x/(ab)
          {op(Op::MOD, {op(Op::MOD, {any("x"), cvar("a")}), cvar("b")}).where(intp),
           fold_nested_mod},  // x%(kb)%b -> x%b
          {op(Op::CMPLT, {any("x"), cvar("d")}).where([](const UOp& u) { return is_int(*u.src[0]); }), fold_cmp_const},
          {op(Op::AND, {any("x"), cint(1)}).where([](const UOp& u) { return u.dtype.is_bool(); }),  // x & true -> x
           [](const Match& m, const UOpPtr&) { return m["x"]; }},
          {op(Op::AND, {any("x"), any("x")}), [](const Match& m, const UOpPtr&) { return m["x"]; }},  // x & x -> x
          {op(Op::WHERE, {cvar("c"), any("a"), any("b")}),                                            // const cond
           [](const Match& m, const UOpPtr&) { return m["c"]->const_value() != 0 ? m["a"] : m["b"]; }},
          {op(Op::WHERE, {any("c"), any("a"), any("a")}),
           [](const Match& m, const UOpPtr&) { return m["a"]; }},                                    // c ? a : a -> a
          {op(Op::WHERE, {any("c"), op(Op::LOAD, {any("b"), any("i"), any("c")}, "l"), cvar("z")}),  // c ? load<c> : 0
           [](const Match& m, const UOpPtr&) {
             return m["z"]->const_value() == 0 && !std::signbit(m["z"]->const_value()) ? m["l"] : nullptr;
           }},  // -> load<c>
      });
  return pm;
}

UOpPtr simplify(const UOpPtr& u) { return graph_rewrite(u, pm_symbolic(), "symbolic"); }

UOpPtr simplify_substituted(const UOpPtr& root, const std::vector<std::pair<const UOp*, UOpPtr>>& map) {
  const UOpPtr out = substitute(root, map);
  if (out == root) return root;
  std::unordered_set<const UOp*> kept;
  for (const UOp* n : toposort(std::vector<UOpPtr>{root})) kept.insert(n);
  const PatternMatcher made(
      "symbolic_on_made",
      {{pat::any("x").where([&kept](const UOp& u) { return !kept.count(&u); }),
        [](const Match&, const UOpPtr& u) { return pm_symbolic().rewrite(u); }, "symbolic_where_substituted"}});
  return graph_rewrite(out, made, "symbolic");
}

}  // namespace tg::ir
