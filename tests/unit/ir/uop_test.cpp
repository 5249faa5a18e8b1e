// Mirrors core/src/ir/uop.cpp: interning, toposort, depends_on, substitute, str(), the construction helpers'
// dtype rules, value bounds and eval_int, each against hand-computed values.
#include "ir/uop.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <thread>
#include <unordered_map>

#include "ir/pattern_matcher.hpp"

namespace tg::ir {
namespace {

UOpPtr var(const char* name, int64_t lo, int64_t hi, DType d = dtypes::int32) {
  return UOp::make(Op::DEFINE_VAR, d, {}, VarInfo{name, lo, hi});
}

// Prints the expression and both bound pairs when they differ.
void check_bounds(const UOpPtr& u, int64_t lo, int64_t hi) {
  EXPECT_EQ(u->vmin(), lo) << u->str() << ": vmin " << u->vmin() << ", want " << lo;
  EXPECT_EQ(u->vmax(), hi) << u->str() << ": vmax " << u->vmax() << ", want " << hi;
}

// --- interning ----------------------------------------------------------------------------------------------------

TEST(UOpIntern, EqualOpDtypeSrcArgIsTheSameNode) {
  UOpPtr x = var("x", 0, 10);
  UOpPtr c = const_int(dtypes::int32, 7);
  EXPECT_EQ(c.get(), const_int(dtypes::int32, 7).get());
  EXPECT_EQ(UOp::make(Op::ADD, dtypes::int32, {x, c}).get(), UOp::make(Op::ADD, dtypes::int32, {x, c}).get());
  EXPECT_EQ(var("x", 0, 10).get(), x.get());
  std::vector<int64_t> shape{2, 3};
  EXPECT_EQ(UOp::make(Op::RESHAPE, dtypes::float32, {x}, shape, {2, 3}).get(),
            UOp::make(Op::RESHAPE, dtypes::float32, {x}, shape, {2, 3}).get());
}

TEST(UOpIntern, AnyDifferenceIsADifferentNode) {
  UOpPtr x = var("x", 0, 10), y = var("y", 0, 10);
  UOpPtr add = UOp::make(Op::ADD, dtypes::int32, {x, y});
  EXPECT_NE(add.get(), UOp::make(Op::ADD, dtypes::int32, {y, x}).get()) << "source order matters";
  EXPECT_NE(add.get(), UOp::make(Op::MUL, dtypes::int32, {x, y}).get()) << "op matters";
  EXPECT_NE(add.get(), UOp::make(Op::ADD, dtypes::int64, {x, y}).get()) << "dtype matters";
  EXPECT_NE(add.get(), UOp::make(Op::ADD, dtypes::int32.vec(2), {x, y}).get()) << "lane count matters";
  EXPECT_NE(add.get(), UOp::make(Op::ADD, dtypes::int32, {x, y}, int64_t{1}).get()) << "arg matters";
  EXPECT_NE(var("x", 0, 10).get(), var("x", 0, 11).get()) << "a variable's bounds are part of its arg";
  EXPECT_NE(const_int(dtypes::int32, 7).get(), const_int(dtypes::int32, 8).get());
  // an int arg and a double arg of the same value are different alternatives
  EXPECT_NE(UOp::make(Op::CONST, dtypes::int32, {}, int64_t{1}).get(),
            UOp::make(Op::CONST, dtypes::int32, {}, 1.0).get());
  EXPECT_NE(UOp::make(Op::RESHAPE, dtypes::float32, {x}, std::vector<int64_t>{6}, {6}).get(),
            UOp::make(Op::RESHAPE, dtypes::float32, {x}, std::vector<int64_t>{6}, {3, 2}).get())
      << "shape matters";
}

TEST(UOpIntern, FloatConstantsCompareByBits) {
  EXPECT_NE(const_float(dtypes::float32, 0.0).get(), const_float(dtypes::float32, -0.0).get());
  EXPECT_EQ(const_float(dtypes::float32, NAN).get(), const_float(dtypes::float32, NAN).get())
      << "the same NaN bits are the same node even though NaN != NaN";
  EXPECT_EQ(const_float(dtypes::float32, 0.1).get(), const_float(dtypes::float32, 0.1).get());
}

TEST(UOpIntern, ConcurrentMakersGetOneNode) {
  UOpPtr x = var("x", 0, 100);
  constexpr int kThreads = 4, kNodes = 500;
  std::vector<std::vector<UOpPtr>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kNodes; ++i)
        got[t].push_back(UOp::make(Op::ADD, dtypes::int32, {x, const_int(dtypes::int32, i)}));
    });
  for (auto& th : threads) th.join();
  for (int t = 1; t < kThreads; ++t)
    for (int i = 0; i < kNodes; ++i) ASSERT_EQ(got[t][i].get(), got[0][i].get()) << "thread " << t << " node " << i;
}

