// Reduce lowering (codegen/reduce_lowering.cpp), the step then the Emitter: every REDUCE becomes one accumulator
// (a register array read and written once per iteration of its loop); UNROLL's lanes (pm_unroll_reduces) make it a
// vector folded after the loop; MIN is -max(-acc, -v) (no MIN instruction); a SUM of products is one FMA per step where
// the renderer takes FMA, a multiply and an add where it does not; unrolled ranges are combined in straight-line code;
// a vector REDUCE (the vectorize rules' of output lanes) is one accumulator of its lanes, and several over one loop
// share it. The expected instruction counts are derived by hand from each graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "codegen/emitter.hpp"
#include "codegen/expand.hpp"
#include "codegen/fma.hpp"
#include "codegen/reduce_lowering.hpp"
#include "runtime/device.hpp"

namespace tg::codegen {

using namespace ir;
namespace {

const DType f32 = dtypes::float32, i64 = dtypes::int64;

struct Lowered {
  KirProgram k;
  tg_renderer_caps caps = rt::Device::get("CPU").caps();
  std::map<const UOp*, int> unrolls;  // none unless a test adds one
  int count(tg_kir_op op, int vcount = -1) const {
    return static_cast<int>(std::count_if(k.insts.begin(), k.insts.end(), [&](const tg_kir_inst& in) {
      return in.op == op && (vcount < 0 || in.vcount == vcount);
    }));
  }
  // the steps as the pipeline runs them: UNROLL, lower_reduces (one sink of the statements), then the Emitter
  void emit(const std::vector<UOpPtr>& values) {
    std::vector<UOpPtr> stores;
    for (size_t i = 0; i < values.size(); ++i)
      stores.push_back(UOp::make(Op::STORE, values[i]->dtype,
                                 {UOp::make(Op::PARAM, values[i]->dtype, {}, int64_t{100 + static_cast<int64_t>(i)}),
                                  const_int(i64, 0), values[i]}));
    const UOpPtr sink = rewrite(UOp::make(Op::SINK, dtypes::bool_, stores), pm_unroll_reduces(caps, &unrolls),
                                {.converge_check = true});
    Emitter e(k, caps, {});
    const UOpPtr lowered = lower_reduces(sink, caps);
    for (const auto& st : lowered->src) e.emit(st);
  }
  void emit(const UOpPtr& u) { emit(std::vector<UOpPtr>{u}); }
};

UOpPtr range(int64_t n, int64_t id, AxisType t = AxisType::REDUCE) {
  return UOp::make(Op::RANGE, i64, {const_int(i64, n)}, RangeInfo{id, t});
}
UOpPtr load(int64_t buffer, const UOpPtr& index) {
  return UOp::make(Op::LOAD, f32, {UOp::make(Op::PARAM, f32, {}, buffer), index});
}
UOpPtr reduce(ReduceOp op, const UOpPtr& value, const UOpPtr& r) {
  return UOp::make(Op::REDUCE, f32, {value, r}, static_cast<int64_t>(op));
}

TEST(ReduceLowering, AScalarSumIsOneAccumulatorInOneLoop) {
  Lowered l;
  const UOpPtr r = range(64, 0);
  l.emit(reduce(ReduceOp::SUM, load(1, r), r));
  EXPECT_EQ(l.count(TG_KIR_DEFINE_REG), 1);
  EXPECT_EQ(l.count(TG_KIR_RANGE), 1);
  EXPECT_EQ(l.count(TG_KIR_ADD, 1), 1) << "one combine per iteration";
  EXPECT_EQ(l.count(TG_KIR_STORE), 3) << "the identity, then each step; the result";
}

TEST(ReduceLowering, UnrollMakesAVectorAccumulatorFoldedAfterTheLoop) {
  Lowered l;
  const UOpPtr r = range(64, 0);
  const UOpPtr sum = reduce(ReduceOp::SUM, load(1, r), r);
  l.unrolls[r.get()] = 8;
  l.emit(sum);
  EXPECT_EQ(l.count(TG_KIR_LOAD, 8), 3) << "the accumulator and 8 consecutive values per step, the accumulator after";
  EXPECT_EQ(l.count(TG_KIR_ADD, 8), 1);
  EXPECT_EQ(l.count(TG_KIR_GEP), 8) << "the lanes folded after the loop";
  EXPECT_EQ(l.count(TG_KIR_ADD, 1), 7);
}

TEST(ReduceLowering, MinIsTheNegatedMaxOfNegations) {
  Lowered l;
  const UOpPtr r = range(16, 0);
  l.emit(reduce(ReduceOp::MIN, load(1, r), r));
  EXPECT_EQ(l.count(TG_KIR_MAX), 1);
  EXPECT_GE(l.count(TG_KIR_NEG), 3) << "-max(-acc, -v)";
}

TEST(ReduceLowering, ASumOfProductsIsAnFmaWhereTheRendererTakesIt) {
  const UOpPtr r = range(32, 0);
  const UOpPtr dot = reduce(ReduceOp::SUM, alu(Op::MUL, load(1, r), load(2, r)), r);
  Lowered with;
  with.caps.ops[dt(f32)] |= 1ull << TG_KIR_FMA;
  with.emit(dot);
  EXPECT_EQ(with.count(TG_KIR_FMA), 1);
  EXPECT_EQ(with.count(TG_KIR_MUL), 0);
  Lowered without;
  without.caps.ops[dt(f32)] &= ~(1ull << TG_KIR_FMA);
  without.emit(dot);
  EXPECT_EQ(without.count(TG_KIR_FMA), 0);
  EXPECT_EQ(without.count(TG_KIR_MUL), 1);
  EXPECT_EQ(without.count(TG_KIR_ADD), 1);
}

// Only a SUM of products takes the FMA path; any other combine of a product goes through the ALU lowering, which
// spells an integer MIN as a select (-max(-a, -b) is wrong for unsigned values and overflows at INT_MIN).
TEST(ReduceLowering, AMinOfIntegerProductsIsASelect) {
  Lowered l;
  const DType i32 = dtypes::int32;
  const UOpPtr r = range(16, 0);
  auto iload = [&](int64_t b) { return UOp::make(Op::LOAD, i32, {UOp::make(Op::PARAM, i32, {}, b), r}); };
  l.emit(UOp::make(Op::REDUCE, i32, {alu(Op::MUL, iload(1), iload(2)), r}, static_cast<int64_t>(ReduceOp::MIN)));
  EXPECT_EQ(l.count(TG_KIR_WHERE), 1);
  EXPECT_EQ(l.count(TG_KIR_NEG), 0);
  EXPECT_EQ(l.count(TG_KIR_MAX), 0);
}

TEST(ReduceLowering, AnUnrolledRangeIsCombinedInStraightLineCode) {
  Lowered l;
  const UOpPtr u = range(4, 0, AxisType::UNROLL);
  l.emit(reduce(ReduceOp::MAX, load(1, u), u));
  EXPECT_EQ(l.count(TG_KIR_RANGE), 0) << "no loop";
  EXPECT_EQ(l.count(TG_KIR_DEFINE_REG), 0) << "no accumulator";
  EXPECT_EQ(l.count(TG_KIR_MAX), 3);
  EXPECT_EQ(l.count(TG_KIR_LOAD), 4);
}

// A REDUCE of 4 float lanes (what the vectorize rules make of 4 output lanes): lane l sums x[4k + l] * y[4k + l].
UOpPtr vector_dot(const UOpPtr& r, int64_t x, int64_t y) {
  std::vector<UOpPtr> xs, ys;
  for (int64_t l = 0; l < 4; ++l) {
    const UOpPtr i = alu(Op::ADD, alu(Op::MUL, r, const_int(i64, 4)), const_int(i64, l));
    xs.push_back(load(1 + x, i)), ys.push_back(load(1 + y, i));
  }
  const UOpPtr prod = alu(Op::MUL, UOp::make(Op::VECTORIZE, f32.vec(4), xs), UOp::make(Op::VECTORIZE, f32.vec(4), ys));
  return UOp::make(Op::REDUCE, f32.vec(4), {prod, r}, static_cast<int64_t>(ReduceOp::SUM));
}

TEST(ReduceLowering, AVectorReduceIsOneAccumulatorOfItsLanes) {
  Lowered l;
  l.caps.ops[dt(f32)] |= 1ull << TG_KIR_FMA;
  l.emit(vector_dot(range(16, 0), 0, 1));
  EXPECT_EQ(l.count(TG_KIR_DEFINE_REG, 4), 1);
  EXPECT_EQ(l.count(TG_KIR_RANGE), 1);
  EXPECT_EQ(l.count(TG_KIR_FMA, 4), 1) << "one 4-lane FMA per step";
  EXPECT_EQ(l.count(TG_KIR_LOAD, 4), 4) << "x and y as vectors, the accumulator each step and after the loop";
}

TEST(ReduceLowering, VectorReducesOverOneLoopShareIt) {
  Lowered l;
  l.caps.ops[dt(f32)] |= 1ull << TG_KIR_FMA;
  const UOpPtr r = range(16, 0);
  l.emit({vector_dot(r, 0, 1), vector_dot(r, 0, 2)});
  EXPECT_EQ(l.count(TG_KIR_RANGE), 1) << "one loop nest for both";
  EXPECT_EQ(l.count(TG_KIR_DEFINE_REG, 4), 2);
  EXPECT_EQ(l.count(TG_KIR_FMA, 4), 2);
  EXPECT_EQ(l.count(TG_KIR_LOAD, 4), 3 + 4) << "x once for both, y and z; each accumulator per step and after";
}

// The step's graph: no REDUCE is left; each is a register, its identity stored, one END of its step, a read after it.
TEST(ReduceLowering, TheStepLeavesRegistersStoresAndEndsOnly) {
  const tg_renderer_caps caps = rt::Device::get("CPU").caps();
  const UOpPtr r = range(64, 0);
  const UOpPtr sink = UOp::make(Op::SINK, dtypes::bool_,
                                {UOp::make(Op::STORE, f32,
                                           {UOp::make(Op::PARAM, f32, {}, int64_t{0}), const_int(i64, 0),
                                            reduce(ReduceOp::MAX, load(1, r), r)})});
  std::map<Op, int> ops;
  const UOpPtr lowered = lower_reduces(sink, caps);  // (toposort's pointers live as long as it does)
  for (const UOp* n : toposort(std::vector<UOpPtr>{lowered})) ++ops[n->op];
  EXPECT_EQ(ops[Op::REDUCE], 0);
  EXPECT_EQ(ops[Op::DEFINE_REG], 1);
  EXPECT_EQ(ops[Op::END], 1);
  EXPECT_EQ(ops[Op::AFTER], 2) << "the first read after the identity, the result after the loop";
  EXPECT_EQ(ops[Op::STORE], 3) << "the identity, the step, the output";
  EXPECT_EQ(ops[Op::MAX], 1);
}

// sum_j min_k x[j, k]: the inner accumulator starts again for every j - its identity is stored inside j's loop,
// before k's (stored once before both, every j would continue the previous minimum).
TEST(ReduceLowering, AnInnerReductionStartsInsideTheOuterLoop) {
  Lowered l;
  const UOpPtr j = range(8, 0), k = range(16, 1);
  l.emit(reduce(ReduceOp::SUM, reduce(ReduceOp::MIN, load(1, alu(Op::ADD, alu(Op::MUL, j, const_int(i64, 16)), k)), k),
                j));
  std::vector<size_t> ranges, inits;
  for (size_t i = 0; i < l.k.insts.size(); ++i) {
    const tg_kir_inst& in = l.k.insts[i];
    if (in.op == TG_KIR_RANGE) ranges.push_back(i);
    if (in.op != TG_KIR_STORE) continue;
    const tg_kir_inst& value = l.k.insts[l.k.src_pool[in.src_start + 2]];
    if (value.op == TG_KIR_CONST && std::isinf(value.arg.f)) inits.push_back(i);
  }
  ASSERT_EQ(ranges.size(), 2u);
  ASSERT_EQ(inits.size(), 1u) << "the minimum's identity, +inf";
  EXPECT_GT(inits[0], ranges[0]);
  EXPECT_LT(inits[0], ranges[1]);
}

// A hand-written kernel's END over an UNROLL range writes its statements out once per index by substitution: each
// copy's reduction gets its own register (the register takes the unrolled range as a source), not one shared by all.
TEST(ReduceLowering, EachWrittenOutCopyHasItsOwnAccumulator) {
  Lowered l;
  const UOpPtr u = range(4, 0, AxisType::UNROLL), r = range(16, 1);
  const UOpPtr sum = reduce(ReduceOp::SUM, load(1, alu(Op::ADD, alu(Op::MUL, u, const_int(i64, 16)), r)), r);
  const UOpPtr st = UOp::make(Op::STORE, f32, {UOp::make(Op::PARAM, f32, {}, int64_t{0}), u, sum});
  const UOpPtr sink = UOp::make(Op::SINK, dtypes::bool_, {UOp::make(Op::END, dtypes::bool_, {st, u}, int64_t{1})});
  Emitter e(l.k, l.caps, {});
  const UOpPtr lowered = lower_reduces(sink, l.caps);
  for (const auto& s : lowered->src) e.emit(s);
  EXPECT_EQ(l.count(TG_KIR_DEFINE_REG), 4);
  EXPECT_EQ(l.count(TG_KIR_RANGE), 4);
  EXPECT_EQ(l.count(TG_KIR_STORE), 4 * 3) << "per copy: the identity, the step, the output";
}

// FMA by caps fuses an accumulator's step only: acc + x * y where acc is a register's value; another sum of a product
// keeps its two roundings.
TEST(FmaRules, OnlyAnAccumulatorsStepBecomesAnFma) {
  tg_renderer_caps caps = rt::Device::get("CPU").caps();
  caps.ops[dt(f32)] |= 1ull << TG_KIR_FMA;
  const PatternMatcher fma = pm_fma_for(caps);
  const UOpPtr prod = alu(Op::MUL, load(1, const_int(i64, 0)), load(2, const_int(i64, 0)));
  const UOpPtr reg = UOp::make(Op::DEFINE_REG, f32, {}, std::vector<int64_t>{1, 0});
  const UOpPtr acc = UOp::make(Op::LOAD, f32, {after(reg, {}), const_int(dtypes::int32, 0)});
  const UOpPtr fused = fma.rewrite(alu(Op::ADD, acc, prod));
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->op, Op::FMA);
  EXPECT_EQ(fused->src[2].get(), acc.get());
  EXPECT_EQ(fma.rewrite(alu(Op::ADD, prod, acc))->op, Op::FMA) << "either operand order";
  EXPECT_EQ(fma.rewrite(alu(Op::ADD, load(3, const_int(i64, 0)), prod)), nullptr) << "not an accumulator";
  caps.ops[dt(f32)] &= ~(1ull << TG_KIR_FMA);
  EXPECT_EQ(pm_fma_for(caps).rewrite(alu(Op::ADD, acc, prod)), nullptr) << "a renderer without FMA";
}

}  // namespace
}  // namespace tg::codegen
