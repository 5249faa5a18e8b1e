// Movement ops (reshape, permute, expand, pad, shrink, slice, flip, cat, stack, gather), ops on non-contiguous
// views, matmul, creation (eye, arange, full, rand, randn) and execution (item, realize, to) vs host loops.
#include <gtest/gtest.h>

#include <array>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "tensor_test_util.hpp"

namespace {

using namespace tgtest;

constexpr uint32_t kSeed = 4242;

struct H {
  Vals v;
  Shape s;
};

std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    idx[d] = s[d] ? flat % s[d] : 0;
    flat = s[d] ? flat / s[d] : 0;
  }
  return idx;
}
int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}
// out[i] = in[src(index of i)], or 0 where src gives -1 (padding)
H remap(const H& in, const Shape& out, const std::function<int64_t(const std::vector<int64_t>&)>& src) {
  H r{Vals(static_cast<size_t>(numel_of(out))), out};
  for (int64_t i = 0; i < numel_of(out); ++i) {
    int64_t j = src(unravel(i, out));
    r.v[i] = j < 0 ? 0 : in.v[j];
  }
  return r;
}
H h_permute(const H& in, const std::vector<int64_t>& order) {
  Shape out;
  for (int64_t a : order) out.push_back(in.s[a]);
  return remap(in, out, [&](const std::vector<int64_t>& i) {
    std::vector<int64_t> j(i.size());
    for (size_t d = 0; d < i.size(); ++d) j[order[d]] = i[d];
    return ravel(j, in.s);
  });
}
H h_shrink(const H& in, const std::vector<std::pair<int64_t, int64_t>>& b) {
  Shape out;
  for (auto [s, e] : b) out.push_back(e - s);
  return remap(in, out, [&](std::vector<int64_t> i) {
    for (size_t d = 0; d < i.size(); ++d) i[d] += b[d].first;
    return ravel(i, in.s);
  });
}
H h_flip(const H& in, const std::vector<int64_t>& axes) {
  return remap(in, in.s, [&](std::vector<int64_t> i) {
    for (int64_t a : axes) i[a] = in.s[a] - 1 - i[a];
    return ravel(i, in.s);
  });
}
H h_pad(const H& in, const std::vector<std::pair<int64_t, int64_t>>& p) {
  Shape out = in.s;
  for (size_t d = 0; d < p.size(); ++d) out[d] += p[d].first + p[d].second;
  return remap(in, out, [&](std::vector<int64_t> i) {
    for (size_t d = 0; d < i.size(); ++d) {
      i[d] -= p[d].first;
      if (i[d] < 0 || i[d] >= in.s[d]) return int64_t{-1};
    }
    return ravel(i, in.s);
  });
}
H h_expand(const H& in, const Shape& out) {
  return remap(in, out, [&](const std::vector<int64_t>& i) { return bcast_index(out, in.s, ravel(i, out)); });
}
H h_rand(DType d, const Shape& s, std::mt19937& rng, double lo = -10, double hi = 10) {
  return {random_vals(d, numel_of(s), rng, lo, hi), s};
}
Tensor T(const H& h, DType d) { return make(h.v, h.s, d); }

TEST(Movement, ReshapeKeepsRowMajorOrder) {
  std::mt19937 rng(kSeed);
  H a = h_rand(dt::float32, {2, 3, 4}, rng);
  EXPECT_TRUE(check(T(a, dt::float32).reshape({6, -1}), {6, 4}, dt::float32, a.v));
  EXPECT_TRUE(check(T(a, dt::float32).reshape({-1}), {24}, dt::float32, a.v));
  EXPECT_TRUE(check(T(a, dt::float32).reshape({4, -1, 3}), {4, 2, 3}, dt::float32, a.v));
  EXPECT_TRUE(check(T(a, dt::float32).reshape({1, 24, 1}), {1, 24, 1}, dt::float32, a.v));
  EXPECT_TRUE(check(make({5}, {1}, dt::int8).reshape({}), {}, dt::int8, {5}));
  EXPECT_TRUE(check(make({}, {0, 3}, dt::float32).reshape({3, 0, 1}), {3, 0, 1}, dt::float32, {}));
  EXPECT_TRUE(check(make({}, {0, 3}, dt::float32).reshape({-1, 3}), {0, 3}, dt::float32, {}));
  EXPECT_TRUE(check(T(a, dt::float32).unsqueeze(1).unsqueeze(-1), {2, 1, 3, 4, 1}, dt::float32, a.v));
  EXPECT_TRUE(check(T(a, dt::float32).reshape({2, 1, 12}).squeeze(1), {2, 12}, dt::float32, a.v));
}

