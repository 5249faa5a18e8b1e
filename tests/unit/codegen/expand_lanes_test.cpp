// Lanes -> vectors (codegen/expand_lanes.cpp), on the Emitter directly: lane graphs as an upcast axis makes them,
// against the instructions they must become (derived by hand from each case's indices): consecutive loads are one
// vector load, strided ones a gather, two consecutive halves two half-width loads joined (four runs four), one value
// shared by every lane a scalar, isomorphic ALU lanes one vector op, consecutive stores one vector store (vector_store,
// expand.hpp), strided ones a store per lane of the vector values; lanes of a width the renderer does not take stay
// scalars. VectorizeRules.*: the rules themselves (expand.hpp), graph in, graph out: vector loads, ALU ops and REDUCEs,
// ops per lane on lanes of vectorized sources, two half vectors, packed loads whole or from bytes.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/emitter.hpp"
#include "codegen/expand.hpp"
#include "runtime/device.hpp"

namespace tg::codegen {

using namespace ir;
namespace {

const DType f32 = dtypes::float32, i64 = dtypes::int64;

// A renderer with float32 vectors of 2, 4 and 8 lanes (and every op), to derive expectations from.
tg_renderer_caps caps_with_widths(uint32_t widths) {
  tg_renderer_caps caps = rt::Device::get("CPU").caps();
  caps.vector_widths[dt(f32)] = widths;
  return caps;
}

struct Lowered {
  KirProgram k;
  tg_renderer_caps caps;
  Emitter e;
  explicit Lowered(uint32_t widths = 1u << 2 | 1u << 4 | 1u << 8) : caps(caps_with_widths(widths)), e(k, caps, {}) {}
  int count(tg_kir_op op, int vcount = -1) const {
    return static_cast<int>(std::count_if(k.insts.begin(), k.insts.end(), [&](const tg_kir_inst& in) {
      return in.op == op && (vcount < 0 || in.vcount == vcount);
    }));
  }
};

UOpPtr param(int64_t i) { return UOp::make(Op::PARAM, f32, {}, i); }
UOpPtr load(int64_t buffer, int64_t index) { return UOp::make(Op::LOAD, f32, {param(buffer), const_int(i64, index)}); }
std::vector<UOpPtr> loads(int64_t buffer, std::initializer_list<int64_t> indices) {
  std::vector<UOpPtr> v;
  for (int64_t i : indices) v.push_back(load(buffer, i));
  return v;
}

TEST(ExpandLanes, ConsecutiveLoadsAreOneVectorLoad) {
  Lowered l;
  const Emitter::Lanes v = l.e.emit_lanes(loads(1, {8, 9, 10, 11}));
  EXPECT_EQ(v.vcount, 4);
  EXPECT_EQ(l.count(TG_KIR_LOAD, 4), 1);
  EXPECT_EQ(l.count(TG_KIR_LOAD, 1), 0);
}

TEST(ExpandLanes, StridedLoadsAreGathered) {
  Lowered l;
  l.e.emit_lanes(loads(1, {0, 2, 4, 6}));
  EXPECT_EQ(l.count(TG_KIR_LOAD, 1), 4);
  EXPECT_EQ(l.count(TG_KIR_VECTORIZE, 4), 1);
}

TEST(ExpandLanes, TwoConsecutiveHalvesAreTwoHalfLoads) {
  Lowered l;
  l.e.emit_lanes(loads(1, {0, 1, 10, 11}));
  EXPECT_EQ(l.count(TG_KIR_LOAD, 2), 2);
  EXPECT_EQ(l.count(TG_KIR_LOAD, 1), 0);
  EXPECT_EQ(l.count(TG_KIR_VECTORIZE, 4), 1);
}

// 16 lanes in 4 runs of 4 consecutive loads (two nibble formats' blocks: each block's 4 words, then the same words
// again, shifted): the halves are not one access each, the quarters are: four 4-lane loads joined, no scalar load.
TEST(ExpandLanes, FourRunsOfConsecutiveLoadsAreFourQuarterLoads) {
  Lowered l(1u << 2 | 1u << 4 | 1u << 8 | 1u << 16);
  l.e.emit_lanes(loads(1, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33}));
  EXPECT_EQ(l.count(TG_KIR_LOAD, 4), 4);
  EXPECT_EQ(l.count(TG_KIR_LOAD, 1), 0);
  EXPECT_EQ(l.count(TG_KIR_VECTORIZE, 16), 1);
}

TEST(ExpandLanes, OneValueInEveryLaneIsAScalar) {
  Lowered l;
  const Emitter::Lanes v = l.e.emit_lanes(loads(1, {5, 5, 5, 5}));
  EXPECT_EQ(v.vcount, 1);
  EXPECT_EQ(l.count(TG_KIR_LOAD), 1);
}

TEST(ExpandLanes, IsomorphicAluLanesAreOneVectorOp) {
  Lowered l;
  std::vector<UOpPtr> lanes;
  for (int64_t i = 0; i < 4; ++i) lanes.push_back(alu(Op::MUL, load(1, i), load(2, 4 + i)));
  l.e.emit_lanes(lanes);
  EXPECT_EQ(l.count(TG_KIR_MUL, 4), 1);
  EXPECT_EQ(l.count(TG_KIR_LOAD, 4), 2);
}

TEST(ExpandLanes, ConsecutiveStoresAreOneVectorStore) {
  Lowered l;
  std::vector<UOpPtr> stores;
  for (int64_t i = 0; i < 4; ++i)
    stores.push_back(UOp::make(Op::STORE, f32, {param(0), const_int(i64, 12 + i), load(1, i)}));
  const std::vector<UOpPtr> stmts = vector_store(stores, l.caps);
  ASSERT_EQ(stmts.size(), 1u);
  EXPECT_EQ(stmts[0]->src[2]->op, Op::VECTORIZE);
  l.e.emit(stmts[0]);
  EXPECT_EQ(l.count(TG_KIR_STORE, 4), 1);
  EXPECT_EQ(l.count(TG_KIR_LOAD, 4), 1);
}

TEST(ExpandLanes, StridedStoresAreOneStorePerLaneOfVectorValues) {
  Lowered l;
  std::vector<UOpPtr> stores;
  for (int64_t i = 0; i < 4; ++i)
    stores.push_back(UOp::make(Op::STORE, f32, {param(0), const_int(i64, 3 * i), load(1, i)}));
  const std::vector<UOpPtr> stmts = vector_store(stores, l.caps);
  ASSERT_EQ(stmts.size(), 4u);
  for (const auto& st : stmts) l.e.emit(st);
  EXPECT_EQ(l.count(TG_KIR_STORE, 1), 4);
  EXPECT_EQ(l.count(TG_KIR_STORE, 4), 0);
  EXPECT_EQ(l.count(TG_KIR_LOAD, 4), 1) << "the values are still one vector load, each store takes its lane";
}

TEST(ExpandLanes, AWidthTheRendererLacksIsNeverMade) {
  Lowered l(1u << 2);  // pairs only
  l.e.emit_lanes(loads(1, {0, 1, 2, 3}));
  EXPECT_EQ(l.count(TG_KIR_LOAD, 4), 0);
  EXPECT_EQ(l.count(TG_KIR_VECTORIZE, 4), 0);
  EXPECT_EQ(l.count(TG_KIR_LOAD, 1), 4) << "4 lanes the renderer cannot hold as a vector stay scalars";
}

// The vectorize rules (expand.hpp) on the graph, before any instruction: what each VECTORIZE becomes.
UOpPtr vectorize_of(const std::vector<UOpPtr>& lanes) {
  return UOp::make(Op::VECTORIZE, lanes[0]->dtype.vec(static_cast<int>(lanes.size())), lanes);
}

TEST(VectorizeRules, ConsecutiveLoadsBecomeOneVectorLoad) {
  const UOpPtr v = Vectorizer(caps_with_widths(1u << 4))(vectorize_of(loads(1, {8, 9, 10, 11})));
  ASSERT_EQ(v->op, Op::LOAD);
  EXPECT_EQ(v->dtype, f32.vec(4));
  EXPECT_EQ(v->src[1]->arg_int(), 8);
}

TEST(VectorizeRules, AluLanesBecomeOneOpOnVectorizedSources) {
  std::vector<UOpPtr> lanes;
  for (int64_t i = 0; i < 4; ++i) lanes.push_back(alu(Op::MUL, load(1, i), load(2, 7)));
  const UOpPtr v = Vectorizer(caps_with_widths(1u << 4))(vectorize_of(lanes));
  ASSERT_EQ(v->op, Op::MUL);
  EXPECT_EQ(v->dtype, f32.vec(4));
  EXPECT_EQ(v->src[0]->op, Op::LOAD) << "the first operand's lanes are consecutive: one vector load";
  EXPECT_EQ(v->src[1]->op, Op::VECTORIZE) << "the second is one value in every lane: a broadcast";
}

TEST(VectorizeRules, ReducesOverTheSameLoopBecomeOneVectorReduce) {
  const UOpPtr r = UOp::make(Op::RANGE, i64, {const_int(i64, 16)}, RangeInfo{0, AxisType::REDUCE});
  std::vector<UOpPtr> lanes;
  for (int64_t i = 0; i < 4; ++i) {
    const UOpPtr x =
        UOp::make(Op::LOAD, f32, {param(1), alu(Op::ADD, alu(Op::MUL, r, const_int(i64, 4)), const_int(i64, i))});
    lanes.push_back(UOp::make(Op::REDUCE, f32, {x, r}, static_cast<int64_t>(ReduceOp::SUM)));
  }
  const UOpPtr v = Vectorizer(caps_with_widths(1u << 4))(vectorize_of(lanes));
  ASSERT_EQ(v->op, Op::REDUCE);
  EXPECT_EQ(v->dtype, f32.vec(4));
  EXPECT_EQ(v->src[0]->op, Op::LOAD) << "its value's lanes vectorized too";
  EXPECT_EQ(v->src[1].get(), r.get());
}

TEST(VectorizeRules, WhatNoRuleTakesStaysAVectorize) {
  Vectorizer quads(caps_with_widths(1u << 4));
  Vectorizer two(caps_with_widths(1u << 2));
  EXPECT_EQ(two(vectorize_of(loads(1, {0, 1, 2, 3})))->op, Op::VECTORIZE) << "a width the renderer lacks";
  EXPECT_EQ(quads(vectorize_of(loads(1, {0, 2, 4, 6})))->op, Op::VECTORIZE) << "strided loads";
  EXPECT_EQ(quads(vectorize_of(loads(1, {5, 5, 5, 5})))->op, Op::VECTORIZE) << "one value: a broadcast";
  std::vector<UOpPtr> cmps;
  for (int64_t i = 0; i < 4; ++i) cmps.push_back(alu(Op::CMPLT, load(1, i), load(2, i)));
  EXPECT_EQ(quads(vectorize_of(cmps))->op, Op::VECTORIZE) << "bools: renderers share no bool vectors";
}

// A select per lane (no bool vectors): the select stays per lane, on lane l of its sources' VECTORIZEs, which the
// rules take in turn (the loads of its value one vector load); the rule does not take its own result again.
TEST(VectorizeRules, OpsTakenOnlyPerLaneReadLanesOfVectorizedSources) {
  Vectorizer quads(caps_with_widths(1u << 4));
  std::vector<UOpPtr> lanes;
  for (int64_t i = 0; i < 4; ++i)
    lanes.push_back(alu(Op::WHERE, alu(Op::CMPLT, load(1, i), load(2, i)), load(3, i), load(4, 9)));
  const UOpPtr v = quads(vectorize_of(lanes));
  ASSERT_EQ(v->op, Op::VECTORIZE);
  ASSERT_EQ(v->src.size(), 4u);
  for (int64_t l = 0; l < 4; ++l) {
    const UOpPtr& lane = v->src[l];
    ASSERT_EQ(lane->op, Op::WHERE);
    for (size_t i = 0; i < lane->src.size(); ++i) {
      ASSERT_EQ(lane->src[i]->op, Op::GEP);
      EXPECT_EQ(lane->src[i]->arg_int(), l);
      EXPECT_EQ(lane->src[i]->src[0].get(), v->src[0]->src[i]->src[0].get()) << "every lane reads the same vectors";
    }
  }
  EXPECT_EQ(v->src[0]->src[1]->src[0]->op, Op::LOAD) << "the value's lanes: one vector load";
  EXPECT_EQ(v->src[0]->src[1]->src[0]->dtype, f32.vec(4));
  EXPECT_EQ(v->src[0]->src[2]->src[0]->op, Op::VECTORIZE) << "one value in every lane stays a broadcast";
  EXPECT_EQ(v->src[0]->src[0]->src[0]->op, Op::VECTORIZE) << "the comparisons: per lane again, on vector loads";
  EXPECT_EQ(pm_vectorize_for(caps_with_widths(1u << 4)).rewrite(v), nullptr) << "its own result is left alone";
}

// Loads 0, 1, 10, 11: not one access, but each half is: the rule makes a vector of each half (two 2-lane loads) and
// takes the lanes from them, which the renderer joins; it does not take its own result again.
TEST(VectorizeRules, TwoRunsOfConsecutiveLoadsAreTwoHalfVectors) {
  const tg_renderer_caps caps = caps_with_widths(1u << 2 | 1u << 4);
  const UOpPtr v = Vectorizer(caps)(vectorize_of(loads(1, {0, 1, 10, 11})));
  ASSERT_EQ(v->op, Op::VECTORIZE);
  for (int64_t l = 0; l < 4; ++l) {
    const UOpPtr& lane = v->src[l];
    ASSERT_EQ(lane->op, Op::GEP);
    EXPECT_EQ(lane->arg_int(), l % 2);
    ASSERT_EQ(lane->src[0]->op, Op::LOAD) << "each half one 2-lane load";
    EXPECT_EQ(lane->src[0]->dtype, f32.vec(2));
    EXPECT_EQ(lane->src[0]->src[1]->arg_int(), l < 2 ? 0 : 10);
  }
  EXPECT_EQ(pm_vectorize_for(caps).rewrite(v), nullptr);
  EXPECT_EQ(Vectorizer(caps_with_widths(1u << 4))(vectorize_of(loads(1, {0, 1, 10, 11})))->src[0]->op, Op::LOAD)
      << "without vectors of 2 the halves stay scalar loads";
}

// Packed loads (4 bytes of a uint8 buffer read as an int32) 4 bytes apart: one vector load where the renderer reads
// packed values whole, else each lane from its bytes (byte loads, shifts, ORs), which the rules take in turn.
TEST(VectorizeRules, PackedLoadsAreOneLoadOrReadFromBytes) {
  const DType i32 = dtypes::int32;
  std::vector<UOpPtr> lanes;
  for (int64_t l = 0; l < 4; ++l)
    lanes.push_back(
        UOp::make(Op::LOAD, i32, {UOp::make(Op::PARAM, dtypes::uint8, {}, int64_t{1}), const_int(i64, 8 + 4 * l)}));
  tg_renderer_caps caps = rt::Device::get("CPU").caps();
  caps.vector_widths[dt(i32)] |= 1u << 4;
  caps.packed_loads |= 1u << dt(i32);
  const UOpPtr whole = Vectorizer(caps)(vectorize_of(lanes));
  ASSERT_EQ(whole->op, Op::LOAD);
  EXPECT_EQ(whole->dtype, i32.vec(4));
  EXPECT_EQ(whole->src[1]->arg_int(), 8);
  caps.packed_loads &= ~(1u << dt(i32));
  const UOpPtr bytes = Vectorizer(caps)(vectorize_of(lanes));
  EXPECT_NE(bytes->op, Op::LOAD);
  EXPECT_NE(bytes->op, Op::VECTORIZE) << "the bytes' lanes through the rules in turn: one vector op of them";
  EXPECT_EQ(bytes->dtype, i32.vec(4));
  size_t byte_loads = 0;
  for (const UOp* n : toposort(std::vector<UOpPtr>{bytes}))
    byte_loads += n->op == Op::LOAD && n->dtype.scalar == dtypes::uint8.scalar;
  EXPECT_GE(byte_loads, 4u) << "read as bytes";
}

}  // namespace
}  // namespace tg::codegen
