// Unit tests of the pattern matcher and the rewrite driver: matching (commutative orders, bindings, predicates,
// op lists), traversal order, fixpoint, budget, cycle reports and memoization. Expected graphs are built by hand.
#include "ir/pattern_matcher.hpp"

#include <gtest/gtest.h>

#include <random>

#include "ir/symbolic.hpp"

#include "tg/error.hpp"

namespace tg::ir {
namespace {

UOpPtr var(const char* name) { return UOp::make(Op::DEFINE_VAR, dtypes::int32, {}, VarInfo{name, 0, 100}); }
UOpPtr fvar(const char* name) { return UOp::make(Op::DEFINE_VAR, dtypes::float32, {}, VarInfo{name, 0, 0}); }
UOpPtr un(Op op, const UOpPtr& a) { return UOp::make(op, a->dtype, {a}); }
UOpPtr bin(Op op, const UOpPtr& a, const UOpPtr& b) { return UOp::make(op, a->dtype, {a, b}); }
UOpPtr c32(int64_t v) { return const_int(dtypes::int32, v); }

// The names bound by matching p against u, or nullopt when it does not match.
std::optional<Match> try_match(const UPat& p, const UOpPtr& u) {
  std::optional<Match> out;
  PatternMatcher pm({{p, [&](const Match& m, const UOpPtr&) {
                        if (!out) out = m;  // the first way it matches
                        return UOpPtr{};    // report no rewrite: only the bindings matter here
                      }}});
  pm.rewrite(u);
  return out;
}

void check(const UOpPtr& input, const UOpPtr& got, const UOpPtr& expected) {
  EXPECT_EQ(got.get(), expected.get()) << "input:    " << input->str(8) << "\noutput:   " << got->str(8)
                                       << "\nexpected: " << expected->str(8);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ---- matching -------------------------------------------------------------------------------------------------

TEST(PatternMatcher, CommutativeMatchesBothOrders) {
  UOpPtr x = var("x");
  UPat p = pat::op(Op::ADD, {pat::any("v"), pat::cvar("c")});
  for (const UOpPtr& u : {bin(Op::ADD, x, c32(3)), bin(Op::ADD, c32(3), x)}) {
    auto m = try_match(p, u);
    ASSERT_TRUE(m) << u->str();
    EXPECT_EQ((*m)["v"].get(), x.get()) << u->str();
    EXPECT_EQ((*m)["c"].get(), c32(3).get()) << u->str();
  }
}

TEST(PatternMatcher, NonCommutativeMatchesOneOrder) {
  UOpPtr x = var("x");
  UPat p = pat::op(Op::SUB, {pat::any("v"), pat::cvar("c")});
  EXPECT_TRUE(try_match(p, bin(Op::SUB, x, c32(3))));
  EXPECT_FALSE(try_match(p, bin(Op::SUB, c32(3), x)));
}

TEST(PatternMatcher, SameNameOnBothSidesNeedsTheSameNode) {
  UOpPtr x = var("x"), y = var("y");
  UPat p = pat::op(Op::ADD, {pat::any("a"), pat::any("a")});
  auto m = try_match(p, bin(Op::ADD, x, x));
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["a"].get(), x.get());
  EXPECT_FALSE(try_match(p, bin(Op::ADD, x, y)));
}

TEST(PatternMatcher, BindingsAcrossLevelsMustAgree) {
  // (a * b) + a: the second `a` must be the node bound inside the MUL, in either order of the ADD
  UOpPtr x = var("x"), y = var("y"), z = var("z");
  UPat p = pat::op(Op::ADD, {pat::op(Op::MUL, {pat::any("a"), pat::any("b")}), pat::any("a")});
  EXPECT_TRUE(try_match(p, bin(Op::ADD, bin(Op::MUL, x, y), x)));
  EXPECT_TRUE(try_match(p, bin(Op::ADD, x, bin(Op::MUL, x, y))));
  EXPECT_TRUE(try_match(p, bin(Op::ADD, bin(Op::MUL, y, x), x)));  // MUL commutes too: a = x, b = y
  EXPECT_FALSE(try_match(p, bin(Op::ADD, bin(Op::MUL, x, y), z)));
}

TEST(PatternMatcher, FailedFirstOrderLeavesNoStaleBinding) {
  // the straight order binds a = x before failing on the constant; the swapped order must start clean
  UOpPtr x = var("x");
  UPat p = pat::op(Op::ADD, {pat::any("a"), pat::cint(7)});
  auto m = try_match(p, bin(Op::ADD, c32(7), x));
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["a"].get(), x.get());
  EXPECT_EQ(m->binds.size(), 1u);
}

TEST(PatternMatcher, PredicatesAndConstants) {
  UOpPtr x = var("x");
  UPat small = pat::cvar("c").where([](const UOp& u) { return u.arg_int() < 10; });
  EXPECT_TRUE(try_match(small, c32(3)));
  EXPECT_FALSE(try_match(small, c32(30)));
  EXPECT_FALSE(try_match(small, x));  // not a CONST: the op list fails before the predicate runs
  EXPECT_TRUE(try_match(pat::cint(5), c32(5)));
  EXPECT_FALSE(try_match(pat::cint(5), c32(6)));
  EXPECT_TRUE(try_match(pat::cint(2), const_float(dtypes::float32, 2.0)));
}

TEST(PatternMatcher, OpLists) {
  UOpPtr x = var("x"), y = var("y");
  UPat p = pat::ops({Op::ADD, Op::SUB}, "e");
  EXPECT_TRUE(try_match(p, bin(Op::ADD, x, y)));
  EXPECT_TRUE(try_match(p, bin(Op::SUB, x, y)));
  EXPECT_FALSE(try_match(p, bin(Op::MUL, x, y)));
  EXPECT_FALSE(try_match(pat::op(Op::ADD, {pat::any("a")}), bin(Op::ADD, x, y)));  // source count differs
}

TEST(PatternMatcher, FirstMatchingRuleWins) {
  UOpPtr x = var("x");
  PatternMatcher pm({
      {pat::op(Op::ADD, {pat::any("x"), pat::cint(0)}), [](const Match&, const UOpPtr&) { return UOpPtr{}; }},
      {pat::op(Op::ADD, {pat::any("x"), pat::cint(0)}), [](const Match& m, const UOpPtr&) { return m["x"]; }},
      {pat::ops({Op::ADD}), [](const Match&, const UOpPtr&) { return c32(99); }},
  });
  auto [r, rule] = pm.rewrite_with_rule(bin(Op::ADD, x, c32(0)));
  EXPECT_EQ(r.get(), x.get());  // the first rule declined (nullptr), so the second one applies
  EXPECT_EQ(rule, 1u);
}

// ---- the driver -----------------------------------------------------------------------------------------------

// x + 0 -> x, x * 1 -> x, c1 + c2 -> c3 (ints)
PatternMatcher algebra() {
  return PatternMatcher("algebra",
                        {
                            {pat::op(Op::ADD, {pat::any("x"), pat::cint(0)}),
                             [](const Match& m, const UOpPtr&) { return m["x"]; }, "add_zero"},
                            {pat::op(Op::MUL, {pat::any("x"), pat::cint(1)}),
                             [](const Match& m, const UOpPtr&) { return m["x"]; }, "mul_one"},
                            {pat::op(Op::ADD, {pat::cvar("a"), pat::cvar("b")}),
                             [](const Match& m, const UOpPtr&) { return c32(m["a"]->arg_int() + m["b"]->arg_int()); }},
                        });
}

TEST(GraphRewrite, ReachesFixpointThroughNewlyEnabledRules) {
  // ((x * (0 + 1)) + (2 + -2)): folding the constants enables mul_one and add_zero
  UOpPtr x = var("x");
  UOpPtr in = bin(Op::ADD, bin(Op::MUL, x, bin(Op::ADD, c32(0), c32(1))), bin(Op::ADD, c32(2), c32(-2)));
  for (bool top_down : {false, true})
    check(in, rewrite(in, algebra(), {.name = "t", .top_down = top_down, .converge_check = true}), x);
  check(in, graph_rewrite(in, algebra(), "t"), x);
}

TEST(GraphRewrite, UnchangedGraphIsReturnedAsIs) {
  UOpPtr in = bin(Op::SUB, var("x"), c32(1));
  check(in, rewrite(in, algebra(), {.converge_check = true}), in);
}

// outer: NEG(SQRT(x)) -> EXP2(x); inner: SQRT(x) -> LOG2(x). The result depends on which runs first.
PatternMatcher order_sensitive() {
  return PatternMatcher("order", {
                                     {pat::op(Op::NEG, {pat::op(Op::SQRT, {pat::any("x")})}),
                                      [](const Match& m, const UOpPtr&) { return un(Op::EXP2, m["x"]); }, "outer"},
                                     {pat::op(Op::SQRT, {pat::any("x")}),
                                      [](const Match& m, const UOpPtr&) { return un(Op::LOG2, m["x"]); }, "inner"},
                                 });
}

TEST(GraphRewrite, BottomUpRewritesSourcesFirst) {
  UOpPtr x = fvar("x");
  UOpPtr in = un(Op::NEG, un(Op::SQRT, x));
  check(in, rewrite(in, order_sensitive(), {.top_down = false, .converge_check = true}), un(Op::NEG, un(Op::LOG2, x)));
}

TEST(GraphRewrite, TopDownRewritesTheNodeFirst) {
  UOpPtr x = fvar("x");
  UOpPtr in = un(Op::NEG, un(Op::SQRT, x));
  check(in, rewrite(in, order_sensitive(), {.top_down = true, .converge_check = true}), un(Op::EXP2, x));
}

TEST(GraphRewrite, TopDownRevisitsANodeWhoseSourcesChanged) {
  // NEG(SQRT x): no rule fits the root until its source became LOG2 x; the rebuilt root must get the rules again
  UOpPtr x = fvar("x");
  PatternMatcher pm("p", {{pat::op(Op::SQRT, {pat::any("x")}),
                           [](const Match& m, const UOpPtr&) { return un(Op::LOG2, m["x"]); }, "sqrt_log"},
                          {pat::op(Op::NEG, {pat::op(Op::LOG2, {pat::any("y")})}),
                           [](const Match& m, const UOpPtr&) { return m["y"]; }, "neg_log"}});
  UOpPtr in = bin(Op::MUL, un(Op::NEG, un(Op::SQRT, x)), x);
  for (bool top_down : {false, true})
    check(in, rewrite(in, pm, {.top_down = top_down, .converge_check = true}), bin(Op::MUL, x, x));
}

TEST(GraphRewrite, RuleSeesEveryCommutativeMatch) {
  // the callback declines the first way the pattern matches; the swapped order must still be offered
  UOpPtr x = var("x"), y = var("y");
  PatternMatcher pm({{pat::op(Op::ADD, {pat::any("a"), pat::any("b")}),
                      [&](const Match& m, const UOpPtr&) { return m["a"].get() == y.get() ? m["b"] : UOpPtr{}; }}});
  check(bin(Op::ADD, x, y), pm.rewrite(bin(Op::ADD, x, y)), x);
}

TEST(GraphRewrite, SharedSubgraphIsRewrittenOnce) {
  UOpPtr x = fvar("x");
  UOpPtr s = un(Op::SQRT, x);
  UOpPtr in = bin(Op::ADD, un(Op::NEG, s), bin(Op::MUL, un(Op::EXP2, s), s));
  int calls = 0;
  PatternMatcher pm({{pat::op(Op::SQRT, {pat::any("x")}), [&](const Match& m, const UOpPtr&) {
                        ++calls;
                        return un(Op::LOG2, m["x"]);
                      }}});
  UOpPtr l = un(Op::LOG2, x);
  for (bool top_down : {false, true}) {
    calls = 0;
    check(in, rewrite(in, pm, {.top_down = top_down}), bin(Op::ADD, un(Op::NEG, l), bin(Op::MUL, un(Op::EXP2, l), l)));
    EXPECT_EQ(calls, 1) << (top_down ? "top-down" : "bottom-up");
  }
}

// a + b -> b + a when a is a constant, and back: the two rules undo each other
PatternMatcher ping_pong() {
  auto swap = [](const Match&, const UOpPtr& u) { return u->replace_src({u->src[1], u->src[0]}); };
  return PatternMatcher("pp", {
                                  {pat::op(Op::SUB, {pat::cvar("c"), pat::any("x")}), swap, "const_right"},
                                  {pat::op(Op::SUB, {pat::any("x"), pat::cvar("c")}), swap, "const_left"},
                              });
}

TEST(GraphRewrite, TwoRuleCycleNamesBothRules) {
  UOpPtr in = bin(Op::ADD, var("y"), bin(Op::SUB, c32(1), var("x")));
  for (bool top_down : {false, true}) {
    std::string e =
        error_of([&] { rewrite(in, ping_pong(), {.name = "cyc", .top_down = top_down, .converge_check = true}); });
    EXPECT_NE(e.find("graph_rewrite 'cyc': rules 'const_right' and 'const_left' undo each other on SUB"),
              std::string::npos)
        << e;
  }
}

TEST(GraphRewrite, UnnamedRulesGetSetAndIndex) {
  auto swap = [](const Match&, const UOpPtr& u) { return u->replace_src({u->src[1], u->src[0]}); };
  PatternMatcher pm({{pat::cvar("c"), [](const Match&, const UOpPtr&) { return UOpPtr{}; }},
                     {pat::op(Op::SUB, {pat::cvar("c"), pat::any("x")}), swap},
                     {pat::op(Op::SUB, {pat::any("x"), pat::cvar("c")}), swap}});
  std::string e =
      error_of([&] { rewrite(bin(Op::SUB, c32(1), var("x")), pm, {.name = "sym", .converge_check = true}); });
  EXPECT_NE(e.find("rules 'sym#1' and 'sym#2' undo each other"), std::string::npos) << e;
  // a named set composed with another keeps its names
  PatternMatcher both =
      PatternMatcher("first", {{pat::cvar("c"), [](const Match&, const UOpPtr&) { return UOpPtr{}; }}}) + pm;
  EXPECT_EQ(both.rule_name(0), "first#0");
  EXPECT_EQ(both.rule_name(2, "sym"), "sym#2");
}

TEST(GraphRewrite, CycleInNormalModeHitsTheBudgetNamingTheLastRule) {
  UOpPtr in = bin(Op::SUB, c32(1), var("x"));
  std::string e = error_of([&] { rewrite(in, ping_pong(), {.name = "cyc", .budget = 1000}); });
  EXPECT_NE(e.find("graph_rewrite 'cyc': no fixpoint after 1000 rewrites; the last, rule 'const_"), std::string::npos)
      << e;
  // graph_rewrite() runs with the default options, which have a budget (running it out takes seconds under ASan)
  EXPECT_GT(RewriteOptions{}.budget, 0u);
}

TEST(GraphRewrite, BudgetCountsRewrites) {
  // c -> c+1 until 50: exactly 50 rewrites from 0
  PatternMatcher count_up("up", {{pat::cvar("c").where([](const UOp& u) { return u.arg_int() < 50; }),
                                  [](const Match& m, const UOpPtr&) { return c32(m["c"]->arg_int() + 1); }, "inc"}});
  check(c32(0), rewrite(c32(0), count_up, {.budget = 50, .converge_check = true}), c32(50));
  std::string e = error_of([&] { rewrite(c32(0), count_up, {.name = "b", .budget = 49}); });
  EXPECT_NE(e.find("graph_rewrite 'b': no fixpoint after 49 rewrites; the last, rule 'inc', turned CONST"),
            std::string::npos)
      << e;
}

TEST(GraphRewrite, ResultContainingItsInputIsAnError) {
  // x -> NEG(x) can only grow: both traversal orders must stop with the rule named, not recurse forever
  PatternMatcher grow("g", {{pat::ops({Op::DEFINE_VAR}, "v"),
                             [](const Match& m, const UOpPtr&) { return un(Op::NEG, m["v"]); }, "wrap"}});
  for (bool top_down : {false, true}) {
    std::string e =
        error_of([&] { rewrite(bin(Op::ADD, var("x"), c32(1)), grow, {.name = "g", .top_down = top_down}); });
    EXPECT_NE(e.find("graph_rewrite 'g': rule 'wrap' rewrote x into"), std::string::npos) << e;
    EXPECT_NE(e.find("into a graph that contains it"), std::string::npos) << e;
  }
}

TEST(GraphRewrite, ConvergeCheckPassesOnARealFixpoint) {
  // a deep chain: ((((x+0)+0)+0)...) -> x, 500 levels
  UOpPtr x = var("x"), in = x;
  for (int i = 0; i < 500; ++i) in = UOp::make(Op::ADD, dtypes::int32, {in, c32(0)});
  for (bool top_down : {false, true})
    check(in, rewrite(in, algebra(), {.top_down = top_down, .converge_check = true}), x);
}

// The convergence mode on the real symbolic rules: random index expressions (the shapes the scheduler makes:
// sums of products, div/mod by constants, comparisons) must simplify with no rule cycle and end at a fixpoint,
// in both traversal orders, and the two orders must agree on the value at every point tried.
TEST(GraphRewrite, SymbolicRulesConverge) {
  std::mt19937 rng(1234);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  UOpPtr vars[] = {UOp::make(Op::DEFINE_VAR, dtypes::int32, {}, VarInfo{"a", 0, 7}),
                   UOp::make(Op::DEFINE_VAR, dtypes::int32, {}, VarInfo{"b", 0, 12}),
                   UOp::make(Op::DEFINE_VAR, dtypes::int32, {}, VarInfo{"c", 1, 5})};
  std::function<UOpPtr(int)> gen = [&](int depth) -> UOpPtr {
    if (depth == 0 || pick(4) == 0) return pick(2) ? vars[pick(3)] : c32(pick(9));
    UOpPtr a = gen(depth - 1);
    switch (pick(5)) {
      case 0: return UOp::make(Op::ADD, dtypes::int32, {a, gen(depth - 1)});
      case 1: return UOp::make(Op::MUL, dtypes::int32, {a, c32(1 + pick(6))});
      case 2: return UOp::make(Op::IDIV, dtypes::int32, {a, c32(1 + pick(6))});
      case 3: return UOp::make(Op::MOD, dtypes::int32, {a, c32(1 + pick(6))});
      default: return UOp::make(Op::SUB, dtypes::int32, {a, gen(depth - 1)});
    }
  };
  for (int n = 0; n < 300; ++n) {
    UOpPtr e = gen(5);
    UOpPtr up, down;
    ASSERT_NO_THROW(up = rewrite(e, pm_symbolic(), {.name = "symbolic", .converge_check = true})) << e->str(8);
    ASSERT_NO_THROW(down = rewrite(e, pm_symbolic(), {.name = "symbolic", .top_down = true, .converge_check = true}))
        << e->str(8);
    for (int64_t a = 0; a <= 7; a += 3)
      for (int64_t b = 0; b <= 12; b += 4)
        for (int64_t c = 1; c <= 5; c += 2) {
          std::vector<std::pair<std::string, int64_t>> at{{"a", a}, {"b", b}, {"c", c}};
          EXPECT_EQ(eval_int(up, at), eval_int(e, at)) << e->str(8) << " -> " << up->str(8);
          EXPECT_EQ(eval_int(down, at), eval_int(e, at)) << e->str(8) << " -> " << down->str(8);
        }
  }
}

}  // namespace
}  // namespace tg::ir