TEST(UOpIntern, ReplaceSrcKeepsEverythingElse) {
  UOpPtr x = var("x", 0, 10), y = var("y", 0, 10);
  UOpPtr a = UOp::make(Op::ADD, dtypes::int32, {x, x}, int64_t{3});
  UOpPtr b = a->replace_src({x, y});
  EXPECT_EQ(b->op, Op::ADD);
  EXPECT_EQ(b->dtype, dtypes::int32);
  EXPECT_EQ(b->arg_int(), 3);
  EXPECT_EQ(b.get(), UOp::make(Op::ADD, dtypes::int32, {x, y}, int64_t{3}).get());
  EXPECT_EQ(a->replace_src({x, x}).get(), a.get());
}

// --- graph walks -------------------------------------------------------------------------------------------------

// A diamond: top = MUL(l, r), l = ADD(x, 1), r = NEG(x); x is shared.
struct Diamond {
  UOpPtr x = var("x", 0, 10);
  UOpPtr one = const_int(dtypes::int32, 1);
  UOpPtr l = UOp::make(Op::ADD, dtypes::int32, {x, one});
  UOpPtr r = UOp::make(Op::NEG, dtypes::int32, {x});
  UOpPtr top = UOp::make(Op::MUL, dtypes::int32, {l, r});
};

TEST(UOpWalk, ToposortPutsSourcesFirstAndEachNodeOnce) {
  Diamond d;
  std::vector<UOpPtr> roots{d.top};
  std::vector<const UOp*> order = toposort(roots);
  // post-order, sources in order: x, 1, ADD, NEG, MUL
  std::vector<const UOp*> want{d.x.get(), d.one.get(), d.l.get(), d.r.get(), d.top.get()};
  EXPECT_EQ(order, want);
  std::unordered_map<const UOp*, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) EXPECT_TRUE(pos.emplace(order[i], i).second) << "node listed twice";
  for (const UOp* u : order)
    for (const auto& s : u->src) EXPECT_LT(pos.at(s.get()), pos.at(u)) << s->str() << " after its user " << u->str();
}

TEST(UOpWalk, ToposortOfSeveralRootsSharesNodes) {
  Diamond d;
  std::vector<UOpPtr> roots{d.l, d.top, d.l};
  std::vector<const UOp*> order = toposort(roots);
  std::vector<const UOp*> want{d.x.get(), d.one.get(), d.l.get(), d.r.get(), d.top.get()};
  EXPECT_EQ(order, want);
}

TEST(UOpWalk, DependsOn) {
  Diamond d;
  UOpPtr y = var("y", 0, 10);
  EXPECT_TRUE(depends_on(d.top, d.x.get()));
  EXPECT_TRUE(depends_on(d.top, d.one.get()));
  EXPECT_TRUE(depends_on(d.top, d.top.get())) << "a node is reachable from itself";
  EXPECT_FALSE(depends_on(d.r, d.one.get()));
  EXPECT_FALSE(depends_on(d.top, y.get()));
  EXPECT_FALSE(depends_on(d.x, d.top.get())) << "users are not reachable from sources";
}

TEST(UOpWalk, SubstituteReplacesByIdentityAndRebuildsUsers) {
  Diamond d;
  UOpPtr y = var("y", 0, 10);
  UOpPtr out = substitute(d.top, {{d.x.get(), y}});
  // MUL(ADD(y, 1), NEG(y)), built by hand
  UOpPtr want = UOp::make(Op::MUL, dtypes::int32,
                          {UOp::make(Op::ADD, dtypes::int32, {y, d.one}), UOp::make(Op::NEG, dtypes::int32, {y})});
  EXPECT_EQ(out.get(), want.get()) << out->str() << " vs " << want->str();
  EXPECT_EQ(substitute(d.top, {}).get(), d.top.get()) << "nothing to replace: the same node";
  EXPECT_EQ(substitute(d.top, {{d.l.get(), d.one}}).get(), UOp::make(Op::MUL, dtypes::int32, {d.one, d.r}).get());
  EXPECT_EQ(substitute(d.top, {{d.top.get(), y}}).get(), y.get());
}

