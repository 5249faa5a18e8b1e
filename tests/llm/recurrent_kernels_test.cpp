// The recurrent layers' kernels (apps/llm/model/blocks/recurrent_kernels.cpp) against plain float64 loops: the
// causal conv and the gated delta rule over a prompt in chunks (the state carried between them in its slot), a
// decode batch of two sequences in other slots, and a sequence restarting at position 0 over a used slot.
#include "model/blocks/recurrent_kernels.hpp"
#include "test_seed.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <vector>

namespace tg::llm {
namespace {

constexpr int64_t kRows = 128;  // rows per slot: the slot of base b is b / kRows

uint32_t test_seed() { return tgtest::test_seed("recurrent_kernels_test"); }

std::vector<float> random_vector(std::mt19937& rng, size_t n, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// (slot, position, real tokens) per sequence
Tensor seq_table(const std::vector<std::array<int, 3>>& seqs) {
  std::vector<int32_t> v;
  for (auto [slot, pos, valid] : seqs) v.insert(v.end(), {static_cast<int32_t>(slot * kRows), pos, valid});
  return Tensor::from_vector(v, {static_cast<int64_t>(seqs.size()), 3}, dtypes::int32);
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]) + (std::isnan(got[i]) ? 1e30 : 0));
  EXPECT_LE(worst, tol) << what << ": max |error|";
}

void causal_conv_case(const int64_t C) {
  std::mt19937 rng(test_seed());
  constexpr int64_t K = 4, slots = 3, T = 9;
  const std::vector<float> w = random_vector(rng, C * K), x = random_vector(rng, T * C),
                           other = random_vector(rng, 2 * C);
  // reference: the whole sequence at once, zero before position 0
  auto conv_ref = [&](const std::vector<float>& in, int64_t n) {
    std::vector<double> y(static_cast<size_t>(n * C), 0.0);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < K; ++j) {
          const int64_t tau = t + j - (K - 1);
          if (tau >= 0) y[t * C + c] += static_cast<double>(w[c * K + j]) * in[tau * C + c];
        }
    return y;
  };
  const std::vector<double> want = conv_ref(x, T);
  Tensor wt = Tensor::from_vector(w, {C, K});
  // garbage in every slot: position 0 must not read it
  Tensor state =
      Tensor::from_vector(random_vector(rng, slots * (K - 1) * C), {slots * (K - 1), C}).contiguous().realize();
  std::vector<float> got;
  // slot 2: the prompt in chunks of 4 (padded with 3 rows of garbage to 7, as prefill pads chunks), 1 and 2
  // tokens, then 2 decode steps batched with slot 0's own sequence
  int64_t at = 0;
  for (int64_t n : {4, 1, 2}) {
    const int64_t pad = n == 4 ? 3 : 0;
    std::vector<float> rows(x.begin() + at * C, x.begin() + (at + n) * C), junk = random_vector(rng, pad * C, 100);
    rows.insert(rows.end(), junk.begin(), junk.end());
    Tensor xs = Tensor::from_vector(rows, {n + pad, C});
    std::vector<float> y =
        causal_conv(xs, wt, state, seq_table({{2, static_cast<int>(at), static_cast<int>(n)}}), kRows)
            .to_vector<float>();
    got.insert(got.end(), y.begin(), y.begin() + n * C);
    at += n;
  }
  Tensor o0 = Tensor::from_vector(std::vector<float>(other.begin(), other.begin() + C), {1, C});
  causal_conv(o0, wt, state, seq_table({{0, 0, 1}}), kRows).realize();
  for (int s = 0; s < 2; ++s, ++at) {
    std::vector<float> rows(x.begin() + at * C, x.begin() + (at + 1) * C);
    rows.insert(rows.end(), other.begin() + C, other.end());  // batch row 1: slot 0 at position 1
    std::vector<float> y = causal_conv(Tensor::from_vector(rows, {2, C}), wt, state,
                                       seq_table({{2, static_cast<int>(at), 1}, {0, 1 + s, 1}}), kRows)
                               .to_vector<float>();
    got.insert(got.end(), y.begin(), y.begin() + C);
    if (s == 0) {  // slot 0's second token saw its first
      std::vector<double> o = conv_ref(other, 2);
      expect_near(std::vector<float>(y.begin() + C, y.end()), std::vector<double>(o.begin() + C, o.end()), 1e-5,
                  "slot 0 step 1");
    }
  }
  expect_near(got, want, 1e-5, "slot 2, chunks 4+1+2 then 2 batched steps");
}

