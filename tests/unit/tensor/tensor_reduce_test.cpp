// Reductions of tg::Tensor (sum/max/min/mean, argmax, softmax, log_softmax) vs plain C++ loops: single, several
// and all axes, keepdim, negative axes, 0-size inputs, accumulation dtypes and NaN/inf propagation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "tensor_test_util.hpp"
#include "test_sweep.hpp"

namespace {

using namespace tgtest;

constexpr uint32_t kSeed = 777001;
const LD kInf = std::numeric_limits<LD>::infinity();
const LD kNaN = std::numeric_limits<LD>::quiet_NaN();

struct Ref {
  Shape shape;
  Vals v;
};

std::vector<int64_t> norm_axes(std::vector<int64_t> axes, int64_t nd) {
  if (axes.empty())
    for (int64_t i = 0; i < nd; ++i) axes.push_back(i);
  for (auto& a : axes) a = a < 0 ? a + nd : a;
  std::sort(axes.begin(), axes.end());
  return axes;
}

// Folds x over `axes` with acc = f(acc, x) starting at init.
Ref reduce_ref(const Vals& x, const Shape& s, const std::vector<int64_t>& axes_in, bool keepdim,
               const std::function<LD(LD, LD)>& f, LD init) {
  int64_t nd = static_cast<int64_t>(s.size());
  auto axes = norm_axes(axes_in, nd);
  Shape keep = s;
  for (int64_t a : axes) keep[a] = 1;
  auto sin = strides_of(s), sk = strides_of(keep);
  Vals out(static_cast<size_t>(numel_of(keep)), init);
  for (int64_t i = 0; i < numel_of(s); ++i) {
    int64_t o = 0;
    for (int64_t d = 0; d < nd; ++d) o += (keep[d] == 1 ? 0 : (i / sin[d]) % s[d]) * sk[d];
    out[o] = f(out[o], x[i]);
  }
  Shape shape;
  for (int64_t d = 0; d < nd; ++d)
    if (keepdim || !std::binary_search(axes.begin(), axes.end(), d)) shape.push_back(keepdim ? keep[d] : s[d]);
  return {shape, out};
}

DType sum_dtype(DType d) {
  if (d.is_bool() || (d.is_signed_int() && d.itemsize() < 4)) return dt::int32;
  if (d.is_unsigned() && d.itemsize() < 4) return dt::uint32;
  return d;
}

LD nan_max(LD a, LD x) { return std::isnan(a) || std::isnan(x) ? kNaN : std::max(a, x); }
LD nan_min(LD a, LD x) { return std::isnan(a) || std::isnan(x) ? kNaN : std::min(a, x); }

Tol sum_tol(DType d) {
  if (d == dt::float32) return {4, 1e-5, 1e-4};
  if (d == dt::float64) return {4, 1e-12, 1e-12};
  return {1, 0, 0};  // float16/bfloat16: accumulated in float32, then rounded once
}

const std::vector<std::pair<std::vector<int64_t>, const char*>> kAxes = {
    {{}, "all"},  {{0}, "0"},      {{1}, "1"},      {{2}, "2"},          {{-1}, "-1"},
    {{-3}, "-3"}, {{0, 2}, "0,2"}, {{2, 0}, "2,0"}, {{-1, -2}, "-1,-2"}, {{0, 1, 2}, "0,1,2"}};

enum class R { Sum, Max, Min, Mean };

void run_reduce(R r, DType d, const Shape& s, const std::vector<int64_t>& axes, bool keepdim, std::mt19937& rng,
                bool full_range = false) {
  Vals x = random_vals(d, numel_of(s), rng, -1, 1);
  if (d.is_int()) x = random_vals(d, numel_of(s), rng, -100, 100);
  if (full_range) {
    std::mt19937_64 r64(rng());
    x = random_bits(d, numel_of(s), r64);
  }
  Tensor t = make(x, s, d);
  Ref ref;
  std::optional<Tensor> got;
  DType od = d;
  Tol tol{};
  switch (r) {
    case R::Sum: {
      od = sum_dtype(d);
      ref = reduce_ref(
          x, s, axes, keepdim,
          [od](LD a, LD v) { return od.is_float() ? a + v : wrap_bits(od, to_bits64(a) + to_bits64(v)); }, 0);
      got = t.sum(axes, keepdim);
      tol = sum_tol(od);
      break;
    }
    case R::Max:
      ref = reduce_ref(x, s, axes, keepdim, nan_max, -kInf);
      got = t.max(axes, keepdim);
      break;
    case R::Min:
      ref = reduce_ref(x, s, axes, keepdim, nan_min, kInf);
      got = t.min(axes, keepdim);
      break;
    case R::Mean: {
      od = d.is_float() ? d : dt::float32;
      ref = reduce_ref(x, s, axes, keepdim, [](LD a, LD v) { return a + v; }, 0);
      LD count = static_cast<LD>(numel_of(s)) / static_cast<LD>(std::max<int64_t>(1, numel_of(ref.shape)));
      for (auto& v : ref.v) v /= count;
      got = t.mean(axes, keepdim);
      tol = d.itemsize() == 2 ? Tol{2, 0, 0} : sum_tol(od);
      break;
    }
  }
  for (auto& v : ref.v) v = round_to(od, v);
  EXPECT_TRUE(check(*got, ref.shape, od, ref.v, tol));
}

const char* rname(R r) { return r == R::Sum ? "sum" : r == R::Max ? "max" : r == R::Min ? "min" : "mean"; }

class ReduceTest : public ::testing::TestWithParam<R> {};

TEST_P(ReduceTest, AxesAndKeepdimOnEveryDtype) {
  R r = GetParam();
  uint32_t seed = kSeed + static_cast<uint32_t>(r);
  std::mt19937 rng(seed);
  SCOPED_TRACE(seed_trace(seed));
  for (DType d : all_dtypes()) {
    if (r == R::Mean && !d.is_float() && d != dt::int32 && d != dt::uint8) continue;
    for (auto& [axes, name] : kAxes) {
      if (!tgtest::swept(d == dt::float32, &axes == &kAxes[0].first)) continue;
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(std::string(rname(r)) + " " + d.name() + " axes " + name + (keepdim ? " keepdim" : ""));
        run_reduce(r, d, {3, 4, 5}, axes, keepdim, rng);
      }
    }
  }
}

