// Lanes -> vectors (codegen/expand_lanes.cpp), on the Emitter directly: lane graphs as an upcast axis makes them,
// against the instructions they must become (derived by hand from each case's indices): consecutive loads are one
// vector load, strided ones a gather, two consecutive halves two half-width loads joined, one value shared by every
// lane a scalar, isomorphic ALU lanes one vector op, consecutive stores one vector store (vector_store, expand.hpp),
// strided ones a store per lane of the vector values; lanes of a width the renderer does not take stay scalars.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/emitter.hpp"
#include "codegen/expand.hpp"
#include "runtime/device.hpp"

namespace tg::codegen {
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
  for (int64_t i = 0; i < 4; ++i) stores.push_back(UOp::make(Op::STORE, f32, {param(0), const_int(i64, 12 + i), load(1, i)}));
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
  for (int64_t i = 0; i < 4; ++i) stores.push_back(UOp::make(Op::STORE, f32, {param(0), const_int(i64, 3 * i), load(1, i)}));
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

}  // namespace
}  // namespace tg::codegen
