// Symbolic dims: tensors whose dims are expressions of bound variables (shrink to pos+1, reshape (v*4,) <->
// (v, 4), pad to a variable size), elementwise ops, reductions and matmul over them, and decode-style attention
// over a KV cache. Every case runs several values, including the bottom of the range, with one compile, and
// compares with plain host loops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <numeric>
#include <random>

#include "../random_floats.hpp"
#include "tg/jit.hpp"
#include "tg/profile.hpp"
#include "tg/tensor.hpp"

namespace tg {
namespace {

using ::testing::HasSubstr;

// Programs built by a compiler or found in the disk cache: a new value must do neither.
size_t programs_built() { return schedule_stats().programs_compiled + schedule_stats().disk_hits; }

// Runs f for each value; every value after the first must reuse the programs the first one built.
void for_values_one_compile(const std::vector<int64_t>& values, const std::function<void(int64_t)>& f) {
  size_t built = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    SCOPED_TRACE("value " + std::to_string(values[i]));
    f(values[i]);
    if (i == 0)
      built = programs_built();
    else
      EXPECT_EQ(programs_built(), built) << "value " << values[i] << " built a new program";
  }
}

std::vector<float> iota_floats(size_t n, float start = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

using test::random_floats;

uint32_t announce_seed(const char* test) {
  uint32_t seed = std::random_device{}();
  std::cout << test << " seed=" << seed << "\n";
  return seed;
}

// The message of the invalid_argument or tg::Error f throws ("" and a failure when it throws nothing).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

TEST(SymbolicShape, ShrinkToAVariableLengthReadsThePrefix) {
  std::vector<float> host = iota_floats(16 * 8);
  Tensor cache = Tensor::from_vector(host, {16, 8}).realize();
  Variable pos("pos", 0, 15);
  for_values_one_compile({0, 1, 6, 15}, [&](int64_t p) {
    Tensor keys = cache.shrink(0, 0, pos.bind(p) + 1);
    ASSERT_TRUE(keys.is_symbolic());
    EXPECT_EQ(keys.dims()[0].str(), "pos+1");
    EXPECT_EQ(keys.dims()[0].max(), 16);
    EXPECT_EQ(keys.dims()[0].min(), 1);
    EXPECT_EQ(keys.shape(), Shape({p + 1, 8}));
    std::vector<float> got = (keys * 3.0).to_vector<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>((p + 1) * 8));
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], 3 * host[i]) << "i=" << i;
  });
}

TEST(SymbolicShape, EmptyAtTheBottomOfTheRange) {
  Tensor x = Tensor::from_vector(iota_floats(10, 1), {10}).realize();
  Variable n("n", 0, 10);
  for_values_one_compile({0, 1, 10}, [&](int64_t v) {
    Tensor t = x.shrink(0, 0, n.bind(v));
    std::vector<float> got = (t + 1.0).to_vector<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(v));
    for (int64_t i = 0; i < v; ++i) EXPECT_EQ(got[i], static_cast<float>(i + 2));
    EXPECT_EQ(t.sum().item<float>(), static_cast<float>(v * (v + 1) / 2));
    std::vector<float> flipped = t.flip({0}).to_vector<float>();
    ASSERT_EQ(flipped.size(), static_cast<size_t>(v));
    for (int64_t i = 0; i < v; ++i) EXPECT_EQ(flipped[i], static_cast<float>(v - i)) << i;
  });
}