TEST_P(ReduceTest, OddShapes) {
  R r = GetParam();
  uint32_t seed = kSeed + 10 + static_cast<uint32_t>(r);
  std::mt19937 rng(seed);
  SCOPED_TRACE(seed_trace(seed));
  struct Case {
    Shape s;
    std::vector<int64_t> axes;
  };
  const std::vector<Case> cases = {
      {{1}, {}},          {{7}, {0}},           {{1000}, {}},     {{33, 7}, {0}}, {{33, 7}, {1}},
      {{1, 7, 33}, {-1}}, {{1, 7, 33}, {0, 2}}, {{5, 1, 3}, {1}}, {{}, {}},       {{2, 3, 4, 5}, {1, 3}}};
  for (DType d : {dt::float32, dt::int32, dt::float16})
    for (auto& c : cases)
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(std::string(rname(r)) + " " + d.name() + " " + tg::shape_str(c.s));
        run_reduce(r, d, c.s, c.axes, keepdim, rng);
      }
}

INSTANTIATE_TEST_SUITE_P(Ops, ReduceTest, ::testing::Values(R::Sum, R::Max, R::Min, R::Mean),
                         [](const ::testing::TestParamInfo<R>& i) { return std::string(rname(i.param)); });

TEST(Sum, IntegerSumsWrapInTheirAccumulator) {
  std::mt19937 rng(kSeed + 20);
  SCOPED_TRACE(seed_trace(kSeed + 20));
  for (DType d : all_dtypes())
    if (d.is_int()) {
      SCOPED_TRACE(d.name());
      run_reduce(R::Sum, d, {4, 50}, {1}, false, rng, true);
      run_reduce(R::Max, d, {4, 50}, {1}, false, rng, true);
      run_reduce(R::Min, d, {4, 50}, {1}, false, rng, true);
    }
}