// --- printing ----------------------------------------------------------------------------------------------------

TEST(UOpStr, SmallGraphsPrintAsWritten) {
  Diamond d;
  EXPECT_EQ(d.top->str(), "MUL.int32(ADD.int32(x, CONST(1)), NEG.int32(x))");
  EXPECT_EQ(d.top->str(1), "MUL.int32(ADD.int32(...), NEG.int32(...))");
  EXPECT_EQ(d.top->str(0), "MUL.int32(...)");
  EXPECT_EQ(const_float(dtypes::float32, 2.5)->str(), "CONST(2.500000)");
  EXPECT_EQ(UOp::make(Op::PARAM, dtypes::float32, {}, int64_t{3})->str(), "data3");
  UOpPtr r = UOp::make(Op::RANGE, dtypes::int32, {const_int(dtypes::int32, 8)}, RangeInfo{4, AxisType::LOOP});
  EXPECT_EQ(r->str(), "r4");
  EXPECT_EQ(alu(Op::CMPLT, r, d.one)->str(), "CMPLT.bool(r4, CONST(1))");
  EXPECT_EQ(UOp::make(Op::VECTORIZE, dtypes::int32.vec(2), {d.x, d.one})->str(), "VECTORIZE.int32x2(x, CONST(1))");
}

// --- construction helpers ----------------------------------------------------------------------------------------

TEST(UOpHelpers, ConstantsTakeTheArgKindOfTheirDtype) {
  UOpPtr f = const_int(dtypes::float32, 3);
  ASSERT_TRUE(std::holds_alternative<double>(f->arg));
  EXPECT_EQ(f->arg_float(), 3.0);
  UOpPtr i = const_float(dtypes::int32, 2.75);
  ASSERT_TRUE(std::holds_alternative<int64_t>(i->arg));
  EXPECT_EQ(i->arg_int(), 2) << "truncated";
  EXPECT_EQ(const_float(dtypes::int32, -2.75)->arg_int(), -2) << "toward zero";
  EXPECT_EQ(const_float(dtypes::int64, NAN)->arg_int(), 0);
  EXPECT_EQ(const_float(dtypes::int64, 1e30)->arg_int(), INT64_MAX);
  EXPECT_EQ(const_float(dtypes::int64, -1e30)->arg_int(), INT64_MIN);
  EXPECT_EQ(saturating_int(INFINITY), INT64_MAX);
  EXPECT_EQ(saturating_int(-INFINITY), INT64_MIN);
  EXPECT_EQ(saturating_int(9223372036854775807.0), INT64_MAX) << "2^63 itself does not fit";
  EXPECT_EQ(const_int(dtypes::int32, 5)->const_value(), 5.0);
  UOpPtr v = UOp::make(Op::VECTORIZE, dtypes::float16.vec(4), {});
  UOpPtr like = const_like(v, 1.5);
  EXPECT_EQ(like->dtype, dtypes::float16) << "const_like takes the scalar of a vector dtype";
  EXPECT_EQ(like->arg_float(), 1.5);
}

TEST(UOpHelpers, AluResultDtypes) {
  UOpPtr a = UOp::make(Op::VECTORIZE, dtypes::float32.vec(4), {});
  UOpPtr b = UOp::make(Op::VECTORIZE, dtypes::float32.vec(4), {}, int64_t{1});
  UOpPtr i = var("i", 0, 3, dtypes::int64);
  EXPECT_EQ(alu(Op::NEG, a)->dtype, dtypes::float32.vec(4));
  EXPECT_EQ(alu(Op::ADD, a, b)->dtype, dtypes::float32.vec(4));
  EXPECT_EQ(alu(Op::CMPLT, a, b)->dtype, dtypes::bool_.vec(4)) << "comparisons give bool with the operands' lanes";
  EXPECT_EQ(alu(Op::CMPEQ, i, i)->dtype, dtypes::bool_);
  UOpPtr cond = alu(Op::CMPNE, i, const_int(dtypes::int64, 0));
  EXPECT_EQ(alu(Op::WHERE, cond, a, b)->dtype, dtypes::float32.vec(4)) << "WHERE takes the dtype of its values";
  EXPECT_EQ(alu(Op::MULACC, a, b, a)->dtype, dtypes::float32.vec(4));
  EXPECT_EQ(cast(i, dtypes::int64).get(), i.get()) << "a cast to its own dtype is the node itself";
  UOpPtr c = cast(i, dtypes::float32);
  EXPECT_EQ(c->op, Op::CAST);
  EXPECT_EQ(c->dtype, dtypes::float32);
  EXPECT_EQ(c->src[0].get(), i.get());
}

