// The flash attention kernel (apps/llm/model/blocks/flash_attention.cpp) against a float64 softmax over the keys
// and values the cache holds (read back, so a float16 or q8_0 cache's rounding is the reference's too): positions
// 0, 11 and past 4096, one token and a chunk of several, GQA ratios 1, 4 and 8, a sliding window, and the key
// ranges split and combined.
#include "model/blocks/flash_attention.hpp"
#include "test_seed.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <vector>

namespace tg::llm {
namespace {

uint32_t test_seed() { return tgtest::test_seed("flash_attention_test"); }

struct Case {
  int64_t heads, kv_heads, pos, tokens, window;
  KvType kv;
  int64_t splits = 0;
};

void run_case(const Case& c, std::mt19937& rng) {
  constexpr int64_t hd = 32, positions = 4352;
  const int64_t H = c.heads, KV = c.kv_heads, G = H / KV, T = c.tokens, end = c.pos + T;
  const int64_t len = (end + 127) / 128 * 128;
  std::normal_distribution<float> nd;
  auto randoms = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = nd(rng);
    return v;
  };
  KvCache kc(KV * hd, positions, c.kv, ""), vc(KV * hd, positions, c.kv, "");
  Variable base_var("base", 0, positions - len), pos_var("pos", 0, positions - 1);
  // every position up to the last token's written (the earlier ones as one chunk at position 0)
  const SeqPos all{base_var.bind(0), pos_var.bind(0)};
  kc.write(Tensor::from_vector(randoms(end * KV * hd), {end, KV * hd}), all);
  vc.write(Tensor::from_vector(randoms(end * KV * hd), {end, KV * hd}), all);
  const std::vector<float> keys = kc.read(all, Dim(end)).to_vector<float>(),
                           vals = vc.read(all, Dim(end)).to_vector<float>();  // (KV*hd, end)
  const std::vector<float> q = randoms(T * H * hd);
  const double scale = 1 / std::sqrt(static_cast<double>(hd));
  const SeqPos at{base_var.bind(0), pos_var.bind(c.pos)};
  const std::vector<float> got = flash_attention(Tensor::from_vector(q, {T, H, hd}), kc, vc, KV, at, len,
                                                 {.scale = scale, .window = c.window, .splits = c.splits})
                                     .to_vector<float>();
  ASSERT_EQ(got.size(), static_cast<size_t>(T * H * hd));
  double worst = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kvh = h / G, qp = c.pos + t;
      std::vector<double> s;
      double mx = -1e300;
      for (int64_t j = 0; j <= qp; ++j) {
        double d = 0;
        for (int64_t e = 0; e < hd; ++e)
          d += static_cast<double>(q[(t * H + h) * hd + e]) * keys[(kvh * hd + e) * end + j];
        const bool seen = c.window == 0 || qp - j < c.window;
        s.push_back(seen ? d * scale : -INFINITY);
        if (seen) mx = std::max(mx, d * scale);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int64_t e = 0; e < hd; ++e) {
        double o = 0;
        for (int64_t j = 0; j <= qp; ++j) o += s[static_cast<size_t>(j)] / sum * vals[(kvh * hd + e) * end + j];
        worst = std::max(worst, std::fabs(o - got[(t * H + h) * hd + e]));
      }
    }
  EXPECT_LE(worst, 2e-5) << "heads " << H << "/" << KV << " at position " << c.pos << ", " << T << " tokens, window "
                         << c.window << ", splits " << c.splits;
}

TEST(FlashAttention, MatchesAFloat64Softmax) {
  std::mt19937 rng(test_seed());
  for (const Case& c :
       {Case{4, 4, 0, 1, 0, KvType::f32}, Case{8, 2, 11, 1, 0, KvType::f32}, Case{8, 2, 11, 5, 0, KvType::f32},
        Case{8, 1, 4100, 1, 0, KvType::f32}, Case{4, 1, 4100, 3, 0, KvType::f16}, Case{8, 2, 37, 9, 8, KvType::f32},
        Case{8, 2, 300, 1, 0, KvType::q8_0}, Case{4, 2, 4000, 1, 0, KvType::f32, 1},
        Case{4, 2, 4000, 1, 0, KvType::f32, 8}})
    run_case(c, rng);
}

}  // namespace
}  // namespace tg::llm
