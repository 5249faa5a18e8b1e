// Sampling: greedy ties and NaNs, each filter against hand-computed candidate sets, and the sampled frequencies
// against the softmax computed here in double.
#include "generation/sampler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "tg/error.hpp"

namespace tg::llm {
namespace {

std::map<int32_t, int> histogram(SamplingParams p, const std::vector<float>& logits, int n) {
  Sampler s(p);
  std::map<int32_t, int> h;
  for (int i = 0; i < n; ++i) ++h[s.sample(logits)];
  return h;
}

TEST(Sampler, GreedyTakesTheFirstMaximumAndSkipsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Sampler s(SamplingParams{});
  EXPECT_EQ(s.sample(std::vector<float>{1, 3, 2, 3}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{nan, -1, -5}), 1);
  EXPECT_THROW(s.sample(std::vector<float>{nan, nan}), Error);
  const float inf = std::numeric_limits<float>::infinity();
  Sampler t(SamplingParams{.temperature = 1.0, .top_k = 0, .top_p = 1.0, .min_p = 0.0, .seed = 3});
  for (int i = 0; i < 20; ++i) EXPECT_EQ(t.sample(std::vector<float>{inf, 0.5f, -inf, nan}), 1);
}

TEST(Sampler, FiltersKeepTheHandComputedCandidates) {
  // softmax of {ln 4, ln 3, ln 2, ln 1} is {0.4, 0.3, 0.2, 0.1}
  const std::vector<float> l = {std::log(4.0f), std::log(3.0f), std::log(2.0f), 0.0f};
  auto keys = [](const std::map<int32_t, int>& h) {
    std::vector<int32_t> k;
    for (auto& [id, n] : h) k.push_back(id);
    return k;
  };
  SamplingParams p{.temperature = 1.0, .top_k = 0, .top_p = 1.0, .min_p = 0.0, .seed = 1};
  EXPECT_EQ(keys(histogram(p, l, 4000)), (std::vector<int32_t>{0, 1, 2, 3}));
  p.top_k = 2;
  EXPECT_EQ(keys(histogram(p, l, 2000)), (std::vector<int32_t>{0, 1}));
  p.top_k = 0, p.top_p = 0.65;  // 0.4 + 0.3 reaches it: two candidates
  EXPECT_EQ(keys(histogram(p, l, 2000)), (std::vector<int32_t>{0, 1}));
  p.top_p = 1.0, p.min_p = 0.45;  // p >= 0.45 * 0.4 = 0.18: three candidates
  EXPECT_EQ(keys(histogram(p, l, 2000)), (std::vector<int32_t>{0, 1, 2}));
}

TEST(Sampler, FrequenciesFollowTheTemperedSoftmax) {
  uint64_t seed = std::random_device{}();
  std::cout << "sampler seed=" << seed << "\n";
  const std::vector<float> l = {2.0f, 1.0f, 0.5f, -1.0f, 0.0f};
  for (double temp : {0.5, 1.0, 2.0}) {
    SamplingParams p{.temperature = temp, .top_k = 0, .top_p = 1.0, .min_p = 0.0, .seed = seed};
    const int n = 40000;
    auto h = histogram(p, l, n);
    double z = 0;
    for (float x : l) z += std::exp(x / temp);
    for (size_t i = 0; i < l.size(); ++i) {
      double want = std::exp(l[i] / temp) / z, got = static_cast<double>(h[static_cast<int32_t>(i)]) / n;
      EXPECT_NEAR(got, want, 5 * std::sqrt(want * (1 - want) / n) + 1e-4) << "temperature " << temp << " token " << i;
    }
  }
}

TEST(Sampler, TheSeedReproducesTheSequence) {
  const std::vector<float> l = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
  SamplingParams p{.temperature = 1.0, .top_k = 0, .top_p = 1.0, .min_p = 0.0, .seed = 7};
  Sampler a(p), b(p);
  std::vector<int32_t> x, y;
  for (int i = 0; i < 50; ++i) x.push_back(a.sample(l)), y.push_back(b.sample(l));
  EXPECT_EQ(x, y);
  p.seed = 8;
  Sampler c(p);
  std::vector<int32_t> z;
  for (int i = 0; i < 50; ++i) z.push_back(c.sample(l));
  EXPECT_NE(x, z);
}

// logprobs_of: softmax of {ln 4, ln 3, ln 2, ln 1} is {0.4, 0.3, 0.2, 0.1} (ln written out by hand below); a
// NaN or infinite logit has -inf and never ranks; ties rank the lower id first; top_n past the finite ones stops there.
TEST(Logprobs, HandComputedLogSoftmax) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> l = {0.0f, std::log(2.0f), nan, std::log(4.0f), std::log(3.0f), inf};
  Logprobs lp = logprobs_of(l, 4, 3);
  EXPECT_EQ(lp.chosen.token, 4);
  EXPECT_NEAR(lp.chosen.logprob, -1.2039728043259361, 1e-7);  // ln 0.3
  ASSERT_EQ(lp.top.size(), 3u);
  const int32_t ids[] = {3, 4, 1};
  const double want[] = {-0.916290731874155, -1.2039728043259361, -1.6094379124341003};  // ln 0.4, ln 0.3, ln 0.2
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(lp.top[i].token, ids[i]);
    EXPECT_NEAR(lp.top[i].logprob, want[i], 1e-7);
  }
  EXPECT_EQ(logprobs_of(l, 2, 0).chosen.logprob, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(logprobs_of(l, 0, 10).top.size(), 4u);
  Logprobs tie = logprobs_of(std::vector<float>{1, 2, 2}, 0, 2);
  EXPECT_EQ(tie.top[0].token, 1);
  EXPECT_EQ(tie.top[1].token, 2);
}

// A sampler that reports logprobs keeps its sampling: the same tokens from the same seed.
TEST(Logprobs, ReportingDoesNotChangeTheSample) {
  const std::vector<float> l = {0.5f, 1.5f, -0.25f, 1.0f, 0.0f};
  SamplingParams p{.temperature = 0.8, .top_k = 0, .top_p = 1.0, .min_p = 0.0, .seed = 11};
  Sampler plain(p);
  p.logprobs = 2;
  Sampler reporting(p);
  EXPECT_TRUE(plain.needs_logits());  // it samples
  for (int i = 0; i < 50; ++i) {
    const int32_t t = reporting.sample(l);
    EXPECT_EQ(t, plain.sample(l));
    ASSERT_TRUE(reporting.last_logprobs().has_value());
    EXPECT_EQ(reporting.last_logprobs()->chosen.token, t);
  }
  EXPECT_FALSE(plain.last_logprobs().has_value());
  EXPECT_TRUE(Sampler(SamplingParams{.logprobs = 0}).needs_logits());
  EXPECT_FALSE(Sampler(SamplingParams{}).needs_logits());
}

}  // namespace
}  // namespace tg::llm