// 6 channels: one a work item; 32: lanes of 16 channels
TEST(RecurrentKernels, CausalConvCarriesItsStateAcrossChunksAndSlots) {
  for (const int64_t C : {6, 32}) {
    SCOPED_TRACE("channels " + std::to_string(C));
    causal_conv_case(C);
  }
}

void gated_delta_case(const int64_t dk) {
  std::mt19937 rng(test_seed());
  constexpr int64_t nk = 2, nv = 4, slots = 2, T = 7;
  // q and k L2-normalized as the layer feeds them; alpha in (0, 1), beta in (0, 1)
  auto unit_rows = [&](int64_t rows) {
    std::vector<float> v = random_vector(rng, rows * dk);
    for (int64_t r = 0; r < rows; ++r) {
      double n = 0;
      for (int64_t c = 0; c < dk; ++c) n += v[r * dk + c] * v[r * dk + c];
      for (int64_t c = 0; c < dk; ++c) v[r * dk + c] = static_cast<float>(v[r * dk + c] / std::sqrt(n));
    }
    return v;
  };
  const std::vector<float> q = unit_rows(T * nk), k = unit_rows(T * nk), v = random_vector(rng, T * nv * dk);
  std::uniform_real_distribution<float> unit(0.05f, 0.95f);
  std::vector<float> alpha(T * nv), beta(T * nv);
  for (auto& a : alpha) a = unit(rng);
  for (auto& b : beta) b = unit(rng);
  // reference: S_j (dv x dk) per value head j, key head j mod nk; decay, delta, update, read out after
  std::vector<double> S(nv * dk * dk, 0.0), want(T * nv * dk);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < nv; ++j) {
      const int64_t g = j % nk;
      const double a = alpha[t * nv + j], b = beta[t * nv + j];
      for (int64_t i = 0; i < dk; ++i) {
        double* row = &S[(j * dk + i) * dk];
        double sk = 0;
        for (int64_t c = 0; c < dk; ++c) sk += (row[c] *= a) * k[(t * nk + g) * dk + c];
        const double delta = b * (v[(t * nv + j) * dk + i] - sk);
        double o = 0;
        for (int64_t c = 0; c < dk; ++c) o += (row[c] += delta * k[(t * nk + g) * dk + c]) * q[(t * nk + g) * dk + c];
        want[(t * nv + j) * dk + i] = o;
      }
    }
  // the state in float32, then in float16 (--ssm-type f16: rounded to 11 bits after every token)
  for (DType sdt : {dtypes::float32, dtypes::float16}) {
    Tensor state = Tensor::from_vector(random_vector(rng, slots * nv * dk * dk), {slots * nv * dk, dk})
                       .cast(sdt)
                       .contiguous()
                       .realize();
    std::vector<float> got;
    int64_t at = 0;
    // a prefill chunk of 5 padded to 8 with garbage (which must leave the state as it is), then two single steps
    int64_t pad = 0;
    auto part = [&](const std::vector<float>& src, int64_t width, int64_t n, Shape shape) {
      std::vector<float> rows(src.begin() + at * width, src.begin() + (at + n) * width),
          junk = random_vector(rng, pad * width, 0.5f);
      rows.insert(rows.end(), junk.begin(), junk.end());
      shape[0] = n + pad;
      return Tensor::from_vector(rows, shape);
    };
    for (int64_t n : {5, 1, 1}) {
      pad = n == 5 ? 3 : 0;
      Tensor o = gated_delta(part(q, nk * dk, n, {n, nk, dk}), part(k, nk * dk, n, {n, nk, dk}),
                             part(v, nv * dk, n, {n, nv, dk}), part(alpha, nv, n, {n, nv}), part(beta, nv, n, {n, nv}),
                             state, seq_table({{1, static_cast<int>(at), static_cast<int>(n)}}), kRows);
      std::vector<float> y = o.to_vector<float>();
      got.insert(got.end(), y.begin(), y.begin() + n * nv * dk);
      at += n;
    }
    expect_near(got, want, sdt == dtypes::float32 ? 1e-4 : 1e-2,
                std::string("slot 1: 5 tokens, then 1, then 1, state ") + (sdt == dtypes::float32 ? "f32" : "f16"));
  }
}

// head width 8: a state row a work item; 16: rows in lanes of 16
TEST(RecurrentKernels, GatedDeltaRuleMatchesThePerTokenLoop) {
  for (const int64_t dk : {8, 16}) {
    SCOPED_TRACE("head width " + std::to_string(dk));
    gated_delta_case(dk);
  }
}

}  // namespace
}  // namespace tg::llm
