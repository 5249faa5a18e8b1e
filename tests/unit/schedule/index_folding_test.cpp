// Index folding (schedule/index_folding.cpp): each movement op's rule, evaluated at every output position
// against hand-computed numpy-style source positions; then movement-heavy programs against float64 host loops.
#include "schedule/index_folding.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>

#include "ir/pattern_matcher.hpp"
#include "tg/tensor.hpp"

namespace tg {
namespace {

using ir::Op;
using ir::UOpPtr;
using Pos = std::vector<int64_t>;
using Vars = std::vector<std::pair<std::string, int64_t>>;

Pos unravel(int64_t flat, const Shape& s) {
  Pos p(s.size());
  for (size_t d = s.size(); d-- > 0;) p[d] = flat % s[d], flat /= s[d];
  return p;
}
int64_t ravel(const Pos& p, const Shape& s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + p[d];
  return f;
}
int64_t numel(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

// A realized source tensor (a BUFFER node), so the op under test is applied to it directly.
Tensor source(const Shape& s) { return Tensor::from_vector(std::vector<float>(static_cast<size_t>(numel(s))), s); }

std::string pos_str(const Pos& p) {
  std::string s = "(";
  for (size_t i = 0; i < p.size(); ++i) s += (i ? ", " : "") + std::to_string(p[i]);
  return s + ")";
}

// Folds `node` as the scheduler does: its dims and offsets through a kdim that turns BINDs into DEFINE_VARs
// (recording the values), one RANGE per output dim (CONST 0 for a size-1 dim).
struct Fold {
  UOpPtr node;
  std::vector<UOpPtr> idx;
  Vars bound;  // what kdim bound, in call order
  std::optional<sched::Folded> folded;

  explicit Fold(const UOpPtr& n) : node(n) {
    sched::KernelDim kdim = [this](const UOpPtr& d) {
      return ir::map_binds(d, [this](const UOpPtr& b) {
        bound.emplace_back(b->src[0]->var().name, b->arg_int());
        return b->src[0];
      });
    };
    ir::Dims out = ir::dims_of(*node);
    for (auto& d : out) d = kdim(d);
    for (size_t i = 0; i < out.size(); ++i) {
      ir::RangeInfo r{static_cast<int64_t>(i), ir::AxisType::GLOBAL};
      UOpPtr range = ir::UOp::make(Op::RANGE, dtypes::int64, {out[i]}, r);
      idx.push_back(ir::is_one(out[i]) ? ir::const_int(dtypes::int64, 0) : range);
    }
    folded = sched::fold_index(*node, idx, out, kdim);
  }

  // e at output position p (RANGEs replaced by p, variables by vars), by plain evaluation (not the simplifier)
  std::optional<int64_t> at(const UOpPtr& e, const Pos& p, const Vars& vars) const {
    std::vector<std::pair<const ir::UOp*, UOpPtr>> map;
    for (size_t d = 0; d < idx.size(); ++d)
      if (idx[d]->op == Op::RANGE) map.emplace_back(idx[d].get(), ir::const_int(dtypes::int64, p[d]));
    return ir::eval_int(ir::substitute(e, map), vars);
  }
};

// The source position read at output position p, or nullopt where p is padding.
using Expected = std::function<std::optional<Pos>(const Pos&)>;

// Every output position of the node's shape: the folded index (and PAD's condition) against `expect`.
::testing::AssertionResult folds_to(const Fold& f, const Expected& expect, const Vars& vars = {}) {
  if (!f.folded) return ::testing::AssertionFailure() << ir::op_name(f.node->op) << " did not fold";
  const Shape& shape = f.node->shape;
  std::ostringstream bad;
  int64_t mismatches = 0;
  for (int64_t flat = 0; flat < numel(shape); ++flat) {
    Pos p = unravel(flat, shape);
    std::optional<Pos> want = expect(p);
    std::optional<int64_t> valid = f.folded->cond ? f.at(f.folded->cond, p, vars) : std::optional<int64_t>(1);
    Pos got;
    bool ok = valid && *valid == (want ? 1 : 0);
    for (const auto& e : f.folded->idx) {
      std::optional<int64_t> v = f.at(e, p, vars);
      got.push_back(v ? *v : -999);  // an index that does not evaluate is wrong everywhere
      ok &= v.has_value();
    }
    if (want) ok &= got == *want;
    if (ok) continue;
    if (mismatches++ < 6)
      bad << "\n  out " << pos_str(p) << ": got " << pos_str(got) << (valid && *valid ? "" : " (padding)")
          << ", expected " << (want ? pos_str(*want) : "padding");
  }
  if (!mismatches) return ::testing::AssertionSuccess();
  std::ostringstream idx;
  for (const auto& e : f.folded->idx) idx << "\n  " << e->str(8);
  return ::testing::AssertionFailure() << ir::op_name(f.node->op) << " " << shape_str(shape) << ": " << mismatches
                                       << " positions differ:" << bad.str() << "\nfolded index:" << idx.str();
}

TEST(IndexFolding, PermuteReadsTheSourceAtThePermutedIndex) {
  Fold f(source({2, 3, 4}).permute({2, 0, 1}).node());
  ASSERT_EQ(f.node->op, Op::PERMUTE);
  // output (i, j, k) of shape (4, 2, 3) reads source (j, k, i)
  EXPECT_TRUE(folds_to(f, [](const Pos& p) { return Pos{p[1], p[2], p[0]}; }));
  EXPECT_FALSE(f.folded->cond);
  EXPECT_FALSE(f.folded->expanded);
}

TEST(IndexFolding, ReshapeUnravelsTheRowMajorPosition) {
  Fold split(source({24}).reshape(Shape{2, 3, 4}).node());
  ASSERT_EQ(split.node->op, Op::RESHAPE);
  EXPECT_TRUE(folds_to(split, [](const Pos& p) { return Pos{p[0] * 12 + p[1] * 4 + p[2]}; }));
  Fold merge(source({2, 3, 4}).reshape(Shape{6, 4}).node());
  EXPECT_TRUE(folds_to(merge, [](const Pos& p) { return Pos{p[0] / 3, p[0] % 3, p[1]}; }));
  Fold regroup(source({4, 6}).reshape(Shape{3, 8}).node());
  EXPECT_TRUE(folds_to(regroup, [](const Pos& p) {
    int64_t flat = p[0] * 8 + p[1];
    return Pos{flat / 6, flat % 6};
  }));
}

TEST(IndexFolding, ReshapeWithASizeOneDim) {
  Fold out1(source({6}).reshape(Shape{2, 1, 3}).node());
  EXPECT_TRUE(folds_to(out1, [](const Pos& p) { return Pos{p[0] * 3 + p[2]}; }));
  Fold in1(source({2, 1, 3}).reshape(Shape{6}).node());
  EXPECT_TRUE(folds_to(in1, [](const Pos& p) { return Pos{p[0] / 3, 0, p[0] % 3}; }));
  ASSERT_EQ(in1.folded->idx.size(), 3u);
  EXPECT_EQ(in1.folded->idx[1], ir::const_int(dtypes::int64, 0)) << "a size-1 source dim is read at the constant 0";
}

TEST(IndexFolding, ExpandReadsTheBroadcastDimAtZeroAndSaysSo) {
  Fold f(source({3, 1}).expand(Shape{3, 5}).node());
  ASSERT_EQ(f.node->op, Op::EXPAND);
  EXPECT_TRUE(folds_to(f, [](const Pos& p) { return Pos{p[0], 0}; }));
  EXPECT_TRUE(f.folded->expanded);
  Fold lead(source({1, 4}).expand(Shape{2, 4}).node());
  EXPECT_TRUE(folds_to(lead, [](const Pos& p) { return Pos{0, p[1]}; }));
  EXPECT_TRUE(lead.folded->expanded);
}

TEST(IndexFolding, PadConditionIsFalseExactlyOnThePadding) {
  Fold f(source({2, 3, 4}).pad({{1, 0}, {0, 2}, {3, 1}}).node());
  ASSERT_EQ(f.node->op, Op::PAD);
  ASSERT_TRUE(f.folded && f.folded->cond);
  // output (3, 5, 8); source (i - 1, j, k - 3) inside 0 <= i-1 < 2, j < 3, 0 <= k-3 < 4
  EXPECT_TRUE(folds_to(f, [](const Pos& p) -> std::optional<Pos> {
    Pos s{p[0] - 1, p[1], p[2] - 3};
    if (s[0] < 0 || s[0] >= 2 || s[1] >= 3 || s[2] < 0 || s[2] >= 4) return std::nullopt;
    return s;
  }));
  EXPECT_FALSE(f.folded->expanded);
  Fold after(source({2}).pad({{0, 3}}).node());  // only padding after: the condition is one bound
  EXPECT_TRUE(folds_to(after, [](const Pos& p) -> std::optional<Pos> {
    if (p[0] >= 2) return std::nullopt;
    return p;
  }));
}

TEST(IndexFolding, ShrinkOffsetsByTheStart) {
  Fold f(source({2, 3, 4}).shrink({{1, 2}, {0, 3}, {1, 4}}).node());
  ASSERT_EQ(f.node->op, Op::SHRINK);
  EXPECT_TRUE(folds_to(f, [](const Pos& p) { return Pos{p[0] + 1, p[1], p[2] + 1}; }));
}

TEST(IndexFolding, FlipMirrorsTheFlippedAxes) {
  Fold f(source({2, 3, 4}).flip({0, 2}).node());
  ASSERT_EQ(f.node->op, Op::FLIP);
  EXPECT_TRUE(folds_to(f, [](const Pos& p) { return Pos{1 - p[0], p[1], 3 - p[2]}; }));
  EXPECT_FALSE(f.folded->cond);
}

TEST(IndexFolding, ShrinkAtAVariableStartReadsFromTheVariable) {
  Variable pos("start_pos", 0, 14);
  Fold f(source({16, 8}).shrink(0, pos.bind(5), 2).node());
  ASSERT_EQ(f.node->op, Op::SHRINK_VAR);
  EXPECT_EQ(f.bound, (Vars{{"start_pos", 5}})) << "the start goes through kdim";
  // the folded index is the variable, not its value: the same kernel reads (i + p, j) for every p
  for (int64_t p : {5, 0, 14})
    EXPECT_TRUE(folds_to(f, [p](const Pos& o) { return Pos{o[0] + p, o[1]}; }, {{"start_pos", p}}))
        << "start_pos=" << p;
}

TEST(IndexFolding, PadAtAVariableOffsetIsValidOnlyOnTheSourceRows) {
  Variable pos("start_pos", 0, 8);
  Fold f(source({2, 3}).pad(0, pos.bind(4), 10).node());
  ASSERT_EQ(f.node->op, Op::PAD_VAR);
  ASSERT_TRUE(f.folded && f.folded->cond);
  for (int64_t p : {4, 0, 8})
    EXPECT_TRUE(folds_to(f,
                         [p](const Pos& o) -> std::optional<Pos> {
                           if (o[0] < p || o[0] >= p + 2) return std::nullopt;
                           return Pos{o[0] - p, o[1]};
                         },
                         {{"start_pos", p}}))
        << "start_pos=" << p;
}

TEST(IndexFolding, OtherOpsAreNotFolded) {
  Tensor a = source({2, 3});
  for (const Tensor& t : {a, a + a, a.sum({1}, true)}) {
    Fold f(t.node());
    EXPECT_FALSE(f.folded) << ir::op_name(t.node()->op);
  }
}

// ---- end to end: movement-heavy programs against float64 host loops ------------------------------------------

struct Host {
  std::vector<double> v;
  Shape s;
};

// out[p] = in[src(p)], 0 where src gives nullopt
Host remap(const Host& in, const Shape& out, const std::function<std::optional<Pos>(Pos)>& src) {
  Host r{std::vector<double>(static_cast<size_t>(numel(out))), out};
  for (int64_t i = 0; i < numel(out); ++i)
    if (auto q = src(unravel(i, out))) r.v[i] = in.v[ravel(*q, in.s)];
  return r;
}

Host iota_host(const Shape& s) {
  Host h{std::vector<double>(static_cast<size_t>(numel(s))), s};
  for (size_t i = 0; i < h.v.size(); ++i) h.v[i] = 0.25 * static_cast<double>(i) - 3.0;
  return h;
}
Tensor to_tensor(const Host& h) { return Tensor::from_vector(std::vector<float>(h.v.begin(), h.v.end()), h.s); }

::testing::AssertionResult same(Tensor t, const Host& want) {
  if (t.shape() != want.s)
    return ::testing::AssertionFailure() << "shape " << shape_str(t.shape()) << ", expected " << shape_str(want.s);
  std::vector<float> got = t.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i)
    // every value here is a small multiple of 1/4, exact in float32; the bound only absorbs a reordered sum
    if (std::abs(got[i] - want.v[i]) > 1e-5 * (1 + std::abs(want.v[i])))
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", expected " << want.v[i];
  return ::testing::AssertionSuccess();
}

TEST(IndexFoldingEndToEnd, PermutePadFlipShrinkReshapeChain) {
  Host x = iota_host({2, 3, 4});
  Tensor y =
      to_tensor(x).permute({2, 0, 1}).pad({{1, 1}, {0, 1}, {2, 0}}).flip({1}).shrink({{1, 5}, {0, 3}, {1, 5}}) * 2.0;
  // permute: (4, 2, 3) reads (j, k, i); pad: (6, 3, 5); flip axis 1; shrink to (4, 3, 4) from (1, 0, 1)
  Host want = remap(x, {4, 3, 4}, [](Pos p) -> std::optional<Pos> {
    Pos q{p[0] + 1, 2 - p[1], p[2] + 1};  // undo shrink, then flip (padded dim 1 has size 3)
    Pos u{q[0] - 1, q[1], q[2] - 2};      // undo pad
    if (u[0] < 0 || u[0] >= 4 || u[1] >= 2 || u[2] < 0 || u[2] >= 3) return std::nullopt;
    return Pos{u[1], u[2], u[0]};  // undo permute
  });
  for (auto& v : want.v) v *= 2.0;
  EXPECT_TRUE(same(y, want));
  EXPECT_TRUE(same(y.reshape(Shape{6, 8}), Host{want.v, {6, 8}}));
}

TEST(IndexFoldingEndToEnd, ExpandedReshapeFeedsAReduction) {
  Host x = iota_host({2, 3, 4});
  // (2, 1, 3, 4) broadcast to (2, 5, 3, 4), times a (5, 1, 1) weight, summed over axis 1
  Tensor w = Tensor::from_vector(std::vector<float>{1, -2, 0.5f, 3, -1}, {5, 1, 1});
  Tensor y = (to_tensor(x).reshape(Shape{2, 1, 3, 4}).expand(Shape{2, 5, 3, 4}) * w).sum({1});
  Host want{std::vector<double>(24), {2, 3, 4}};
  for (size_t i = 0; i < 24; ++i) want.v[i] = x.v[i] * (1 - 2 + 0.5 + 3 - 1);
  EXPECT_TRUE(same(y, want));
  // the transposed sum of a padded view: sum over the padded axis of x^T
  Tensor z = to_tensor(x).permute({0, 2, 1}).pad({{0, 0}, {1, 2}, {0, 0}}).sum({1});
  Host zw{std::vector<double>(6), {2, 3}};
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t k = 0; k < 4; ++k) zw.v[a * 3 + c] += x.v[ravel({a, c, k}, x.s)];
  EXPECT_TRUE(same(z, zw));
}

TEST(IndexFoldingEndToEnd, VariableShrinkThenVariablePad) {
  Host x = iota_host({10, 3});
  Variable pos("start_pos", 0, 8);
  for (int64_t p : {0, 3, 8}) {
    // rows [p, p + 2) moved to rows [9 - p - 1, 9 - p + 1) of a 10-row tensor, then flipped
    Tensor y = to_tensor(x).shrink(0, pos.bind(p), 2).pad(0, pos.bind(p), 10).flip({0});
    Host want = remap(x, {10, 3}, [p](Pos o) -> std::optional<Pos> {
      int64_t r = 9 - o[0] - p;
      if (r < 0 || r >= 2) return std::nullopt;
      return Pos{r + p, o[1]};
    });
    EXPECT_TRUE(same(y, want)) << "start_pos=" << p;
  }
}

}  // namespace
}  // namespace tg
