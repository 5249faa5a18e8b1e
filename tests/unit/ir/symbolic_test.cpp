// Property test of the symbolic simplifier: random integer expressions evaluated at random points before and
// after simplification must agree (the evaluator here is independent of tg's own).
#include "ir/symbolic.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace tg::ir {
namespace {

// Reference evaluator with C semantics on int64 (truncating division); nullopt for division by zero.
std::optional<int64_t> ref_eval(const UOpPtr& u, const std::map<std::string, int64_t>& env) {
  if (u->op == Op::CONST) return u->arg_int();
  if (u->op == Op::DEFINE_VAR) return env.at(u->var().name);
  std::vector<int64_t> s;
  for (const auto& x : u->src) {
    auto v = ref_eval(x, env);
    if (!v) return std::nullopt;
    s.push_back(*v);
  }
  switch (u->op) {
    case Op::ADD: return s[0] + s[1];
    case Op::SUB: return s[0] - s[1];
    case Op::MUL: return s[0] * s[1];
    case Op::IDIV: return s[1] ? std::optional(s[0] / s[1]) : std::nullopt;
    case Op::MOD: return s[1] ? std::optional(s[0] % s[1]) : std::nullopt;
    case Op::MAX: return std::max(s[0], s[1]);
    case Op::CMPLT: return int64_t{s[0] < s[1]};
    case Op::CMPNE: return int64_t{s[0] != s[1]};
    case Op::CMPEQ: return int64_t{s[0] == s[1]};
    case Op::AND: return s[0] & s[1];
    case Op::WHERE: return s[0] ? s[1] : s[2];
    case Op::CAST: return s[0];
    default: ADD_FAILURE() << "unexpected op " << op_name(u->op); return std::nullopt;
  }
}

struct Gen {
  std::mt19937_64 rng;
  std::vector<UOpPtr> vars;
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

