// Symbolic dims: values and bounds under bindings, printing, the equality and divisibility proofs shape checks
// rely on, and the symbolic-divisor rule that symbolic reshapes need ((q*y + r) / y -> q for r a loop over y).
#include "ir/sym_shape.hpp"

#include <gtest/gtest.h>

#include "ir/pattern_matcher.hpp"
#include "ir/symbolic.hpp"

namespace tg::ir {
namespace {

UOpPtr var(const std::string& name, int64_t lo, int64_t hi, DType d = dtypes::int32) {
  return UOp::make(Op::DEFINE_VAR, d, {}, VarInfo{name, lo, hi});
}
UOpPtr bound(const std::string& name, int64_t lo, int64_t hi, int64_t value, DType d = dtypes::int32) {
  return dim_of(UOp::make(Op::BIND, d, {var(name, lo, hi, d)}, value));
}

TEST(SymShape, ValueBoundsAndSpelling) {
  UOpPtr v = bound("start_pos", 0, 4095, 7);
  UOpPtr d = dim_add(v, dim_const(1));
  EXPECT_EQ(dim_value(d), 8);
  EXPECT_EQ(dim_min(d), 1);
  EXPECT_EQ(dim_max(d), 4096);
  EXPECT_EQ(dim_str(d), "start_pos+1");
  EXPECT_EQ(dim_str(dim_mul(d, dim_const(4))), "(start_pos+1)*4");
  EXPECT_EQ(dims_str({d, dim_const(2)}), "(start_pos+1, 2)");
  EXPECT_EQ(dim_value(bound("big", 0, int64_t{1} << 40, int64_t{1} << 35, dtypes::int64)), int64_t{1} << 35);
}

TEST(SymShape, SameDimProvesEqualityForEveryBinding) {
  UOpPtr v = bound("v", 0, 10, 3), w = bound("w", 0, 10, 3);
  EXPECT_TRUE(same_dim(dim_mul(v, dim_const(4)), dim_mul(dim_const(4), v)));
  EXPECT_TRUE(
      same_dim(dim_add(dim_mul(v, dim_const(2)), dim_const(2)), dim_mul(dim_add(v, dim_const(1)), dim_const(2))));
  EXPECT_TRUE(same_dim(dim_mul(v, w), dim_mul(w, v)));
  EXPECT_FALSE(same_dim(v, w)) << "equal values today, but not for every binding";
  EXPECT_FALSE(same_dim(v, dim_const(3)));
  EXPECT_FALSE(same_dim(dim_add(v, dim_const(1)), dim_add(v, dim_const(2))));
  EXPECT_FALSE(same_dim(v, bound("v", 0, 10, 4))) << "one variable bound to two values";
}

TEST(SymShape, DimDivIsExactOrRefused) {
  UOpPtr v = bound("v", 0, 10, 3), w = bound("w", 1, 10, 5);
  UOpPtr total = dim_mul(dim_mul(v, dim_const(4)), w);
  UOpPtr q = dim_div(total, dim_mul(w, dim_const(2)));
  ASSERT_TRUE(q);
  EXPECT_TRUE(same_dim(q, dim_mul(v, dim_const(2)))) << dim_str(q);
  EXPECT_EQ(dim_value(q), 6);
  EXPECT_FALSE(dim_div(v, dim_const(2))) << "v is not always even";
  EXPECT_FALSE(dim_div(dim_mul(v, dim_const(4)), w));
  EXPECT_FALSE(dim_div(dim_add(v, dim_const(1)), v));
}

TEST(SymShape, ShapeArgsKeepSymbolicDimsOnly) {
  auto [shape, sym] = shape_args({dim_const(2), dim_const(3)});
  EXPECT_EQ(shape, Shape({2, 3}));
  EXPECT_TRUE(sym.empty());
  UOpPtr v = bound("v", 0, 10, 4);
  auto [shape2, sym2] = shape_args({dim_const(2), v});
  EXPECT_EQ(shape2, Shape({2, 4}));
  ASSERT_EQ(sym2.size(), 2u);
  EXPECT_EQ(sym2[1].get(), v.get());
}

TEST(SymShape, MapBindsTurnsBindingsIntoVariables) {
  UOpPtr d = dim_add(bound("v", 0, 10, 4), dim_const(1));
  UOpPtr k = map_binds(d, [](const UOpPtr& b) { return b->src[0]; });
  EXPECT_EQ(eval_int(k, {{"v", 9}}), 10);
  EXPECT_FALSE(eval_int(k)) << "no binding left in it";
}

// Brute force over every point: the simplified index must equal the original wherever the loops run.
void check_same(const UOpPtr& a, const UOpPtr& b, const UOpPtr& n, const UOpPtr& i, const UOpPtr& r) {
  for (int64_t nv = 1; nv <= n->vmax(); ++nv)
    for (int64_t iv = 0; iv < i->src[0]->arg_int(); ++iv)
      for (int64_t rv = 0; rv < nv; ++rv) {
        std::vector<std::pair<const UOp*, UOpPtr>> at{{i.get(), const_int(dtypes::int64, iv)},
                                                      {r.get(), const_int(dtypes::int64, rv)}};
        EXPECT_EQ(eval_int(substitute(a, at), {{"n", nv}}), eval_int(substitute(b, at), {{"n", nv}}))
            << a->str() << " vs " << b->str() << " at n=" << nv << " i=" << iv << " r=" << rv;
      }
}

TEST(SymShape, DivModByASymbolicDimFoldsLoopIndices) {
  UOpPtr n = cast(var("n", 0, 6), dtypes::int64);
  UOpPtr i = UOp::make(Op::RANGE, dtypes::int64, {const_int(dtypes::int64, 3)}, RangeInfo{0, AxisType::LOOP});
  UOpPtr r = UOp::make(Op::RANGE, dtypes::int64, {n}, RangeInfo{1, AxisType::LOOP});
  UOpPtr x = i * n * 5 + r;  // i*n*5 + r, r < n
  UOpPtr q = alu(Op::IDIV, x, n), m = alu(Op::MOD, x, n);
  EXPECT_EQ(simplify(m).get(), r.get()) << simplify(m)->str();
  EXPECT_EQ(simplify(q).get(), simplify(i * 5).get()) << simplify(q)->str();
  check_same(q, simplify(q), n, i, r);
  check_same(m, simplify(m), n, i, r);
  EXPECT_EQ(simplify(alu(Op::MOD, r, n)).get(), r.get());
  // r + 1 can reach n: not folded
  UOpPtr m1 = alu(Op::MOD, r + 1, n);
  EXPECT_EQ(simplify(m1)->op, Op::MOD);
  check_same(m1, simplify(m1), n, i, r);
}

}  // namespace
}  // namespace tg::ir