TEST(SymbolicShape, TwoVariablesInOneTensor) {
  std::vector<float> host = iota_floats(12 * 10);
  Tensor x = Tensor::from_vector(host, {12, 10}).realize();
  Variable v("v", 0, 12), w("w", 0, 10);
  std::vector<std::pair<int64_t, int64_t>> points = {{0, 0}, {3, 0}, {0, 4}, {1, 1}, {5, 7}, {12, 10}};
  size_t built = 0;
  for (size_t k = 0; k < points.size(); ++k) {
    auto [a, b] = points[k];
    BoundVariable bv = v.bind(a), bw = w.bind(b);
    Tensor t = x.shrink(0, 0, bv).shrink(1, 0, bw);
    EXPECT_EQ(t.shape(), Shape({a, b}));
    // (v, w) -> (v*w,) -> (w, v) regroups the same data: flat element k is t[k / w][k % w]
    std::vector<float> regroup = t.reshape({bv * bw}).reshape({bw, bv}).to_vector<float>();
    std::vector<float> rows = t.sum({1}).to_vector<float>(), tr = t.transpose().contiguous().to_vector<float>();
    ASSERT_EQ(regroup.size(), static_cast<size_t>(a * b));
    ASSERT_EQ(rows.size(), static_cast<size_t>(a));
    ASSERT_EQ(tr.size(), static_cast<size_t>(a * b));
    for (int64_t i = 0; i < a * b; ++i)
      EXPECT_EQ(regroup[i], host[(i / b) * 10 + i % b]) << a << "x" << b << " i=" << i;
    for (int64_t r = 0; r < a; ++r) {
      float want = 0;
      for (int64_t c = 0; c < b; ++c) want += host[r * 10 + c];
      EXPECT_EQ(rows[r], want) << a << "x" << b << " r=" << r;
      for (int64_t c = 0; c < b; ++c) EXPECT_EQ(tr[c * a + r], host[r * 10 + c]) << a << "x" << b;
    }
    if (k == 0)
      built = programs_built();
    else
      EXPECT_EQ(programs_built(), built) << a << "x" << b << " built a new program";
  }
}

TEST(SymbolicShape, Int64VariableAsADim) {
  std::vector<float> host = iota_floats(20, 1);
  Tensor x = Tensor::from_vector(host, {20}).realize();
  Variable n("n", 2, 20, dtypes::int64);
  for_values_one_compile({2, 3, 20}, [&](int64_t v) {
    Tensor t = x.shrink(0, 0, n.bind(v)).reshape({1, n.bind(v), 1});
    EXPECT_EQ(t.shape(), Shape({1, v, 1}));
    EXPECT_EQ(t.sum().item<float>(), static_cast<float>(v * (v + 1) / 2));
    EXPECT_EQ(t.max().item<float>(), static_cast<float>(v));
  });
}

TEST(SymbolicShape, ElementwiseAndBroadcastingAgainstStaticOnes) {
  std::vector<float> ha = iota_floats(16 * 4), hb = iota_floats(16 * 4, 100), hrow = {1, -2, 3, -4};
  Tensor a = Tensor::from_vector(ha, {16, 4}).realize(), b = Tensor::from_vector(hb, {16, 4}).realize();
  Tensor row = Tensor::from_vector(hrow, {4}).realize();
  Variable n("n", 0, 16);
  for_values_one_compile({0, 1, 7, 16}, [&](int64_t v) {
    Tensor x = a.shrink(0, 0, n.bind(v)), y = b.shrink(0, 0, n.bind(v));
    Tensor out = Tensor::where(x.lt(y * 0.0 + 20.0), x * y + row, y.maximum(x) * 0.5);
    EXPECT_EQ(out.shape(), Shape({v, 4}));
    std::vector<float> got = out.to_vector<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(v * 4));
    for (int64_t i = 0; i < v * 4; ++i) {
      float want = ha[i] < 20 ? ha[i] * hb[i] + hrow[i % 4] : std::max(ha[i], hb[i]) * 0.5f;
      EXPECT_EQ(got[i], want) << "i=" << i;
    }
  });
}

