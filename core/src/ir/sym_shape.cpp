// Symbolic dims: values, bounds, printing, arithmetic and the equality proofs that shape checks rely on.
#include "ir/sym_shape.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <sstream>

#include "ir/pattern_matcher.hpp"
#include "ir/symbolic.hpp"

namespace tg::ir {

UOpPtr dim_const(int64_t v) { return const_int(dtypes::int64, v); }
UOpPtr dim_of(const UOpPtr& bind) { return cast(bind, dtypes::int64); }
bool is_static(const UOpPtr& d) { return d->op == Op::CONST; }
bool is_static(const Dims& ds) {
  return std::all_of(ds.begin(), ds.end(), [](const UOpPtr& d) { return is_static(d); });
}
bool is_one(const UOpPtr& d) { return is_static(d) && d->arg_int() == 1; }

int64_t dim_value(const UOpPtr& d) {
  auto v = eval_int(d);
  assert(v && "a dim is closed under its bindings");
  return *v;
}

std::string dim_str(const UOpPtr& d) {
  auto paren = [](const UOpPtr& x) {
    std::string s = dim_str(x);
    return x->op == Op::ADD || x->op == Op::SUB ? "(" + s + ")" : s;
  };
  switch (d->op) {
    case Op::CONST: return std::to_string(d->arg_int());
    case Op::BIND: return d->src[0]->var().name;
    case Op::DEFINE_VAR: return d->var().name;
    case Op::CAST: return dim_str(d->src[0]);
    case Op::ADD:
      if (is_static(d->src[1]) && d->src[1]->arg_int() < 0)
        return dim_str(d->src[0]) + "-" + std::to_string(-d->src[1]->arg_int());
      return dim_str(d->src[0]) + "+" + dim_str(d->src[1]);
    case Op::SUB: return dim_str(d->src[0]) + "-" + paren(d->src[1]);
    case Op::MUL: return paren(d->src[0]) + "*" + paren(d->src[1]);
    case Op::IDIV: return paren(d->src[0]) + "/" + paren(d->src[1]);
    case Op::MOD: return paren(d->src[0]) + "%" + paren(d->src[1]);
    case Op::MAX: return "max(" + dim_str(d->src[0]) + ", " + dim_str(d->src[1]) + ")";
    default: return op_name(d->op);
  }
}

std::string dims_str(const Dims& ds) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < ds.size(); ++i) os << (i ? ", " : "") << dim_str(ds[i]);
  os << (ds.size() == 1 ? ",)" : ")");
  return os.str();
}

UOpPtr dim_add(const UOpPtr& a, const UOpPtr& b) { return simplify(a + b); }
UOpPtr dim_sub(const UOpPtr& a, const UOpPtr& b) { return simplify(a + b * -1); }
UOpPtr dim_mul(const UOpPtr& a, const UOpPtr& b) { return simplify(a * b); }
UOpPtr dims_prod(const Dims& ds) {
  UOpPtr p = dim_const(1);
  for (const auto& d : ds) p = p * d;
  return simplify(p);
}

namespace {

// d = coeff * prod(factors): constants multiplied out, and sums with a common divisor written as g * (sum / g),
// so products that differ only in how they were grouped compare equal.
struct ProductForm {
  int64_t coeff = 1;
  std::vector<UOpPtr> factors;  // sorted by address: compared as a multiset, never printed or hashed
};

// x = constant + sum(k_i * t_i); false when x is not such a sum
bool linear_terms(const UOpPtr& x, int64_t k, std::vector<std::pair<UOpPtr, int64_t>>& terms, int64_t& constant) {
  if (x->op == Op::ADD)
    return linear_terms(x->src[0], k, terms, constant) && linear_terms(x->src[1], k, terms, constant);
  if (x->op == Op::SUB)
    return linear_terms(x->src[0], k, terms, constant) && linear_terms(x->src[1], -k, terms, constant);
  if (x->op == Op::CONST) return constant += k * x->arg_int(), true;
  if (x->op == Op::MUL && is_static(x->src[1]))
    return linear_terms(x->src[0], k * x->src[1]->arg_int(), terms, constant);
  terms.emplace_back(x, k);
  return true;
}

void product_form(const UOpPtr& d, ProductForm& pf) {
  if (d->op == Op::CONST) {
    pf.coeff *= d->arg_int();
    return;
  }
  if (d->op == Op::MUL) {
    product_form(d->src[0], pf);
    product_form(d->src[1], pf);
    return;
  }
  if (d->op == Op::ADD || d->op == Op::SUB) {
    std::vector<std::pair<UOpPtr, int64_t>> terms;
    int64_t constant = 0;
    linear_terms(d, 1, terms, constant);
    int64_t g = std::abs(constant);
    for (auto& [t, k] : terms) g = std::gcd(g, k);
    if (g > 1) {
      UOpPtr rest = dim_const(constant / g);
      for (auto& [t, k] : terms) rest = rest + t * (k / g);
      pf.coeff *= g;
      pf.factors.push_back(simplify(rest));
      return;
    }
  }
  pf.factors.push_back(d);
}

ProductForm product_form(const UOpPtr& d) {
  ProductForm pf;
  product_form(d, pf);
  std::sort(pf.factors.begin(), pf.factors.end());
  return pf;
}

}  // namespace

bool same_dim(const UOpPtr& a, const UOpPtr& b) {
  if (a.get() == b.get()) return true;
  if (is_static(a) && is_static(b)) return a->arg_int() == b->arg_int();
  ProductForm pa = product_form(a), pb = product_form(b);
  return pa.coeff == pb.coeff && (pa.coeff == 0 || pa.factors == pb.factors);
}

bool same_dims(const Dims& a, const Dims& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_dim(a[i], b[i])) return false;
  return true;
}

UOpPtr dim_div(const UOpPtr& total, const UOpPtr& part) {
  ProductForm t = product_form(total), p = product_form(part);
  if (p.coeff == 0 || t.coeff % p.coeff != 0) return nullptr;
  std::vector<UOpPtr> rest;
  std::set_difference(t.factors.begin(), t.factors.end(), p.factors.begin(), p.factors.end(), std::back_inserter(rest));
  if (rest.size() + p.factors.size() != t.factors.size()) return nullptr;  // part has a factor total lacks
  UOpPtr q = dim_const(t.coeff / p.coeff);
  for (const auto& f : rest) q = q * f;
  return simplify(q);
}

Dims dims_of(const UOp& node) {
  if (!node.sym_shape.empty()) return node.sym_shape;
  Dims ds;
  for (int64_t d : node.shape) ds.push_back(dim_const(d));
  return ds;
}

std::pair<Shape, Dims> shape_args(const Dims& ds) {
  Shape s;
  for (const auto& d : ds) s.push_back(dim_value(d));
  return {std::move(s), is_static(ds) ? Dims{} : ds};
}

UOpPtr map_binds(const UOpPtr& d, const std::function<UOpPtr(const UOpPtr&)>& f) {
  if (is_static(d)) return d;
  std::vector<std::pair<const UOp*, UOpPtr>> map;
  for (const UOp* u : toposort(std::vector<UOpPtr>{d}))
    if (u->op == Op::BIND) map.emplace_back(u, f(u->ptr()));
  return simplify(substitute(d, map));
}

}  // namespace tg::ir