TEST(UOpHelpers, ReduceIdentities) {
  auto ival = [](ReduceOp op, DType d) { return reduce_identity(op, d)->arg_int(); };
  auto fval = [](ReduceOp op, DType d) { return reduce_identity(op, d)->arg_float(); };
  EXPECT_EQ(fval(ReduceOp::SUM, dtypes::float32), 0.0);
  EXPECT_EQ(fval(ReduceOp::MAX, dtypes::float32), -INFINITY);
  EXPECT_EQ(fval(ReduceOp::MIN, dtypes::float16), INFINITY);
  EXPECT_EQ(ival(ReduceOp::SUM, dtypes::int32), 0);
  EXPECT_EQ(ival(ReduceOp::MAX, dtypes::int8), -128);
  EXPECT_EQ(ival(ReduceOp::MIN, dtypes::int8), 127);
  EXPECT_EQ(ival(ReduceOp::MAX, dtypes::int16), -32768);
  EXPECT_EQ(ival(ReduceOp::MIN, dtypes::int32), 2147483647);
  EXPECT_EQ(ival(ReduceOp::MAX, dtypes::int64), INT64_MIN);
  EXPECT_EQ(ival(ReduceOp::MIN, dtypes::int64), INT64_MAX);
  EXPECT_EQ(ival(ReduceOp::MAX, dtypes::uint8), 0);
  EXPECT_EQ(ival(ReduceOp::MIN, dtypes::uint8), 255);
  EXPECT_EQ(ival(ReduceOp::MIN, dtypes::uint32), 4294967295);
  EXPECT_EQ(static_cast<uint64_t>(ival(ReduceOp::MIN, dtypes::uint64)), UINT64_MAX) << "stored as its int64 bits";
  EXPECT_EQ(ival(ReduceOp::MIN, dtypes::bool_), 1);
  EXPECT_EQ(ival(ReduceOp::MAX, dtypes::bool_), 0);
}

TEST(UOpHelpers, IndexSugarFoldsOnlyExactConstants) {
  UOpPtr x = var("x", 0, 10, dtypes::int64);
  auto c = [](int64_t v) { return const_int(dtypes::int64, v); };
  EXPECT_EQ((x + 0).get(), x.get());
  EXPECT_EQ((c(0) + x).get(), x.get());
  EXPECT_EQ((c(2) + c(3)).get(), c(5).get());
  EXPECT_EQ((x * 1).get(), x.get());
  EXPECT_EQ((c(1) * x).get(), x.get());
  EXPECT_EQ((x * 0).get(), c(0).get());
  EXPECT_EQ((c(6) * c(7)).get(), c(42).get());
  EXPECT_EQ((x / 1).get(), x.get());
  EXPECT_EQ((x & c(1)).get(), x.get());
  UOpPtr over = c(INT64_MAX) + c(1);
  EXPECT_EQ(over->op, Op::ADD) << "an overflowing sum is left for the device to wrap";
  UOpPtr over_mul = c(INT64_MAX) * c(2);
  EXPECT_EQ(over_mul->op, Op::MUL);
  EXPECT_EQ((x + 4)->op, Op::ADD);
  EXPECT_EQ((x / 3)->op, Op::IDIV);
  EXPECT_EQ((x % 3)->op, Op::MOD);
  EXPECT_EQ((x < 3)->dtype, dtypes::bool_);
}

// --- bounds ------------------------------------------------------------------------------------------------------