TEST(SymbolicShape, ReductionsOverASymbolicAxis) {
  std::mt19937 rng(announce_seed("ReductionsOverASymbolicAxis"));
  std::vector<float> h = random_floats(16 * 3, rng);
  Tensor x16 = Tensor::from_vector(h, {16, 3}).realize();
  Variable n("n", 0, 16);
  for_values_one_compile({0, 1, 5, 16}, [&](int64_t v) {
    Tensor x = x16.shrink(0, 0, n.bind(v));
    std::vector<float> sum = x.sum({0}).to_vector<float>(), mx = x.max({0}).to_vector<float>();
    std::vector<float> mean = x.mean({0}).to_vector<float>(), rows = x.sum({1}).to_vector<float>();
    std::vector<float> all_mean = x.mean().to_vector<float>();
    ASSERT_EQ(rows.size(), static_cast<size_t>(v));
    double total = 0;
    for (int c = 0; c < 3; ++c) {
      double s = 0, m = -std::numeric_limits<double>::infinity();
      for (int64_t r = 0; r < v; ++r) s += h[r * 3 + c], m = std::max<double>(m, h[r * 3 + c]);
      total += s;
      EXPECT_NEAR(sum[c], s, 1e-5) << "c=" << c;
      EXPECT_EQ(mx[c], static_cast<float>(m)) << "c=" << c;
      if (v == 0)
        EXPECT_TRUE(std::isnan(mean[c])) << "0/0 is NaN, got " << mean[c];
      else
        EXPECT_NEAR(mean[c], s / v, 1e-6) << "c=" << c;
    }
    if (v == 0)
      EXPECT_TRUE(std::isnan(all_mean[0]));
    else
      EXPECT_NEAR(all_mean[0], total / (3 * v), 1e-6);
    for (int64_t r = 0; r < v; ++r) EXPECT_NEAR(rows[r], h[r * 3] + h[r * 3 + 1] + h[r * 3 + 2], 1e-6) << "r=" << r;
  });
}

TEST(SymbolicShape, SoftmaxOverASymbolicLastAxis) {
  std::mt19937 rng(announce_seed("SoftmaxOverASymbolicLastAxis"));
  std::vector<float> h = random_floats(4 * 32, rng);
  for (auto& x : h) x *= 8;
  Tensor x32 = Tensor::from_vector(h, {4, 32}).realize();
  Variable n("n", 1, 32);
  for_values_one_compile({1, 2, 17, 32}, [&](int64_t v) {
    std::vector<float> got = x32.shrink(1, 0, n.bind(v)).softmax(-1).to_vector<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(4 * v));
    for (int r = 0; r < 4; ++r) {
      double m = -INFINITY, s = 0;
      for (int64_t c = 0; c < v; ++c) m = std::max<double>(m, h[r * 32 + c]);
      for (int64_t c = 0; c < v; ++c) s += std::exp(h[r * 32 + c] - m);
      for (int64_t c = 0; c < v; ++c)
        EXPECT_NEAR(got[r * v + c], std::exp(h[r * 32 + c] - m) / s, 2e-6) << r << "," << c;
    }
  });
}

TEST(SymbolicShape, ReshapeBetweenVTimes4AndV4) {
  std::vector<float> host = iota_floats(64);
  Tensor flat64 = Tensor::from_vector(host, {64}).realize();
  Tensor mat = Tensor::from_vector(host, {16, 4}).realize();
  Variable n("n", 0, 16);
  for_values_one_compile({0, 1, 9, 16}, [&](int64_t v) {
    BoundVariable b = n.bind(v);
    Tensor flat = flat64.shrink(0, 0, b * 4);
    Tensor m = flat.reshape({b, 4});
    EXPECT_TRUE(m.dims()[0].same_as(b));
    Tensor inferred = flat.reshape({-1, 4});
    EXPECT_TRUE(inferred.dims()[0].same_as(b)) << inferred.dims()[0].str();
    std::vector<float> sums = m.sum({1}).to_vector<float>();
    ASSERT_EQ(sums.size(), static_cast<size_t>(v));
    for (int64_t r = 0; r < v; ++r)
      EXPECT_EQ(sums[r], host[4 * r] + host[4 * r + 1] + host[4 * r + 2] + host[4 * r + 3]);
    // (v, 4) -> (v*4,) and unit dims added and removed around the symbolic one
    std::vector<float> back = (mat.shrink(0, 0, b).reshape({b * 4}) + 0.5).to_vector<float>();
    std::vector<float> unit =
        (mat.shrink(0, 0, b).unsqueeze(0).unsqueeze(2) * 2.0).squeeze(2).reshape({b, 1, 4}).to_vector<float>();
    ASSERT_EQ(back.size(), static_cast<size_t>(4 * v));
    ASSERT_EQ(unit.size(), static_cast<size_t>(4 * v));
    for (int64_t i = 0; i < 4 * v; ++i) EXPECT_EQ(back[i], host[i] + 0.5f) << i;
    for (int64_t i = 0; i < 4 * v; ++i) EXPECT_EQ(unit[i], host[i] * 2) << i;
  });
}