TEST(Movement, PermuteTransposeExpandPadShrinkFlip) {
  std::mt19937 rng(kSeed + 1);
  SCOPED_TRACE(seed_trace(kSeed + 1));
  for (DType d : {dt::float32, dt::int64, dt::float16, dt::uint8, dt::bool_}) {
    SCOPED_TRACE(d.name());
    H a = h_rand(d, {2, 3, 5}, rng);
    Tensor t = T(a, d);
    H e;
    e = h_permute(a, {2, 0, 1});
    EXPECT_TRUE(check(t.permute({2, 0, 1}), e.s, d, e.v)) << "permute";
    e = h_permute(a, {0, 2, 1});
    EXPECT_TRUE(check(t.transpose(), e.s, d, e.v)) << "transpose";
    e = h_permute(a, {2, 1, 0});
    EXPECT_TRUE(check(t.transpose(0, -1), e.s, d, e.v)) << "transpose(0,-1)";
    e = h_permute(a, {1, 0, 2});
    EXPECT_TRUE(check(t.permute({-2, -3, -1}), e.s, d, e.v)) << "permute negative";
    H c = h_rand(d, {3, 1}, rng);
    e = h_expand(c, {2, 3, 4});
    EXPECT_TRUE(check(T(c, d).expand({2, 3, 4}), e.s, d, e.v)) << "expand";
    e = h_expand(c, {3, 6});
    EXPECT_TRUE(check(T(c, d).expand({-1, 6}), e.s, d, e.v)) << "expand -1";
    e = h_pad(a, {{1, 0}, {0, 2}, {3, 1}});
    EXPECT_TRUE(check(t.pad({{1, 0}, {0, 2}, {3, 1}}), e.s, d, e.v)) << "pad";
    e = h_shrink(a, {{1, 2}, {0, 3}, {1, 4}});
    EXPECT_TRUE(check(t.shrink({{1, 2}, {0, 3}, {1, 4}}), e.s, d, e.v)) << "shrink";
    e = h_flip(a, {0, 2});
    EXPECT_TRUE(check(t.flip({0, -1}), e.s, d, e.v)) << "flip";
    e = h_flip(a, {1});
    EXPECT_TRUE(check(t.flip({1}), e.s, d, e.v)) << "flip 1";
  }
}

TEST(Movement, SliceIsPythonLike) {
  Vals v(10);
  std::iota(v.begin(), v.end(), 0);
  Tensor t = make(v, {10}, dt::int32);
  auto rng = [](int64_t s, int64_t e) {
    Vals r;
    for (int64_t i = s; i < e; ++i) r.push_back(static_cast<LD>(i));
    return r;
  };
  struct Case {
    int64_t s, e;
    Vals exp;
  };
  const std::vector<Case> cases = {{2, 5, rng(2, 5)},    {-3, 10, rng(7, 10)}, {-3, -1, rng(7, 9)},
                                   {0, 100, rng(0, 10)}, {-100, 3, rng(0, 3)}, {5, 2, {}},
                                   {10, 12, {}},         {-1, 10, {9}}};
  for (auto& c : cases)
    EXPECT_TRUE(check(t.slice(0, c.s, c.e), {static_cast<int64_t>(c.exp.size())}, dt::int32, c.exp))
        << "slice(" << c.s << ", " << c.e << ")";
  std::mt19937 r(kSeed + 2);
  H a = h_rand(dt::float32, {4, 6}, r);
  H e = h_shrink(a, {{0, 4}, {2, 5}});
  EXPECT_TRUE(check(T(a, dt::float32).slice(-1, 2, -1), e.s, dt::float32, e.v));
}