TEST(Sum, SmallTypesAccumulateWide) {
  // 300 * 100 does not fit int8/int16/uint8; the documented accumulators hold it
  Vals x(300, 100);
  EXPECT_TRUE(check(make(x, {300}, dt::int8).sum(), {}, dt::int32, {30000}));
  EXPECT_TRUE(check(make(Vals(700, 100), {700}, dt::int16).sum(), {}, dt::int32, {70000}));
  EXPECT_TRUE(check(make(Vals(300, 250), {300}, dt::uint8).sum(), {}, dt::uint32, {75000}));
  EXPECT_TRUE(check(make(Vals(1000, 1000), {1000}, dt::uint16).sum(), {}, dt::uint32, {1000000}));
  EXPECT_TRUE(check(make(Vals(1000, 1), {1000}, dt::bool_).sum(), {}, dt::int32, {1000}));
  // float16: 4096 ones summed in half would stall at 2048; a float32 accumulator gives 4096 (exact in half)
  EXPECT_TRUE(check(make(Vals(4096, 1), {4096}, dt::float16).sum(), {}, dt::float16, {4096}));
  EXPECT_TRUE(check(make(Vals(1024, 1), {1024}, dt::bfloat16).sum(), {}, dt::bfloat16, {1024}));
}

TEST(Sum, ZeroSizeReductions) {
  EXPECT_TRUE(check(Tensor::zeros({0}).sum(), {}, dt::float32, {0}));
  EXPECT_TRUE(check(make({}, {0}, dt::int8).sum(), {}, dt::int32, {0}));
  EXPECT_TRUE(check(make({}, {2, 0, 3}, dt::float32).sum({1}), {2, 3}, dt::float32, Vals(6, 0)));
  EXPECT_TRUE(check(make({}, {2, 0, 3}, dt::int64).sum({1}, true), {2, 1, 3}, dt::int64, Vals(6, 0)));
  EXPECT_TRUE(check(make({}, {2, 0, 3}, dt::float32).sum({0}), {0, 3}, dt::float32, {}));
  EXPECT_TRUE(check(make({}, {2, 0, 3}, dt::float32).max({2}), {2, 0}, dt::float32, {}));
  Vals m = read(make({}, {0}, dt::float32).mean());
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(std::isnan(m[0])) << "mean of empty = " << fmt(m[0]);
}

TEST(Reduce, NaNAndInfPropagate) {
  Tensor t = make({1, kNaN, 3, /**/ -kInf, 2, 5, /**/ kInf, 1, -kInf, /**/ kInf, 7, 1}, {4, 3}, dt::float32);
  EXPECT_TRUE(check(t.max({1}), {4}, dt::float32, {kNaN, 5, kInf, kInf}));
  EXPECT_TRUE(check(t.min({1}), {4}, dt::float32, {kNaN, -kInf, -kInf, 1}));
  EXPECT_TRUE(check(t.sum({1}), {4}, dt::float32, {kNaN, -kInf, kNaN, kInf}));
  EXPECT_TRUE(check(t.max(), {}, dt::float32, {kNaN}));
  EXPECT_TRUE(check(t.sum(), {}, dt::float32, {kNaN}));
  for (DType d : {dt::float16, dt::bfloat16, dt::float64}) {
    SCOPED_TRACE(d.name());
    Tensor h = make({1, kNaN, 3, -kInf, 2, 5}, {2, 3}, d);
    EXPECT_TRUE(check(h.max({1}), {2}, d, {kNaN, 5}));
    EXPECT_TRUE(check(h.sum({1}), {2}, d, {kNaN, -kInf}));
  }
  // a NaN first or last in a row, on both paths of a long reduction
  Vals v(1000, 1);
  v[0] = kNaN;
  EXPECT_TRUE(check(make(v, {1000}, dt::float32).max(), {}, dt::float32, {kNaN}));
  v[0] = 1, v[999] = kNaN;
  EXPECT_TRUE(check(make(v, {1000}, dt::float32).max(), {}, dt::float32, {kNaN}));
  EXPECT_TRUE(check(make(v, {1000}, dt::float32).min(), {}, dt::float32, {kNaN}));
}