TEST(SymbolicShape, ReshapeThatRegroupsAroundASymbolicDim) {
  // (2, v) <-> (2*v,) needs division by v in the kernel; (v, 2, 4) <-> (v, 8) does not
  std::vector<float> host = iota_floats(2 * 16);
  Tensor two = Tensor::from_vector(host, {2, 16}).realize();
  Tensor v24 = Tensor::from_vector(iota_floats(16 * 8), {16, 2, 4}).realize();
  Variable n("n", 0, 16);
  for_values_one_compile({0, 1, 5, 16}, [&](int64_t v) {
    BoundVariable b = n.bind(v);
    Tensor x = two.shrink(1, 0, b);  // (2, v)
    std::vector<float> got = x.reshape({b * 2}).reshape({2, b}).transpose().contiguous().to_vector<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(2 * v));
    for (int64_t c = 0; c < v; ++c)
      for (int r = 0; r < 2; ++r) EXPECT_EQ(got[c * 2 + r], host[r * 16 + c]) << r << "," << c;
    std::vector<float> g8 = v24.shrink(0, 0, b).reshape({b, 8}).sum({1}).to_vector<float>();
    ASSERT_EQ(g8.size(), static_cast<size_t>(v));
    for (int64_t r = 0; r < v; ++r) EXPECT_EQ(g8[r], static_cast<float>(8 * 8 * r + 28)) << r;
  });
}

TEST(SymbolicShape, PadToAVariableSizeAndCat) {
  std::vector<float> host = iota_floats(12, 1);
  Tensor x12 = Tensor::from_vector(host, {12}).realize();
  Tensor tail = Tensor::from_vector(std::vector<float>{-1, -2, -3}, {3}).realize();
  Variable n("n", 0, 12);
  for_values_one_compile({0, 1, 12}, [&](int64_t v) {
    BoundVariable b = n.bind(v);
    Tensor x = x12.shrink(0, 0, b);
    std::vector<float> padded = x.pad(0, 2, b + 3).to_vector<float>();
    ASSERT_EQ(padded.size(), static_cast<size_t>(v + 3));
    for (int64_t i = 0; i < v + 3; ++i) EXPECT_EQ(padded[i], i >= 2 && i < v + 2 ? host[i - 2] : 0.0f) << i;
    Tensor c = Tensor::cat({x, tail});
    EXPECT_TRUE(c.dims()[0].same_as(b + 3));
    std::vector<float> got = c.to_vector<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(v + 3));
    for (int64_t i = 0; i < v + 3; ++i) EXPECT_EQ(got[i], i < v ? host[i] : -static_cast<float>(i - v + 1)) << i;
  });
}