TEST(Movement, CatAndStack) {
  std::mt19937 rng(kSeed + 3);
  SCOPED_TRACE(seed_trace(kSeed + 3));
  for (DType d : {dt::float32, dt::int32, dt::bool_, dt::float16, dt::uint64}) {
    SCOPED_TRACE(d.name());
    H a = h_rand(d, {2, 3}, rng), b = h_rand(d, {4, 3}, rng), c = h_rand(d, {0, 3}, rng);
    Vals e0 = a.v;
    e0.insert(e0.end(), b.v.begin(), b.v.end());
    EXPECT_TRUE(check(Tensor::cat({T(a, d), T(c, d), T(b, d)}, 0), {6, 3}, d, e0)) << "cat axis 0";
    H p = h_rand(d, {2, 5}, rng);
    Vals e1;
    for (int r = 0; r < 2; ++r) {
      e1.insert(e1.end(), a.v.begin() + r * 3, a.v.begin() + r * 3 + 3);
      e1.insert(e1.end(), p.v.begin() + r * 5, p.v.begin() + r * 5 + 5);
    }
    EXPECT_TRUE(check(Tensor::cat({T(a, d), T(p, d)}, -1), {2, 8}, d, e1)) << "cat axis -1";
    H q = h_rand(d, {2, 3}, rng);
    Vals s0 = a.v;
    s0.insert(s0.end(), q.v.begin(), q.v.end());
    EXPECT_TRUE(check(Tensor::stack({T(a, d), T(q, d)}, 0), {2, 2, 3}, d, s0)) << "stack 0";
    Vals s2;
    for (size_t i = 0; i < 6; ++i) s2.push_back(a.v[i]), s2.push_back(q.v[i]);
    EXPECT_TRUE(check(Tensor::stack({T(a, d), T(q, d)}, -1), {2, 3, 2}, d, s2)) << "stack -1";
    Vals s1;
    for (size_t r = 0; r < 2; ++r) {
      s1.insert(s1.end(), a.v.begin() + r * 3, a.v.begin() + r * 3 + 3);
      s1.insert(s1.end(), q.v.begin() + r * 3, q.v.begin() + r * 3 + 3);
    }
    EXPECT_TRUE(check(Tensor::stack({T(a, d), T(q, d)}, 1), {2, 2, 3}, d, s1)) << "stack 1";
  }
  // mixed dtypes promote
  EXPECT_TRUE(
      check(Tensor::cat({make({1, 2}, {2}, dt::int8), make({0.5}, {1}, dt::float32)}), {3}, dt::float32, {1, 2, 0.5}));
}

// cat/gather copy values: NaN, infinities and the sign of -0.0 survive (as in torch/numpy).
// Regression: both used to turn -0.0 into +0.0 (zero-padded pieces / masked rows summed in float).
// More pieces than a kernel may take buffers (the CPU's 256): 300 rows of their own, each its index and its
// index + 0.5, joined in groups first; every row lands where it belongs.
TEST(Movement, CatOfMorePiecesThanAKernelHasBuffers) {
  std::vector<Tensor> rows;
  for (int i = 0; i < 300; ++i) {
    const float v = static_cast<float>(i);
    rows.push_back(Tensor::from_vector(std::vector<float>{v, v + 0.5f}, {1, 2}));
  }
  const auto got = Tensor::cat(rows, 0).to_vector<float>();
  ASSERT_EQ(got.size(), 600u);
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(got[static_cast<size_t>(2 * i)], static_cast<float>(i)) << "row " << i;
    EXPECT_EQ(got[static_cast<size_t>(2 * i + 1)], static_cast<float>(i) + 0.5f) << "row " << i;
  }
}

TEST(Movement, CatAndGatherCopySpecialValuesBitExact) {
  const float inf = INFINITY;
  std::vector<float> a = {-0.0f, inf, -inf}, b = {NAN, -0.0f, 1.5f};
  Tensor ta = Tensor::from_vector(a, {3}), tb = Tensor::from_vector(b, {3});
  auto bits = [](Tensor t) {
    std::vector<int32_t> r;
    for (float f : t.to_vector<float>()) r.push_back(std::bit_cast<int32_t>(f));
    return r;
  };
  std::vector<int32_t> want;
  for (float f : a) want.push_back(std::bit_cast<int32_t>(f));
  for (float f : b) want.push_back(std::bit_cast<int32_t>(f));
  EXPECT_EQ(bits(Tensor::cat({ta, tb})), want) << "cat of {-0, inf, -inf} and {nan, -0, 1.5}";
  Tensor idx = Tensor::from_vector<int32_t>({1, 0, 2, 0}, {4}, dt::int32);
  std::vector<int32_t> g = bits(ta.gather(0, idx));
  std::vector<int32_t> gwant = {want[1], want[0], want[2], want[0]};
  EXPECT_EQ(g, gwant) << "gather {-0, inf, -inf} at {1, 0, 2, 0}";
}

