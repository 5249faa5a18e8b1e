// Reduce lowering (codegen/reduce_lowering.cpp), the step then the Emitter: every REDUCE becomes one accumulator
// (a register array read and written once per iteration of its loop); UNROLL's lanes (pm_unroll_reduces) make it a
// vector folded after the loop; MIN is -max(-acc, -v) (no MIN instruction); a SUM of products is one FMA per step where the renderer
// takes FMA, a multiply and an add where it does not; unrolled ranges are combined in straight-line code; a vector
// REDUCE (the vectorize rules' of output lanes) is one accumulator of its lanes, and several over one loop share it.
// The expected instruction counts are derived by hand from each graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "codegen/emitter.hpp"
#include "codegen/expand.hpp"
#include "codegen/reduce_lowering.hpp"
#include "runtime/device.hpp"

namespace tg::codegen {
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
      stores.push_back(UOp::make(Op::STORE, values[i]->dtype, {UOp::make(Op::PARAM, values[i]->dtype, {}, int64_t{100 + static_cast<int64_t>(i)}), const_int(i64, 0), values[i]}));
    const UOpPtr sink = rewrite(UOp::make(Op::SINK, dtypes::bool_, stores), pm_unroll_reduces(caps, &unrolls), {.converge_check = true});
    Emitter e(k, caps, {});
    const UOpPtr lowered = lower_reduces(sink, caps);
    for (const auto& st : lowered->src) e.emit(st);
  }
  void emit(const UOpPtr& u) { emit(std::vector<UOpPtr>{u}); }
};

UOpPtr range(int64_t n, int64_t id, AxisType t = AxisType::REDUCE) {
  return UOp::make(Op::RANGE, i64, {const_int(i64, n)}, RangeInfo{id, t});
}
UOpPtr load(int64_t buffer, const UOpPtr& index) { return UOp::make(Op::LOAD, f32, {UOp::make(Op::PARAM, f32, {}, buffer), index}); }
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

}  // namespace
}  // namespace tg::codegen