TEST(SymbolicShape, MatmulWithASymbolicOutputAndContractionDim) {
  std::mt19937 rng(announce_seed("MatmulWithASymbolicOutputAndContractionDim"));
  const int D = 8, N = 24;
  std::vector<float> hk = random_floats(N * D, rng), hv = random_floats(N * D, rng), hq = random_floats(3 * D, rng);
  Tensor K = Tensor::from_vector(hk, {N, D}).realize(), V = Tensor::from_vector(hv, {N, D}).realize();
  Tensor q = Tensor::from_vector(hq, {3, D}).realize();
  Variable n("n", 0, N);
  for_values_one_compile({0, 1, 11, 24}, [&](int64_t L) {
    Tensor keys = K.shrink(0, 0, n.bind(L)), values = V.shrink(0, 0, n.bind(L));
    Tensor scores = q.matmul(keys.transpose());  // (3, L)
    std::vector<float> s = scores.to_vector<float>();
    std::vector<float> o = scores.matmul(values).to_vector<float>();  // (3, D), summed over L
    ASSERT_EQ(s.size(), static_cast<size_t>(3 * L));
    ASSERT_EQ(o.size(), static_cast<size_t>(3 * D));
    for (int i = 0; i < 3; ++i) {
      std::vector<double> srow(L);
      for (int64_t j = 0; j < L; ++j) {
        for (int k = 0; k < D; ++k) srow[j] += static_cast<double>(hq[i * D + k]) * hk[j * D + k];
        EXPECT_NEAR(s[i * L + j], srow[j], 1e-5) << i << "," << j;
      }
      for (int k = 0; k < D; ++k) {
        double want = 0;
        for (int64_t j = 0; j < L; ++j) want += srow[j] * hv[j * D + k];
        EXPECT_NEAR(o[i * D + k], want, 1e-4) << i << "," << k;
      }
    }
  });
}

// A symbolic number of rows times a matrix wide enough for the CPU's register tile (a prefill's projection): the
// tile must not fold the symbolic row loop away.
TEST(SymbolicShape, SymbolicRowsTimesAWideMatrix) {
  std::mt19937 rng(announce_seed("SymbolicRowsTimesAWideMatrix"));
  const int R = 16, K = 32, N = 256;
  std::vector<float> ha = random_floats(R * K, rng), hb = random_floats(K * N, rng);
  Tensor A = Tensor::from_vector(ha, {R, K}).realize(), B = Tensor::from_vector(hb, {K, N}).realize();
  Variable n("n", 1, R);
  for_values_one_compile({1, 3, 8, 16}, [&](int64_t rows) {
    std::vector<float> c = A.shrink(0, 0, n.bind(rows)).matmul(B).to_vector<float>();
    ASSERT_EQ(c.size(), static_cast<size_t>(rows * N));
    for (int64_t i = 0; i < rows; ++i)
      for (int j = 0; j < N; ++j) {
        double want = 0;
        for (int k = 0; k < K; ++k) want += static_cast<double>(ha[i * K + k]) * hb[k * N + j];
        ASSERT_NEAR(c[i * N + j], want, 1e-4) << "rows=" << rows << " C[" << i << "][" << j << "]";
      }
  });
}

// Decode attention over a KV cache as an LLM runs it: q (H, 1, D) against the first pos+1 cache rows.
struct Attention {
  static constexpr int H = 2, T = 32, D = 16;
  std::vector<float> hk, hv, hq;
  Tensor ck, cv;
  explicit Attention(std::mt19937& rng)
      : hk(random_floats(H * T * D, rng)),
        hv(random_floats(H * T * D, rng)),
        hq(random_floats(H * D, rng)),
        ck(Tensor::from_vector(hk, {H, T, D}).realize()),
        cv(Tensor::from_vector(hv, {H, T, D}).realize()) {}
  // (output (H, 1, D), probabilities (H, 1, L))
  static std::pair<Tensor, Tensor> run(const Tensor& q, const Tensor& ck, const Tensor& cv, const BoundVariable& pos) {
    Tensor keys = ck.shrink(1, 0, pos + 1), values = cv.shrink(1, 0, pos + 1);
    Tensor p = (q.matmul(keys.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(D)))).softmax(-1);
    return {p.matmul(values), p};
  }
  // host reference for the first L cache rows
  void check(int64_t L, const std::vector<float>& hq_, const std::vector<float>& out,
             const std::vector<float>& probs) const {
    ASSERT_EQ(out.size(), static_cast<size_t>(H * D));
    ASSERT_EQ(probs.size(), static_cast<size_t>(H * L));
    for (int h = 0; h < H; ++h) {
      std::vector<double> s(L);
      double m = -INFINITY, sum = 0;
      for (int64_t t = 0; t < L; ++t) {
        for (int d = 0; d < D; ++d) s[t] += static_cast<double>(hq_[h * D + d]) * hk[(h * T + t) * D + d];
        s[t] /= std::sqrt(static_cast<double>(D));
        m = std::max(m, s[t]);
      }
      for (int64_t t = 0; t < L; ++t) sum += std::exp(s[t] - m);
      for (int64_t t = 0; t < L; ++t)
        EXPECT_NEAR(probs[h * L + t], std::exp(s[t] - m) / sum, 1e-5) << "L=" << L << " h=" << h << " t=" << t;
      for (int d = 0; d < D; ++d) {
        double want = 0;
        for (int64_t t = 0; t < L; ++t) want += std::exp(s[t] - m) / sum * hv[(h * T + t) * D + d];
        EXPECT_NEAR(out[h * D + d], want, 1e-5) << "L=" << L << " h=" << h << " d=" << d;
      }
    }
  }
};