TEST(Movement, GatherLikeTorch) {
  std::mt19937 rng(kSeed + 4);
  SCOPED_TRACE(seed_trace(kSeed + 4));
  const Shape src{3, 4, 5};
  for (DType d : {dt::float32, dt::int64, dt::float16, dt::uint8, dt::bool_})
    for (DType id : {dt::int32, dt::int64})
      for (int64_t axis : {0, 1, 2, -1}) {
        SCOPED_TRACE(std::string(d.name()) + " index " + id.name() + " axis " + std::to_string(axis));
        int64_t a = axis < 0 ? axis + 3 : axis;
        H x = h_rand(d, src, rng);
        Shape is{2, 3, 4};
        is[a] = 6;  // may exceed the source along the gathered axis
        Vals idx = random_vals(id, numel_of(is), rng, 0, static_cast<double>(src[a] - 1));
        H e{Vals(static_cast<size_t>(numel_of(is))), is};
        for (int64_t i = 0; i < numel_of(is); ++i) {
          auto m = unravel(i, is);
          m[a] = static_cast<int64_t>(idx[i]);
          e.v[i] = x.v[ravel(m, src)];
        }
        EXPECT_TRUE(check(T(x, d).gather(axis, make(idx, is, id)), is, d, e.v));
      }
}

// non-contiguous views feeding elementwise ops and reductions
TEST(Views, FeedElementwiseAndReductions) {
  std::mt19937 rng(kSeed + 5);
  SCOPED_TRACE(seed_trace(kSeed + 5));
  for (DType d : {dt::float32, dt::int32}) {
    SCOPED_TRACE(d.name());
    H a = h_rand(d, {4, 7}, rng), b = h_rand(d, {7, 4}, rng);
    H at = h_permute(a, {1, 0});
    Vals e(28);
    for (size_t i = 0; i < 28; ++i) e[i] = at.v[i] + b.v[i];
    EXPECT_TRUE(check(T(a, d).transpose() + T(b, d), {7, 4}, d, e)) << "transposed + contiguous";
    H sl = h_shrink(a, {{1, 3}, {2, 7}}), fl = h_flip(sl, {0, 1});
    Vals e2(10);
    for (size_t i = 0; i < 10; ++i) e2[i] = sl.v[i] * fl.v[i];
    EXPECT_TRUE(check(T(a, d).slice(0, 1, 3).slice(1, 2, 7) * T(a, d).slice(0, 1, 3).slice(1, 2, 7).flip({0, 1}),
                      {2, 5}, d, e2))
        << "sliced * flipped";
    H pd = h_pad(at, {{1, 1}, {0, 2}});
    auto rs = [&](const H& h, int64_t axis) {
      Shape o = h.s;
      o.erase(o.begin() + axis);
      H r{Vals(static_cast<size_t>(numel_of(o)), 0), o};
      for (int64_t i = 0; i < numel_of(h.s); ++i) {
        auto m = unravel(i, h.s);
        m.erase(m.begin() + axis);
        r.v[ravel(m, o)] += h.v[i];
      }
      return r;
    };
    H r0 = rs(pd, 0), r1 = rs(pd, 1);
    Tol tol = d.is_float() ? Tol{4, 1e-5, 1e-5} : Tol{};
    EXPECT_TRUE(check(T(a, d).transpose().pad({{1, 1}, {0, 2}}).sum({0}), r0.s, d, r0.v, tol))
        << "sum of padded transpose";
    EXPECT_TRUE(check(T(a, d).transpose().pad({{1, 1}, {0, 2}}).sum({1}), r1.s, d, r1.v, tol)) << "sum axis 1";
    H c = h_rand(d, {1, 5}, rng), cf = h_flip(c, {1});
    H ce = h_expand(cf, {3, 5});
    Vals mx(5);
    for (size_t j = 0; j < 5; ++j) mx[j] = ce.v[j];
    EXPECT_TRUE(check(T(c, d).flip({1}).expand({3, 5}).max({0}), {5}, d, mx)) << "max of expanded flip";
  }
  // padded zeros go through the op: exp(0) = 1 in the border
  H x{{0.5, -1, 2}, {3}};
  Vals e = {1, std::exp(0.5L), std::exp(-1.0L), std::exp(2.0L), 1};
  for (auto& v : e) v = round_to(dt::float32, v);
  EXPECT_TRUE(check(T(x, dt::float32).pad({{1, 1}}).exp(), {5}, dt::float32, e, {4, 1e-6, 0}));
}