// ---- argmax ---------------------------------------------------------------------------------------------------------
TEST(Argmax, FirstMaximalIndexOnEveryAxis) {
  std::mt19937 rng(kSeed + 30);
  SCOPED_TRACE(seed_trace(kSeed + 30));
  const Shape s{4, 6, 5};
  for (DType d :
       {dt::float32, dt::float16, dt::bfloat16, dt::float64, dt::int32, dt::int8, dt::uint8, dt::int64, dt::uint64}) {
    Vals x = random_vals(d, numel_of(s), rng, 0, 3);  // few distinct values: many ties
    if (d.is_float())
      for (auto& v : x) v = std::round(v);
    for (int64_t axis : {0, 1, 2, -1, -3})
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(std::string(d.name()) + " axis " + std::to_string(axis) + (keepdim ? " keepdim" : ""));
        int64_t a = axis < 0 ? axis + 3 : axis;
        Ref ref = reduce_ref(x, s, {a}, keepdim, [](LD acc, LD) { return acc; }, 0);  // shape only
        auto st = strides_of(s);
        Shape keep = s;
        keep[a] = 1;
        auto sk = strides_of(keep);
        for (int64_t o = 0; o < numel_of(keep); ++o) {
          int64_t base = 0;
          for (int64_t dd = 0; dd < 3; ++dd) base += ((o / sk[dd]) % keep[dd]) * st[dd];
          int64_t best = 0;
          for (int64_t i = 1; i < s[a]; ++i)
            if (x[base + i * st[a]] > x[base + best * st[a]]) best = i;
          ref.v[o] = static_cast<LD>(best);
        }
        EXPECT_TRUE(check(make(x, s, d).argmax(axis, keepdim), ref.shape, dt::int32, ref.v));
      }
  }
}

TEST(Argmax, HandPicked) {
  EXPECT_TRUE(check(make({3, 9, 9, 1}, {4}, dt::float32).argmax(0), {}, dt::int32, {1}));
  EXPECT_TRUE(check(make({-5, -5, -7}, {3}, dt::int32).argmax(0), {}, dt::int32, {0}));
  EXPECT_TRUE(check(make({1, -kInf, kInf, kInf}, {4}, dt::float32).argmax(-1), {}, dt::int32, {2}));
  EXPECT_TRUE(check(make({7}, {1, 1}, dt::float32).argmax(1, true), {1, 1}, dt::int32, {0}));
}

// numpy and torch both report the first NaN as the maximum; the index must at least be in range.
// tg bug: argmax of a row holding NaN returns the row length (an out-of-range index): argmax({1, NaN, 3, NaN})
// gives 4, not 1 (max is NaN, and NaN == NaN matches nothing).
TEST(Argmax, NaNGivesTheIndexOfTheFirstNaN) {
  EXPECT_TRUE(check(make({1, kNaN, 3, kNaN}, {4}, dt::float32).argmax(0), {}, dt::int32, {1}));
  EXPECT_TRUE(check(make({kNaN, 5, 2, 8, 1, kNaN}, {2, 3}, dt::float32).argmax(1), {2}, dt::int32, {0, 2}));
}

// ---- softmax / log_softmax ----------------------------------------------------------------------------------------
Ref softmax_ref(const Vals& x, const Shape& s, int64_t axis, bool log) {
  int64_t nd = static_cast<int64_t>(s.size()), a = axis < 0 ? axis + nd : axis;
  Ref m = reduce_ref(x, s, {a}, true, nan_max, -kInf);
  auto st = strides_of(s);
  Shape keep = s;
  keep[a] = 1;
  auto sk = strides_of(keep);
  auto out_of = [&](int64_t i) {
    int64_t o = 0;
    for (int64_t d = 0; d < nd; ++d) o += (d == a ? 0 : (i / st[d]) % s[d]) * sk[d];
    return o;
  };
  Vals sum(m.v.size(), 0), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) sum[out_of(i)] += std::exp(x[i] - m.v[out_of(i)]);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t o = out_of(i);
    y[i] = log ? x[i] - m.v[o] - std::log(sum[o]) : std::exp(x[i] - m.v[o]) / sum[o];
  }
  return {s, y};
}

