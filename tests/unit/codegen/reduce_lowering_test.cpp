// Reduce lowering (codegen/reduce_lowering.cpp), on the Emitter directly: every REDUCE becomes one accumulator
// (a register array read and written once per iteration of its loop); UNROLL's lanes make it a vector folded after
// the loop; MIN is -max(-acc, -v) (no MIN instruction); a SUM of products is one FMA per step where the renderer
// takes FMA, a multiply and an add where it does not; unrolled ranges are combined in straight-line code. The
// expected instruction counts are derived by hand from each graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "codegen/emitter.hpp"
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
  void emit(const UOpPtr& u) {
    Emitter e(k, caps, {});
    e.unroll_by(&unrolls);
    e.emit(u);
  }
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
  EXPECT_EQ(l.count(TG_KIR_STORE), 2) << "the identity, then each step";
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

TEST(ReduceLowering, AnUnrolledRangeIsCombinedInStraightLineCode) {
  Lowered l;
  const UOpPtr u = range(4, 0, AxisType::UNROLL);
  l.emit(reduce(ReduceOp::MAX, load(1, u), u));
  EXPECT_EQ(l.count(TG_KIR_RANGE), 0) << "no loop";
  EXPECT_EQ(l.count(TG_KIR_DEFINE_REG), 0) << "no accumulator";
  EXPECT_EQ(l.count(TG_KIR_MAX), 3);
  EXPECT_EQ(l.count(TG_KIR_LOAD), 4);
}

}  // namespace
}  // namespace tg::codegen