// ---- matmul
// ----------------------------------------------------------------------------------------------------------
H matmul_ref(const H& a0, const H& b0) {
  H a = a0, b = b0;
  if (a.s.size() == 1) a.s.insert(a.s.begin(), 1);
  if (b.s.size() == 1) b.s.push_back(1);
  int64_t M = a.s[a.s.size() - 2], K = a.s.back(), N = b.s.back();
  Shape ba(a.s.begin(), a.s.end() - 2), bb(b.s.begin(), b.s.end() - 2);
  Shape bo(std::max(ba.size(), bb.size()));
  for (size_t i = 0; i < bo.size(); ++i) {
    int64_t x = i < bo.size() - ba.size() ? 1 : ba[i - (bo.size() - ba.size())];
    int64_t y = i < bo.size() - bb.size() ? 1 : bb[i - (bo.size() - bb.size())];
    bo[i] = std::max(x, y);
  }
  Shape out = bo;
  if (a0.s.size() > 1) out.push_back(M);
  if (b0.s.size() > 1) out.push_back(N);
  H r{Vals(static_cast<size_t>(numel_of(bo) * M * N)), out};
  for (int64_t bi = 0; bi < numel_of(bo); ++bi) {
    int64_t ia = bcast_index(bo, ba, bi), ib = bcast_index(bo, bb, bi);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        LD acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += a.v[(ia * M + m) * K + k] * b.v[(ib * K + k) * N + n];
        r.v[(bi * M + m) * N + n] = acc;
      }
  }
  return r;
}

TEST(Matmul, ShapesAndBroadcasting) {
  std::mt19937 rng(kSeed + 6);
  SCOPED_TRACE(seed_trace(kSeed + 6));
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 5}},      {{1, 7}, {7, 33}}, {{33, 7}, {7, 1}},   {{1, 1}, {1, 1}},    {{7}, {7, 3}},
      {{4, 7}, {7}},         {{9}, {9}},        {{2, 3, 4}, {4, 5}}, {{4, 5}, {2, 5, 3}}, {{2, 1, 3, 4}, {5, 4, 2}},
      {{1, 7, 33}, {33, 2}}, {{3, 0}, {0, 4}},  {{0, 3}, {3, 2}},    {{3}, {2, 3, 4}},    {{17, 65}, {65, 19}}};
  for (DType d : {dt::float32, dt::int32, dt::float64})
    for (auto& [sa, sb] : cases) {
      SCOPED_TRACE(std::string(d.name()) + " " + tg::shape_str(sa) + " @ " + tg::shape_str(sb));
      H a = h_rand(d, sa, rng, -3, 3), b = h_rand(d, sb, rng, -3, 3);
      if (d.is_int()) a = h_rand(d, sa, rng, -100, 100), b = h_rand(d, sb, rng, -100, 100);
      H e = matmul_ref(a, b);
      for (auto& v : e.v) v = round_to(d, v);
      Tol tol = d == dt::float32 ? Tol{8, 1e-5, 1e-4} : d == dt::float64 ? Tol{8, 1e-12, 1e-12} : Tol{};
      EXPECT_TRUE(check(T(a, d).matmul(T(b, d)), e.s, d, e.v, tol));
    }
}

// Large enough that the CPU packs B into column panels first (B over 1 MiB, N a multiple of 64); other devices
// take the plain product. Either way the result is the host loop's.
TEST(Matmul, LargeProductsThroughPackedPanels) {
  std::mt19937 rng(kSeed + 8);
  SCOPED_TRACE(seed_trace(kSeed + 8));
  for (auto [m, k, n] : {std::array<int64_t, 3>{64, 1024, 320}, std::array<int64_t, 3>{12, 2048, 192}}) {
    H a = h_rand(dt::float32, {m, k}, rng, -2, 2), b = h_rand(dt::float32, {k, n}, rng, -2, 2);
    H e = matmul_ref(a, b);
    EXPECT_TRUE(check(T(a, dt::float32).matmul(T(b, dt::float32)), e.s, dt::float32, e.v, Tol{8, 1e-4, 1e-3}))
        << m << "x" << k << " @ " << k << "x" << n;
  }
}

