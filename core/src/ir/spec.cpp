// The kernel spec as a rule set, and the walk that applies a spec to a graph.
#include "ir/spec.hpp"

#include <cstdlib>
#include <cstring>

#include "tg/error.hpp"

namespace tg::ir {

namespace {

// Verdicts are childless SINKs with a string arg: no graph contains one, so a verdict never equals the node it
// judges (the driver would read that as "no match").
UOpPtr verdict(const std::string& why) { return UOp::make(Op::SINK, dtypes::bool_, {}, why); }

bool is_int_scalar(const UOp& u) { return u.dtype.is_int() && u.dtype.count == 1; }
bool is_bool(const UOp& u) { return u.dtype.is_bool(); }
bool is_pointer_op(Op op) {
  return op == Op::PARAM || op == Op::DEFINE_REG || op == Op::DEFINE_LOCAL || op == Op::AFTER;
}
bool is_statement(Op op) {
  return op == Op::STORE || op == Op::END || op == Op::BARRIER || op == Op::CUSTOM || op == Op::AFTER ||
         op == Op::TILE_MMA;
}
std::string nth(size_t i) { return "source " + std::to_string(i); }

UOpPtr check_sink(const Match&, const UOpPtr& u) {
  if (u->src.empty()) return spec_refuse("a SINK with no statements");
  for (size_t i = 0; i < u->src.size(); ++i)
    if (!is_statement(u->src[i]->op))
      return spec_refuse("SINK " + nth(i) + " is a " + op_name(u->src[i]->op) + ", not a statement");
  return spec_ok();
}

// LOAD(ptr, index[, gate]) and STORE(ptr, index, value[, gate])
UOpPtr check_memory(const Match&, const UOpPtr& u) {
  const bool store = u->op == Op::STORE;
  const size_t lo = store ? 3 : 2;
  if (u->src.size() < lo || u->src.size() > lo + 1)
    return spec_refuse(std::string(op_name(u->op)) + " with " + std::to_string(u->src.size()) + " sources");
  if (!is_pointer_op(u->src[0]->op)) return spec_refuse(std::string("the buffer is a ") + op_name(u->src[0]->op));
  if (!is_int_scalar(*u->src[1])) return spec_refuse("the index is not an int scalar");
  if (u->src.size() == lo + 1 && !is_bool(*u->src[lo])) return spec_refuse("the gate is not bool");
  return spec_ok();
}

UOpPtr check_range(const Match&, const UOpPtr& u) {
  if (u->src.size() != 1 || !is_int_scalar(*u) || !is_int_scalar(*u->src[0]))
    return spec_refuse("a RANGE runs over an int scalar to one int end");
  if (!std::holds_alternative<RangeInfo>(u->arg)) return spec_refuse("a RANGE without its RangeInfo");
  return spec_ok();
}

UOpPtr check_reduce(const Match&, const UOpPtr& u) {
  if (u->src.empty() || u->src[0]->dtype != u->dtype) return spec_refuse("a REDUCE has its value's dtype");
  for (size_t i = 1; i < u->src.size(); ++i)
    if (u->src[i]->op != Op::RANGE) return spec_refuse("REDUCE " + nth(i) + " is not a RANGE");
  return spec_ok();
}

UOpPtr check_leaf(const Match&, const UOpPtr& u) {
  if (!u->src.empty()) return spec_refuse(std::string("a ") + op_name(u->op) + " has no sources");
  if (u->op == Op::PARAM && (!std::holds_alternative<int64_t>(u->arg) || u->arg_int() < 0))
    return spec_refuse("a PARAM's arg is its index");
  if (u->op == Op::DEFINE_VAR && (!std::holds_alternative<VarInfo>(u->arg) || !is_int_scalar(*u)))
    return spec_refuse("a DEFINE_VAR is an int with its VarInfo");
  if (u->op == Op::CONST && !std::holds_alternative<int64_t>(u->arg) && !std::holds_alternative<double>(u->arg))
    return spec_refuse("a CONST holds an int or a float");
  return spec_ok();
}

size_t alu_arity(Op op) {
  if (is_unary(op)) return 1;
  if (is_binary(op)) return 2;
  if (op == Op::LUT16) return 5;
  return 3;
}

// Operands agree: a comparison yields bool from two equal dtypes, WHERE picks between two of its own dtype,
// arithmetic keeps its operands' dtype; casts convert (and are not checked further).
UOpPtr check_alu(const Match&, const UOpPtr& u) {
  if (u->src.size() != alu_arity(u->op)) return spec_refuse(std::to_string(u->src.size()) + " operands");
  if (u->op == Op::CAST || u->op == Op::BITCAST) return spec_ok();
  if (is_comparison(u->op)) {
    if (!is_bool(*u)) return spec_refuse("a comparison is bool");
    if (u->src[0]->dtype != u->src[1]->dtype) return spec_refuse("compares different dtypes");
    return spec_ok();
  }
  const size_t first = u->op == Op::WHERE ? 1 : 0;
  if (u->op == Op::WHERE && !is_bool(*u->src[0])) return spec_refuse("the condition is not bool");
  for (size_t i = first; i < u->src.size(); ++i)
    if (u->src[i]->dtype != u->dtype) return spec_refuse(nth(i) + " has another dtype");
  return spec_ok();
}

}  // namespace

UOpPtr spec_ok() { return verdict(""); }
UOpPtr spec_refuse(const std::string& why) { return verdict(why.empty() ? "refused" : why); }

const PatternMatcher& pm_spec_kernel() {
  using namespace pat;
  static const std::vector<Op> alu_ops = [] {
    std::vector<Op> v;
    for (int o = 0; o < static_cast<int>(Op::COUNT_); ++o)
      if (is_alu(static_cast<Op>(o))) v.push_back(static_cast<Op>(o));
    return v;
  }();
  static const PatternMatcher pm(
      "spec_kernel",
      {
          {ops({Op::SINK}), check_sink, "sink_of_statements"},                // SINK(STORE...)
          {ops({Op::LOAD, Op::STORE}), check_memory, "memory_access"},        // LOAD(ptr, i[, g]) STORE(ptr, i, v[, g])
          {ops({Op::RANGE}), check_range, "range_int_end"},                   // RANGE(int end): int
          {ops({Op::REDUCE}), check_reduce, "reduce_over_ranges"},            // REDUCE(v, RANGE...)
          {ops({Op::PARAM, Op::CONST, Op::DEFINE_VAR}), check_leaf, "leaf"},  // leaves
          {ops(alu_ops), check_alu, "alu_dtypes"},                            // a + b: same dtypes
          {ops({Op::BUFFER, Op::COPY, Op::CONTIGUOUS, Op::MULTI, Op::COLLECTIVE, Op::RESHAPE, Op::PERMUTE, Op::EXPAND,
                Op::PAD, Op::SHRINK, Op::FLIP, Op::SHRINK_VAR, Op::PAD_VAR, Op::REDUCE_AXIS}),
           [](const Match&, const UOpPtr& u) {
             return spec_refuse(std::string("tensor-graph op ") + op_name(u->op) + " in a kernel");
           },
           "no_tensor_ops"},
          // statements and values of hand-written kernels, vectors, bound variables: allowed as they come
          {ops({Op::VECTORIZE, Op::GEP, Op::DEFINE_REG, Op::DEFINE_LOCAL, Op::END, Op::AFTER, Op::BARRIER, Op::CUSTOM,
                Op::CUSTOMI, Op::TILE_MMA, Op::WMMA, Op::BIND}),
           [](const Match&, const UOpPtr&) { return spec_ok(); }, "kernel_statements"},
      });
  return pm;
}

std::optional<std::string> check_spec(const UOpPtr& root, const PatternMatcher& spec) {
  const std::string set = spec.set_name().empty() ? "spec" : spec.set_name();
  for (const UOp* u : toposort(std::span(&root, 1))) {
    auto [r, rule] = spec.rewrite_with_rule(u->ptr());
    if (!r) return "spec '" + set + "' has no rule for " + u->str(2);
    if (r->op != Op::SINK || !r->src.empty() || !std::holds_alternative<std::string>(r->arg))
      return "spec '" + set + "': rule '" + spec.rule_name(rule) + "' gave no verdict on " + u->str(2);
    if (!r->arg_str().empty())
      return "spec '" + set + "': rule '" + spec.rule_name(rule) + "' refuses " + u->str(2) + ": " + r->arg_str();
  }
  return std::nullopt;
}

void verify(const UOpPtr& root, const PatternMatcher& spec, const std::string& kernel_name) {
  if (auto why = check_spec(root, spec)) throw Error("tg: kernel " + kernel_name + " breaks the IR " + *why);
}

}  // namespace tg::ir