TEST(UOpBounds, ArithmeticOnAVariable) {
  UOpPtr x = var("x", 0, 10), y = var("y", -3, 4);
  auto c = [](int64_t v) { return const_int(dtypes::int32, v); };
  check_bounds(x, 0, 10);
  check_bounds(c(-7), -7, -7);
  check_bounds(alu(Op::ADD, x, y), -3, 14);
  check_bounds(alu(Op::SUB, x, y), -4, 13);
  check_bounds(alu(Op::MUL, x, y), -30, 40);
  check_bounds(alu(Op::MUL, x, c(-2)), -20, 0);
  check_bounds(alu(Op::IDIV, x, c(3)), 0, 3);
  check_bounds(alu(Op::IDIV, y, c(2)), -1, 2);
  check_bounds(alu(Op::MOD, x, c(4)), 0, 3);
  check_bounds(alu(Op::MOD, y, c(2)), -1, 1);
  check_bounds(alu(Op::MAX, x, y), 0, 10);
  check_bounds(alu(Op::NEG, y), -4, 3);
  check_bounds(alu(Op::CMPLT, x, c(11)), 1, 1);
  check_bounds(alu(Op::CMPLT, x, c(0)), 0, 0);
  check_bounds(alu(Op::CMPLT, x, c(5)), 0, 1);
  check_bounds(alu(Op::CMPNE, x, c(20)), 1, 1);
  check_bounds(alu(Op::CMPEQ, c(3), c(3)), 1, 1);
  check_bounds(UOp::make(Op::RANGE, dtypes::int32, {c(8)}, RangeInfo{0, AxisType::LOOP}), 0, 7);
  check_bounds(alu(Op::WHERE, alu(Op::CMPLT, x, c(5)), c(-1), x), -1, 10);
  check_bounds(cast(x, dtypes::int64), 0, 10);
}

TEST(UOpBounds, OverflowFallsBackToTheDtypeRange) {
  UOpPtr x = var("x", 100, 127, dtypes::int8);
  check_bounds(alu(Op::ADD, x, const_int(dtypes::int8, 100)), INT8_MIN, INT8_MAX);
  UOpPtr u = var("u", 0, 200, dtypes::uint8);
  check_bounds(alu(Op::SUB, u, const_int(dtypes::uint8, 1)), 0, UINT8_MAX);
  check_bounds(const_float(dtypes::float32, 1.0), INT64_MIN, INT64_MAX);
  check_bounds(alu(Op::ADD, var("b", 0, 1, dtypes::bool_), var("c", 0, 1, dtypes::bool_)), 0, 1);
}

// --- eval_int ----------------------------------------------------------------------------------------------------

TEST(UOpEval, ClosedIntegerGraphs) {
  UOpPtr x = var("x", 0, 100, dtypes::int64);
  auto c = [](int64_t v) { return const_int(dtypes::int64, v); };
  UOpPtr e = alu(Op::MOD, alu(Op::ADD, alu(Op::MUL, x, c(3)), c(1)), c(5));  // (3x + 1) % 5
  EXPECT_EQ(eval_int(e, {{"x", 7}}), 2);
  EXPECT_EQ(eval_int(e, {{"x", 8}}), 0);
  EXPECT_EQ(eval_int(e), std::nullopt) << "x unbound";
  EXPECT_EQ(eval_int(alu(Op::IDIV, c(-7), c(2))), -3) << "truncating division";
  EXPECT_EQ(eval_int(alu(Op::MOD, c(-7), c(2))), -1) << "remainder has the dividend's sign";
  EXPECT_EQ(eval_int(alu(Op::IDIV, x, c(0)), {{"x", 1}}), std::nullopt);
  EXPECT_EQ(eval_int(alu(Op::IDIV, c(INT64_MIN), c(-1))), std::nullopt);
  EXPECT_EQ(eval_int(alu(Op::MOD, c(INT64_MIN), c(-1))), 0);
  EXPECT_EQ(eval_int(alu(Op::ADD, c(INT64_MAX), c(1))), INT64_MIN) << "wraps like the device";
  EXPECT_EQ(eval_int(alu(Op::WHERE, alu(Op::CMPLT, c(1), c(2)), c(10), c(20))), 10);
  EXPECT_EQ(eval_int(alu(Op::XOR, c(12), c(10))), 6);
  EXPECT_EQ(eval_int(const_float(dtypes::float32, 1.0)), std::nullopt) << "a float const has no integer value";
  UOpPtr b = UOp::make(Op::BIND, dtypes::int32, {var("n", 1, 10)}, int64_t{6});
  EXPECT_EQ(eval_int(cast(b, dtypes::int64)), 6) << "a BIND carries its value; widening to int64 is exact";
  EXPECT_EQ(eval_int(cast(c(300), dtypes::int8)), std::nullopt) << "narrowing casts are not folded here";
}

}  // namespace
}  // namespace tg::ir