TEST(Matmul, Int32IsExactAndWraps) {
  // 2^16 * 2^16 * 2 = 2^33 wraps to 0 in int32
  Tensor a = make({65536, 65536}, {1, 2}, dt::int32), b = make({65536, 65536}, {2, 1}, dt::int32);
  EXPECT_TRUE(check(a.matmul(b), {1, 1}, dt::int32, {0}));
  Tensor c = make({46340, 1}, {1, 2}, dt::int32), e = make({46340, 1}, {2, 1}, dt::int32);
  EXPECT_TRUE(check(c.matmul(e), {1, 1}, dt::int32, {2147395601}));
}

TEST(Matmul, HalfPrecisionWithinRounding) {
  std::mt19937 rng(kSeed + 7);
  SCOPED_TRACE(seed_trace(kSeed + 7));
  for (DType d : {dt::float16, dt::bfloat16}) {
    H a = h_rand(d, {5, 16}, rng, -2, 2), b = h_rand(d, {16, 3}, rng, -2, 2);
    H e = matmul_ref(a, b);
    // products rounded to d, summed wide: the error is bounded by K product roundings plus one
    double eps = d == dt::float16 ? 0x1p-11 : 0x1p-8;
    for (auto& v : e.v) v = round_to(d, v);
    EXPECT_TRUE(check(T(a, d).matmul(T(b, d)), e.s, d, e.v, {1, 2 * eps, 16 * 4 * eps})) << d.name();
  }
}

// ---- creation -----------------------------------------------------------------------------------------------------
TEST(Creation, EyeArangeFull) {
  for (int64_t n : {0, 1, 2, 5})
    for (DType d : {dt::float32, dt::int32, dt::bool_, dt::float16}) {
      Vals e(static_cast<size_t>(n * n), 0);
      for (int64_t i = 0; i < n; ++i) e[i * n + i] = 1;
      EXPECT_TRUE(check(Tensor::eye(n, d), {n, n}, d, e)) << "eye(" << n << ") " << d.name();
    }
  EXPECT_TRUE(check(Tensor::arange(0, 5), {5}, dt::int32, {0, 1, 2, 3, 4}));
  EXPECT_TRUE(check(Tensor::arange(10, 0, -3), {4}, dt::int32, {10, 7, 4, 1}));
  EXPECT_TRUE(check(Tensor::arange(5, 5), {0}, dt::int32, {}));
  EXPECT_TRUE(check(Tensor::arange(3, 0), {0}, dt::int32, {}));
  EXPECT_TRUE(check(Tensor::arange(-2, 3, 1, dt::int64), {5}, dt::int64, {-2, -1, 0, 1, 2}));
  Vals af;
  for (int i = 0; i < 10; ++i) af.push_back(round_to(dt::float32, 0.1L * i));
  EXPECT_TRUE(check(Tensor::arange(0, 1, 0.1, dt::float32), {10}, dt::float32, af, {1, 0, 0}));
  EXPECT_TRUE(check(Tensor::arange(0.5, 2.5, 0.5, dt::float64), {4}, dt::float64, {0.5, 1, 1.5, 2}));
  for (DType d : all_dtypes()) {
    SCOPED_TRACE(d.name());
    LD v = d.is_bool() ? 1 : d.is_unsigned() ? 7 : d.is_float() ? -2.5 : -7;
    EXPECT_TRUE(check(Tensor::full({2, 3}, static_cast<double>(v), d), {2, 3}, d, Vals(6, v)));
    EXPECT_TRUE(check(Tensor::zeros({3, 1, 2}, d), {3, 1, 2}, d, Vals(6, 0)));
    EXPECT_TRUE(check(Tensor::ones({4}, d), {4}, d, Vals(4, 1)));
    EXPECT_TRUE(check(Tensor::ones({0, 4}, d), {0, 4}, d, {}));
    EXPECT_TRUE(check(Tensor::full({}, 1, d), {}, d, {1}));
  }
}

void check_rand(const std::vector<DType>& dts) {
  for (DType d : dts) {
    SCOPED_TRACE(d.name());
    const int64_t n = 20000;
    Vals a = read(Tensor::rand({n}, 7, d)), b = read(Tensor::rand({n}, 7, d)), c = read(Tensor::rand({n}, 8, d));
    EXPECT_TRUE(check(a, b, d)) << "same seed";
    size_t same = 0, out = 0;
    LD sum = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      same += a[i] == c[i];
      out += !(a[i] >= 0 && a[i] < 1);
      sum += a[i];
    }
    EXPECT_LT(same, a.size() / 10) << "seeds 7 and 8 give nearly the same numbers";
    EXPECT_EQ(out, 0u) << "values outside [0, 1)";
    EXPECT_NEAR(static_cast<double>(sum / n), 0.5, 0.02);
  }
}