  UOpPtr int_expr(int depth) {
    if (depth == 0 || pick(0, 4) == 0) {
      if (pick(0, 3) == 0) return const_int(dtypes::int64, pick(-20, 20));
      return vars[pick(0, static_cast<int64_t>(vars.size()) - 1)];
    }
    switch (pick(0, 7)) {
      case 0: return alu(Op::ADD, int_expr(depth - 1), int_expr(depth - 1));
      case 1: return alu(Op::MUL, int_expr(depth - 1), const_int(dtypes::int64, pick(-4, 8)));
      case 2: return alu(Op::IDIV, int_expr(depth - 1), const_int(dtypes::int64, pick(1, 12)));
      case 3: return alu(Op::MOD, int_expr(depth - 1), const_int(dtypes::int64, pick(1, 12)));
      case 4: return alu(Op::SUB, int_expr(depth - 1), int_expr(depth - 1));
      case 5: return alu(Op::MAX, int_expr(depth - 1), int_expr(depth - 1));
      case 6: return alu(Op::WHERE, bool_expr(depth - 1), int_expr(depth - 1), int_expr(depth - 1));
      default:
        return alu(Op::ADD, alu(Op::MUL, int_expr(depth - 1), const_int(dtypes::int64, pick(1, 8))),
                   int_expr(depth - 1));
    }
  }
  UOpPtr bool_expr(int depth) {
    switch (pick(0, 2)) {
      case 0: return alu(Op::CMPLT, int_expr(depth), const_int(dtypes::int64, pick(-10, 30)));
      case 1: return alu(Op::CMPNE, int_expr(depth), int_expr(depth));
      default:
        return alu(Op::AND, alu(Op::CMPLT, int_expr(depth), int_expr(depth)),
                   alu(Op::CMPLT, const_int(dtypes::int64, pick(-5, 5)), int_expr(depth)));
    }
  }
};

TEST(Symbolic, RandomExpressionsAgreeAfterSimplify) {
  uint64_t seed = std::random_device{}();
  std::cout << "symbolic property seed=" << seed << "\n";
  SCOPED_TRACE("seed=" + std::to_string(seed));
  Gen g{std::mt19937_64(seed), {}};
  // non-negative index-like variables and signed ones, so both guarded and unguarded folds are exercised
  g.vars = {UOp::make(Op::DEFINE_VAR, dtypes::int64, {}, VarInfo{"i", 0, 15}),
            UOp::make(Op::DEFINE_VAR, dtypes::int64, {}, VarInfo{"j", 0, 5}),
            UOp::make(Op::DEFINE_VAR, dtypes::int64, {}, VarInfo{"k", -7, 9})};
  int checked = 0;
  for (int n = 0; n < 3000; ++n) {
    UOpPtr e = g.int_expr(4);
    UOpPtr s = simplify(e);
    for (int p = 0; p < 8; ++p) {
      std::map<std::string, int64_t> env{{"i", g.pick(0, 15)}, {"j", g.pick(0, 5)}, {"k", g.pick(-7, 9)}};
      auto before = ref_eval(e, env);
      if (!before) continue;
      auto after = ref_eval(s, env);
      ASSERT_TRUE(after.has_value()) << "simplified form divides by zero: " << e->str(20) << " -> " << s->str(20);
      ASSERT_EQ(*before, *after) << "i=" << env["i"] << " j=" << env["j"] << " k=" << env["k"]
                                 << "\n  before: " << e->str(20) << "\n  after:  " << s->str(20);
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
}

TEST(Symbolic, ReshapeIndexFoldsAway) {
  UOpPtr i = UOp::make(Op::DEFINE_VAR, dtypes::int64, {}, VarInfo{"i", 0, 3});
  UOpPtr j = UOp::make(Op::DEFINE_VAR, dtypes::int64, {}, VarInfo{"j", 0, 5});
  UOpPtr flat = alu(Op::ADD, alu(Op::MUL, i, const_int(dtypes::int64, 6)), j);
  EXPECT_EQ(simplify(alu(Op::IDIV, flat, const_int(dtypes::int64, 6))).get(), i.get());  // (6i+j)/6 -> i
  EXPECT_EQ(simplify(alu(Op::MOD, flat, const_int(dtypes::int64, 6))).get(), j.get());   // (6i+j)%6 -> j
  UOpPtr lt = simplify(alu(Op::CMPLT, j, const_int(dtypes::int64, 6)));                  // j < 6 -> true
  ASSERT_EQ(lt->op, Op::CONST);
  EXPECT_EQ(lt->arg_int(), 1);
}

// The lanes l < 8 of a vector at a multiple of 8: a padding bound, a mod and a div by a multiple of 8 see the
// lane only as an offset, so the lanes stay one contiguous vector (a padded matmul panel, its unpacking)
TEST(Symbolic, VectorLanesShareBoundsAndDivisions) {
  UOpPtr p = UOp::make(Op::DEFINE_VAR, dtypes::int64, {}, VarInfo{"p", 0, 42});
  UOpPtr v = UOp::make(Op::DEFINE_VAR, dtypes::int64, {}, VarInfo{"v", 0, 127});
  auto c = [](int64_t x) { return const_int(dtypes::int64, x); };
  UOpPtr base = alu(Op::ADD, alu(Op::MUL, p, c(24)), alu(Op::MUL, v, c(8)));  // 24p + 8v
  UOpPtr bound0 = simplify(alu(Op::CMPLT, base, c(1024)));
  for (int64_t l = 1; l < 8; ++l) {
    UOpPtr lane = alu(Op::ADD, base, c(l));
    EXPECT_EQ(simplify(alu(Op::CMPLT, lane, c(1024))).get(), bound0.get()) << "lane " << l;
    UOpPtr r = alu(Op::MUL, v, c(8));
    UOpPtr diff = simplify(alu(Op::SUB, alu(Op::MOD, alu(Op::ADD, r, c(l)), c(24)), alu(Op::MOD, r, c(24))));
    ASSERT_EQ(diff->op, Op::CONST) << "lane " << l;
    EXPECT_EQ(diff->arg_int(), l);
    EXPECT_EQ(simplify(alu(Op::IDIV, alu(Op::ADD, r, c(l)), c(24))).get(), simplify(alu(Op::IDIV, r, c(24))).get());
  }
  // and the folded bound is the same predicate: checked on every value of p and v
  for (int64_t pv = 0; pv <= 42; ++pv)
    for (int64_t vv = 0; vv <= 127; ++vv)
      for (int64_t l = 0; l < 8; ++l) {
        const bool want = 24 * pv + 8 * vv + l < 1024;
        UOpPtr at = simplify(substitute(bound0, {{p.get(), c(pv)}, {v.get(), c(vv)}}));
        ASSERT_EQ(at->op, Op::CONST);
        ASSERT_EQ(at->arg_int() != 0, want) << "p=" << pv << " v=" << vv << " l=" << l;
      }
}

TEST(Symbolic, ConstantFoldingWrapsLikeTheDevice) {
  UOpPtr a = const_int(dtypes::int8, 127), b = const_int(dtypes::int8, 1);
  UOpPtr s = simplify(alu(Op::ADD, a, b));
  ASSERT_EQ(s->op, Op::CONST);
  EXPECT_EQ(s->arg_int(), -128);
}

// A widening cast moves inside a sum that cannot wrap, so consecutive wide indices differ by a constant; a sum
// that may wrap in int32 keeps its cast outside (pushing it in would change the value).
TEST(Symbolic, WideningCastMovesIntoSumsThatCannotWrap) {
  UOpPtr i = UOp::make(Op::DEFINE_VAR, dtypes::int32, {}, VarInfo{"i", 0, 1000});
  UOpPtr wide = cast(i * 4 + 3, dtypes::int64);
  UOpPtr diff = simplify(alu(Op::SUB, wide, cast(i * 4, dtypes::int64)));
  ASSERT_EQ(diff->op, Op::CONST) << diff->str(8);
  EXPECT_EQ(diff->arg_int(), 3);
  UOpPtr big = UOp::make(Op::DEFINE_VAR, dtypes::int32, {}, VarInfo{"big", 0, int64_t{1} << 30});
  UOpPtr may_wrap = simplify(cast(big * 4 + 3, dtypes::int64));
  EXPECT_EQ(may_wrap->op, Op::CAST) << "big * 4 may wrap in int32: " << may_wrap->str(8);
  EXPECT_EQ(eval_int(may_wrap, {{"big", int64_t{1} << 30}}),
            eval_int(cast(big * 4 + 3, dtypes::int64), {{"big", int64_t{1} << 30}}));
}

// uint64 values past INT64_MAX live in negative int64 bits: bounds must not order them below small values.
TEST(Symbolic, Uint64PastInt64MaxIsNotOrderedByBounds) {
  UOpPtr big = const_int(dtypes::uint64, -1);  // UINT64_MAX
  UOpPtr x = UOp::make(Op::DEFINE_VAR, dtypes::uint64, {}, VarInfo{"x", 0, 4});
  UOpPtr lt = simplify(alu(Op::CMPLT, big, x));
  EXPECT_FALSE(lt->op == Op::CONST && lt->const_value() != 0) << "UINT64_MAX < x folded to true: " << lt->str(8);
}

TEST(UOp, HashConsingMakesEqualNodesIdentical) {
  UOpPtr x = UOp::make(Op::DEFINE_VAR, dtypes::int32, {}, VarInfo{"x", 0, 10});
  EXPECT_EQ(alu(Op::ADD, x, const_int(dtypes::int32, 1)).get(), alu(Op::ADD, x, const_int(dtypes::int32, 1)).get());
  EXPECT_NE(alu(Op::ADD, x, const_int(dtypes::int32, 1)).get(), alu(Op::ADD, x, const_int(dtypes::int32, 2)).get());
  EXPECT_NE(const_float(dtypes::float32, 0.0).get(), const_float(dtypes::float32, -0.0).get());
}

// simplify_substituted rewrites only what the substitution made: a statement a value reaches through AFTER, which
// the substitution leaves alone, stays the very same node even where the rules could fold it (x * 1 here), so a
// linearizer that made lanes this way does not emit it again; the lane's own index is folded (r -> 3: 3 * 4 = 12).
TEST(Symbolic, SimplifySubstitutedLeavesWhatItDidNotRebuild) {
  const DType i32 = dtypes::int32;
  const UOpPtr buf = UOp::make(Op::PARAM, i32, {}, int64_t{0});
  const UOpPtr x = UOp::make(Op::DEFINE_VAR, i32, {}, VarInfo{"x", 0, 100});
  const UOpPtr stmt = UOp::make(Op::STORE, i32, {buf, const_int(i32, 0), alu(Op::MUL, x, const_int(i32, 1))});
  const UOpPtr ready = UOp::make(Op::AFTER, i32, {buf, stmt}, int64_t{0});
  const UOpPtr r = UOp::make(Op::RANGE, i32, {const_int(i32, 8)}, RangeInfo{0, AxisType::UPCAST});
  const UOpPtr lane = UOp::make(Op::LOAD, i32, {ready, alu(Op::MUL, r, const_int(i32, 4))});
  const UOpPtr three = const_int(i32, 3);
  const UOpPtr made = simplify_substituted(lane, {{r.get(), three}});
  ASSERT_EQ(made->op, Op::LOAD);
  EXPECT_EQ(made->src[0].get(), ready.get()) << "the AFTER and its statement are the same nodes";
  ASSERT_EQ(made->src[1]->op, Op::CONST);
  EXPECT_EQ(made->src[1]->arg_int(), 12);
  EXPECT_NE(simplify(substitute(lane, {{r.get(), three}}))->src[0].get(), ready.get()) << "what plain simplify does";
  EXPECT_EQ(simplify_substituted(lane, {}), lane) << "nothing substituted: the node itself";
}

}  // namespace
}  // namespace tg::ir