TEST(Softmax, MatchesLoopsOnAxesAndDtypes) {
  std::mt19937 rng(kSeed + 40);
  SCOPED_TRACE(seed_trace(kSeed + 40));
  struct Case {
    Shape s;
    int64_t axis;
  };
  const std::vector<Case> cases = {{{4, 7}, -1}, {{4, 7}, 0}, {{2, 3, 5}, 1}, {{1, 33}, -1}, {{1000}, 0}, {{3, 1}, 1}};
  for (DType d : {dt::float32, dt::float64, dt::float16, dt::bfloat16, dt::int32})
    for (auto& c : cases)
      for (bool log : {false, true}) {
        if (!tgtest::swept(d == dt::float32, &c == &cases[0])) continue;
        SCOPED_TRACE(std::string(log ? "log_softmax " : "softmax ") + d.name() + " " + tg::shape_str(c.s) + " axis " +
                     std::to_string(c.axis));
        Vals x = random_vals(d, numel_of(c.s), rng, -8, 8);
        DType od = d.is_float() ? d : dt::float32;
        Ref r = softmax_ref(x, c.s, c.axis, log);
        for (auto& v : r.v) v = round_to(od, v);
        Tol tol = od == dt::float64   ? Tol{8, 1e-12, 1e-13}
                  : od == dt::float32 ? Tol{8, 1e-5, 1e-6}
                  : od == dt::float16 ? Tol{2, 8e-3, 1e-3}
                                      : Tol{2, 4e-2, 8e-3};
        Tensor t = make(x, c.s, d);
        EXPECT_TRUE(check(log ? t.log_softmax(c.axis) : t.softmax(c.axis), c.s, od, r.v, tol));
      }
}

TEST(Softmax, LargeInputsAreStableAndRowsSumToOne) {
  Tensor t = make({1000, 1001, 1002, -1000, -1001, -1002}, {2, 3}, dt::float32);
  Vals e = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219,
            0.6652409557748219,  0.24472847105479767, 0.09003057317038046};
  EXPECT_TRUE(check(t.softmax(), {2, 3}, dt::float32, e, {8, 1e-5, 0}));
  Vals le = {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806,
             -0.4076059644443806, -1.4076059644443806, -2.4076059644443806};
  EXPECT_TRUE(check(t.log_softmax(), {2, 3}, dt::float32, le, {8, 1e-5, 0}));
  std::mt19937 rng(kSeed + 50);
  Vals x = random_vals(dt::float32, 5 * 101, rng, -30, 30);
  EXPECT_TRUE(check(make(x, {5, 101}, dt::float32).softmax(1).sum({1}), {5}, dt::float32, Vals(5, 1), {0, 1e-5, 0}));
}

TEST(Softmax, NaNAndInfRows) {
  // -inf entries get probability 0; a NaN poisons its row only; a row with +inf has inf - inf = NaN (as torch)
  Tensor t = make({0, -kInf, 0, /**/ 1, kNaN, 2, /**/ 0, 0, 0}, {3, 3}, dt::float32);
  Vals s = read(t.softmax(1));
  EXPECT_TRUE(check(Vals(s.begin(), s.begin() + 3), {0.5, 0, 0.5}, dt::float32, {2, 0, 0}));
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isnan(s[i])) << "softmax[" << i << "] = " << fmt(s[i]);
  EXPECT_TRUE(check(Vals(s.begin() + 6, s.end()), Vals(3, 1.0L / 3), dt::float32, {2, 0, 0}));
  Vals ls = read(t.log_softmax(1));
  EXPECT_TRUE(
      check(Vals(ls.begin(), ls.begin() + 3), {-std::log(2.0L), -kInf, -std::log(2.0L)}, dt::float32, {2, 0, 0}));
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isnan(ls[i])) << "log_softmax[" << i << "] = " << fmt(ls[i]);
}

// Axes spelled as tinygrad users write them: one int, a braced list, nothing (every axis), a vector.
TEST(Reduce, AxesSpellings) {
  Tensor t = make({1, 2, 3, /**/ 4, 5, 6}, {2, 3}, dt::float32);
  EXPECT_TRUE(check(t.sum(1), {2}, dt::float32, {6, 15}));
  EXPECT_TRUE(check(t.sum(-2), {3}, dt::float32, {5, 7, 9}));
  EXPECT_TRUE(check(t.sum({1}), {2}, dt::float32, {6, 15}));
  EXPECT_TRUE(check(t.sum(), {}, dt::float32, {21}));
  EXPECT_TRUE(check(t.sum({}), {}, dt::float32, {21}));
  EXPECT_TRUE(check(t.sum({0, 1}, true), {1, 1}, dt::float32, {21}));
  EXPECT_TRUE(check(t.sum(std::vector<int64_t>{0}), {3}, dt::float32, {5, 7, 9}));
  EXPECT_TRUE(check(t.max(1, true), {2, 1}, dt::float32, {3, 6}));
  EXPECT_TRUE(check(t.min(0), {3}, dt::float32, {1, 2, 3}));
  EXPECT_TRUE(check(t.mean(1), {2}, dt::float32, {2, 5}));
}

}  // namespace