TEST(Creation, RandIsReproducibleAndInRange) {
  check_rand({dt::float32, dt::float64});
  EXPECT_TRUE(check(Tensor::rand({0, 3}, 1), {0, 3}, dt::float32, {}));
}

// Regression: a double in [0, 1) cast to a narrow format could round up to 1.0 (rand({20000}, 7, float16) held
// 2 exact 1.0s, bfloat16 41).
TEST(Creation, RandInHalfPrecisionStaysBelowOne) { check_rand({dt::float16, dt::bfloat16}); }

TEST(Creation, RandnMomentsLoosely) {
  const int64_t n = 100000;
  Vals a = read(Tensor::randn({n}, 123)), b = read(Tensor::randn({n}, 123)), c = read(Tensor::randn({n}, 124));
  EXPECT_TRUE(check(a, b, dt::float32)) << "same seed";
  LD s = 0, s2 = 0;
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(std::isfinite(a[i])) << "randn[" << i << "] = " << fmt(a[i]);
    s += a[i], s2 += a[i] * a[i], same += a[i] == c[i];
  }
  double mean = static_cast<double>(s / n), sd = static_cast<double>(std::sqrt(s2 / n - (s / n) * (s / n)));
  EXPECT_NEAR(mean, 0, 0.02);
  EXPECT_NEAR(sd, 1, 0.02);
  EXPECT_LT(same, 100u);
  EXPECT_EQ(Tensor::randn({3, 5}, 9, dt::float64).shape(), (Shape{3, 5}));
  EXPECT_EQ(Tensor::randn({3, 5}, 9, dt::float64).dtype(), dt::float64);
}

// ---- execution ----------------------------------------------------------------------------------------------------
TEST(Execution, ItemRealizeToAndContiguous) {
  EXPECT_EQ(make({2.5}, {}, dt::float32).item<float>(), 2.5f);
  EXPECT_EQ(make({-7}, {1, 1}, dt::int64).item<int64_t>(), -7);
  EXPECT_EQ((make({1, 2, 3, 4}, {4}, dt::int32).sum()).item<int32_t>(), 10);
  EXPECT_EQ(make({1}, {1}, dt::bool_).item<uint8_t>(), 1);

  std::mt19937 rng(kSeed + 8);
  H a = h_rand(dt::float32, {3, 5}, rng);
  Tensor t = (T(a, dt::float32) * 2.0).transpose();
  t.realize();
  Vals first = read(t);
  t.realize().realize();
  EXPECT_TRUE(check(read(t), first, dt::float32)) << "realize twice";
  Tensor u = t + 1.0;  // a realized tensor keeps working as an input
  Vals e(first.size());
  for (size_t i = 0; i < e.size(); ++i) e[i] = round_to(dt::float32, first[i] + 1);
  EXPECT_TRUE(check(u, {5, 3}, dt::float32, e));
  EXPECT_TRUE(check(read(t), first, dt::float32)) << "reading again";

  Tensor x = make(a.v, a.s, dt::float32);
  for (const char* dev : {"CPU", "cpu"}) {
    Tensor y = x.to(dev);
    EXPECT_EQ(y.device(), "CPU");
    EXPECT_TRUE(check(y, a.s, dt::float32, a.v)) << "to(" << dev << ")";
  }
  H p = h_permute(a, {1, 0});
  EXPECT_TRUE(check(x.transpose().contiguous(), p.s, dt::float32, p.v)) << "contiguous of a transpose";
  EXPECT_TRUE(check(x.transpose().contiguous().reshape({-1}), {15}, dt::float32, p.v)) << "reshape after contiguous";

  Tensor m = make({1, 2, 3}, {3}, dt::int32), n = make({4, 5, 6}, {3}, dt::int32);
  Tensor mn = m + n, mm = m * n;
  Tensor::realize_all({&mn, &mm});
  EXPECT_TRUE(check(mn, {3}, dt::int32, {5, 7, 9}));
  EXPECT_TRUE(check(mm, {3}, dt::int32, {4, 10, 18}));
}

}  // namespace