TEST(SymbolicShape, AttentionOverAGrowingKvCacheCompilesOnce) {
  std::mt19937 rng(announce_seed("AttentionOverAGrowingKvCacheCompilesOnce"));
  Attention att(rng);
  Tensor q = Tensor::from_vector(att.hq, {Attention::H, 1, Attention::D}).realize();
  Variable pos("start_pos", 0, Attention::T - 1);
  for_values_one_compile({0, 1, 2, 13, 31}, [&](int64_t p) {
    auto [out, probs] = Attention::run(q, att.ck, att.cv, pos.bind(p));
    EXPECT_EQ(probs.shape(), Shape({Attention::H, 1, p + 1}));
    att.check(p + 1, att.hq, out.to_vector<float>(), probs.to_vector<float>());
  });
}

TEST(SymbolicShape, AttentionUnderJitTakesANewLengthEveryCall) {
  std::mt19937 rng(announce_seed("AttentionUnderJitTakesANewLengthEveryCall"));
  Attention att(rng);
  Variable pos("start_pos", 0, Attention::T - 1);
  Tensor ck = att.ck, cv = att.cv;
  Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>& v) {
    auto [out, probs] = Attention::run(in[0], ck, cv, v[0]);
    return std::vector<Tensor>{out, probs};
  });
  int call = 0;
  for (int64_t p : {4, 9, 0, 31, 17, 1}) {
    std::vector<float> hq = random_floats(Attention::H * Attention::D, rng);
    size_t ran = schedule_stats().kernels_run, built = programs_built();
    auto outs = f({Tensor::from_vector(hq, {Attention::H, 1, Attention::D})}, {pos.bind(p)});
    if (call++ >= 2) {
      EXPECT_EQ(schedule_stats().kernels_run, ran) << "a replay must not go through the scheduler";
      EXPECT_EQ(programs_built(), built);
    }
    EXPECT_EQ(outs[1].shape(), Shape({Attention::H, 1, p + 1})) << "the replayed output takes the new length";
    att.check(p + 1, hq, outs[0].to_vector<float>(), outs[1].to_vector<float>());
  }
}

TEST(SymbolicShape, JitTakesASymbolicInput) {
  std::vector<float> host = iota_floats(16 * 2, 1);
  Tensor x = Tensor::from_vector(host, {16, 2}).realize();
  Variable n("n", 1, 16);
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{(in[0] * 2.0).sum({0})};
  });
  int call = 0;
  for (int64_t v : {3, 8, 1, 16, 5}) {
    Tensor input = x.shrink(0, 0, n.bind(v)).contiguous().realize();  // a realized (n, 2) tensor
    size_t built = programs_built();
    std::vector<float> got = f({input}, {n.bind(v)})[0].to_vector<float>();
    if (call++ >= 2) {
      EXPECT_EQ(programs_built(), built);
    }
    for (int c = 0; c < 2; ++c) {
      float want = 0;
      for (int64_t r = 0; r < v; ++r) want += 2 * host[r * 2 + c];
      EXPECT_EQ(got[c], want) << "n=" << v << " c=" << c;
    }
  }
  EXPECT_GT(f.captured_launches(), 0u);
  // the input's length must come with the call: the kernels would keep the captured one
  Tensor input = x.shrink(0, 0, n.bind(7)).contiguous().realize();
  EXPECT_THAT(error_of([&] { f({input}, {n.bind(6)}); }), HasSubstr("input 0 is (n, 2) = (7, 2) float32"));
  Jit g([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{in[0].sum({0})};
  });
  auto input_of = [&](int64_t v) { return x.shrink(0, 0, n.bind(v)).contiguous().realize(); };
  g({input_of(2)});
  g({input_of(3)});  // captured with n = 3 in its kernels
  EXPECT_EQ(g({input_of(3)})[0].to_vector<float>(), std::vector<float>({1 + 3 + 5.0f, 2 + 4 + 6.0f}));
  EXPECT_THAT(error_of([&] { g({input_of(4)}); }), HasSubstr("captured as (n, 2) = (3, 2)"));
}

TEST(SymbolicShapeErrors, DimsThatMayDifferDoNotBroadcast) {
  Tensor x = Tensor::zeros({8, 2});
  Variable v("v", 0, 8), w("w", 0, 8);
  EXPECT_THAT(error_of([&] { (x.shrink(0, 0, v.bind(3)) + x.shrink(0, 0, w.bind(3))).realize(); }),
              HasSubstr("dims v and w are not provably equal"));
  // v is 5 now, but not for every binding
  EXPECT_THAT(error_of([&] { (x.shrink(0, 0, v.bind(5)) + Tensor::zeros({5, 2})).realize(); }),
              HasSubstr("(v, 2) and (5, 2)"));
  EXPECT_THAT(error_of([&] { (x.shrink(0, 0, v.bind(2)) + x.shrink(0, 0, v.bind(3))).realize(); }),
              HasSubstr("cannot be broadcast"));
  EXPECT_THAT(error_of([&] { x.shrink(0, 0, v.bind(3)).expand({w.bind(3), 2}); }), HasSubstr("cannot expand (v, 2)"));
  EXPECT_THAT(error_of([&] {
                Tensor::ones({1, 8}).shrink(1, 0, v.bind(2)).matmul(Tensor::ones({8, 3}).shrink(0, 0, w.bind(2)));
              }),
              HasSubstr("do not align (v != w)"));
}

TEST(SymbolicShapeErrors, ReshapeMustProvablyKeepTheElementCount) {
  Tensor x = Tensor::zeros({16});
  Variable v("v", 0, 8);
  Tensor t = x.shrink(0, 0, v.bind(4));
  EXPECT_THAT(error_of([&] { t.reshape({2, -1}); }), HasSubstr("v elements are not provably a multiple of 2"));
  EXPECT_THAT(error_of([&] { t.reshape({v.bind(4) + 1}); }), HasSubstr("cannot reshape (v,) to (v+1,)"));
  EXPECT_THAT(error_of([&] { t.reshape({4}); }), HasSubstr("not provably equal"));
  EXPECT_EQ(t.reshape({v.bind(4), 1}).shape(), Shape({4, 1}));
}

TEST(SymbolicShapeErrors, ShrinkAndPadMustStayInsideForEveryValue) {
  Tensor x = Tensor::zeros({8, 4});
  Variable v("v", 0, 8);
  // v+1 reaches 9 > 8, though v = 2 would fit
  EXPECT_THAT(error_of([&] { x.shrink(0, 0, v.bind(2) + 1); }), HasSubstr("can leave the tensor"));
  Tensor t = x.shrink(0, 0, v.bind(6));
  EXPECT_THAT(error_of([&] { t.shrink({{0, 2}, {0, 4}}); }), HasSubstr("out of range for dim 0 of shape (v, 4)"));
  EXPECT_THAT(error_of([&] { t.pad(0, 1, 8); }), HasSubstr("does not fit in 8"));
  EXPECT_THAT(error_of([&] { t.slice(0, 0, 2); }), HasSubstr("slice of the symbolic dim v"));
  EXPECT_THAT(error_of([&] { t.argmax(0); }), HasSubstr("argmax over the symbolic dim v"));
}

}  // namespace
}  // namespace tg
