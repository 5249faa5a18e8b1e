// Mixture-of-experts pieces against independent references: the routing (model/blocks/routing.hpp) against
// numpy (reference_routing.py: float64 gates, np.lexsort's order), and the expert products (qmatmul_experts)
// against float64 loops over weights built by hand. The whole MoE decoders (qwen3moe, olmoe) are in model_test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "model/blocks/routing.hpp"
#include "q8_reference.hpp"
#include "quant/quant.hpp"
#include "raw_files.hpp"

namespace tg::llm {
namespace {

uint32_t test_seed(const std::string& what) {
  const uint32_t seed = std::random_device{}();
  std::cout << "moe_test " << what << " seed=" << seed << "\n";
  return seed;
}

struct Reference {
  std::vector<int32_t> ids;
  std::vector<double> weights;
};

// numpy's routing of `logits` (T, E) as reference_routing.py computes it
Reference numpy_routing(const std::vector<float>& logits, int64_t T, int64_t E, const RoutingSpec& spec,
                        const std::vector<float>& bias = {}) {
  const std::string stem = ::testing::TempDir() + "tg_moe_" + std::to_string(::getpid());
  write_raw(stem + ".logits.f32", logits);
  std::string cmd = std::string(TG_PYTHON) + " " + TG_LLM_TEST_DIR + "/reference_routing.py " + stem + ".logits.f32 " +
                    std::to_string(T) + " " + std::to_string(E) + " " + std::to_string(spec.k) + " " +
                    (spec.gate == RoutingSpec::Gate::softmax ? "softmax" : "sigmoid") + " " +
                    (spec.normalize ? "1" : "0") + " " + std::to_string(spec.scale) + " " + stem;
  if (!bias.empty()) {
    write_raw(stem + ".bias.f32", bias);
    cmd += " --bias " + stem + ".bias.f32";
  }
  if (spec.groups > 1)
    cmd += " --groups " + std::to_string(spec.groups) + " --groups-used " + std::to_string(spec.groups_used);
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "the reference failed (needs python3 with numpy): " << cmd;
  Reference r{read_raw<int32_t>(stem + ".ids.i32"), read_raw<double>(stem + ".weights.f64")};
  for (const char* s : {".logits.f32", ".bias.f32", ".ids.i32", ".weights.f64"}) std::filesystem::remove(stem + s);
  return r;
}

void expect_routes(Routes got, const Reference& want, int64_t T, int64_t K) {
  const auto ids = got.ids.to_vector<int32_t>();
  const auto w = got.weights.to_vector<float>();
  ASSERT_EQ(want.ids.size(), static_cast<size_t>(T * K));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < K; ++s) {
      const size_t i = static_cast<size_t>(t * K + s);
      EXPECT_EQ(ids[i], want.ids[i]) << "token " << t << " slot " << s;
      EXPECT_NEAR(w[i], want.weights[i], 2e-6 * std::fabs(want.weights[i]) + 2e-7) << "token " << t << " slot " << s;
    }
}

// The seed's test_256_experts_matches_numpy: 256 experts, 8 a token, ties planted 32 columns apart (across every
// vector width) at the top; rows with more tied experts than slots (the lower indices must win); rows with ties
// inside the top 8; and plain random rows.
TEST(Routing, TwoHundredFiftySixExpertsMatchNumpy) {
  const int64_t T = 16, E = 256;
  std::mt19937 rng(test_seed("256 experts"));
  std::normal_distribution<float> nd;
  std::vector<float> logits(static_cast<size_t>(T * E));
  for (auto& v : logits) v = nd(rng);
  for (int64_t t = 0; t < 4; ++t)  // exactly 8 tied at the top
    for (int64_t c = 7; c < E; c += 32) logits[static_cast<size_t>(t * E + c)] = 10.0f;
  for (int64_t t = 4; t < 8; ++t)  // 12 tied at the top: the 8 lowest indices win
    for (int64_t c = 250; c >= 0; c -= 21) logits[static_cast<size_t>(t * E + c)] = 10.0f;
  for (int64_t t = 8; t < 12; ++t)  // pairs of equal values among the leaders
    for (int64_t c = 0; c < 6; ++c) {
      const float v = 3.0f + static_cast<float>(c);
      logits[static_cast<size_t>(t * E + 200 - 17 * c)] = v;
      logits[static_cast<size_t>(t * E + 3 + 31 * c)] = v;
    }
  for (bool normalize : {true, false}) {
    const RoutingSpec spec{.gate = RoutingSpec::Gate::softmax, .k = 8, .normalize = normalize};
    SCOPED_TRACE(normalize ? "renormalized" : "as they are");
    expect_routes(route(Tensor::from_vector(logits, {T, E}), spec), numpy_routing(logits, T, E, spec), T, 8);
  }
}

// deepseek2's gate: sigmoid, the bias only selects, the weights renormalized and scaled.
TEST(Routing, SigmoidWithSelectionBiasMatchesNumpy) {
  const int64_t T = 9, E = 64;
  std::mt19937 rng(test_seed("sigmoid"));
  std::normal_distribution<float> nd;
  std::vector<float> logits(static_cast<size_t>(T * E)), bias(static_cast<size_t>(E));
  for (auto& v : logits) v = nd(rng);
  for (auto& v : bias) v = 0.5f * nd(rng);
  for (int64_t c = 0; c < E; c += 8) logits[static_cast<size_t>(c)] = 2.0f;  // ties in the first row
  const RoutingSpec spec{.gate = RoutingSpec::Gate::sigmoid, .k = 6, .normalize = true, .scale = 2.5};
  const Tensor b = Tensor::from_vector(bias, {E});
  expect_routes(route(Tensor::from_vector(logits, {T, E}), spec, b), numpy_routing(logits, T, E, spec, bias), T, 6);
}

// DeepSeek-V3's group limit: 256 experts in 8 groups, 4 of them open, 8 picks, sigmoid with a selection bias.
// Planted: the best single expert in a group that loses on its top-2 sum, groups tied with each other (the lower
// groups win), and two equal leaders of a group (both count).
TEST(Routing, GroupLimitedMatchesNumpy) {
  const int64_t T = 12, E = 256, G = 8;
  std::mt19937 rng(test_seed("expert groups"));
  std::normal_distribution<float> nd;
  std::vector<float> logits(static_cast<size_t>(T * E)), bias(static_cast<size_t>(E));
  for (auto& v : logits) v = nd(rng);
  for (auto& v : bias) v = 0.1f * nd(rng);
  auto at = [&](int64_t t, int64_t e) -> float& { return logits[static_cast<size_t>(t * E + e)]; };
  for (int64_t t = 0; t < 3; ++t) {  // one expert far ahead in group 7; groups 1..6 carry two good ones each
    at(t, 7 * 32 + 5) = 9.0f;
    for (int64_t g = 1; g < 7; ++g) at(t, g * 32 + 3) = at(t, g * 32 + 20) = 4.0f;
  }
  for (int64_t t = 3; t < 6; ++t)  // every group tied on its top two: groups 0..3 open
    for (int64_t g = 0; g < G; ++g) at(t, g * 32 + (g + t) % 32) = at(t, g * 32 + (g + 2 * t + 1) % 32) = 6.0f;
  for (int64_t t = 6; t < 9; ++t)  // within a group: two equal leaders count twice
    at(t, 2 * 32 + 11) = at(t, 2 * 32 + 12) = 5.0f;
  for (bool biased : {false, true}) {
    SCOPED_TRACE(biased ? "with a selection bias" : "no bias");
    const RoutingSpec spec{
        .gate = RoutingSpec::Gate::sigmoid, .k = 8, .normalize = true, .scale = 2.5, .groups = G, .groups_used = 4};
    const std::vector<float> used = biased ? bias : std::vector<float>(bias.size(), 0.0f);
    expect_routes(route(Tensor::from_vector(logits, {T, E}), spec, Tensor::from_vector(used, {E})),
                  numpy_routing(logits, T, E, spec, used), T, 8);
  }
}

// A NaN score is never picked; a row with fewer pickable scores than slots pads with expert E and weight 0.
TEST(Routing, NanScoresAreNeverPicked) {
  const int64_t E = 8, K = 3;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> score = {0.1f, nan, 0.9f, 0.5f, nan, 0.7f, 0.2f, 0.3f,  // picks 2, 5, 3
                              nan,  nan, nan,  nan,  nan, nan,  0.4f, nan};  // picks 6, then pads
  const Tensor s = Tensor::from_vector(score, {2, E});
  Routes r = top_k_experts(s, s, {.k = K});
  EXPECT_EQ(r.ids.to_vector<int32_t>(), (std::vector<int32_t>{2, 5, 3, 6, 8, 8}));
  const auto w = r.weights.to_vector<float>();
  EXPECT_EQ(w, (std::vector<float>{0.9f, 0.7f, 0.5f, 0.4f, 0.0f, 0.0f}));
}

TEST(Routing, BadShapesAreOneClearError) {
  const Tensor s = Tensor::zeros({2, 4}, dtypes::float32);
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { top_k_experts(s, s, {.k = 5}); }), "tg-llm: 5 experts per token out of 4");
  EXPECT_NE(
      message([&] { top_k_experts(s, Tensor::zeros({2, 3}, dtypes::float32), {.k = 1}); }).find("(T, experts) float32"),
      std::string::npos);
  EXPECT_EQ(message([&] { route(s, {.k = 3, .groups = 2, .groups_used = 1}); }),
            "tg-llm: 3 experts per token from 1 of 2 groups of 4 experts");
}

// Q8_0 blocks built by hand: a float16 scale (a power of two: exact), then 32 signed bytes; value = d * q.
std::vector<uint8_t> q8_0_rows(const std::vector<int8_t>& q, const std::vector<int>& exponents, int64_t rows,
                               int64_t cols, std::vector<double>& values) {
  std::vector<uint8_t> raw;
  values.assign(static_cast<size_t>(rows * cols), 0);
  for (int64_t b = 0; b < rows * cols / 32; ++b) {
    const int e = exponents[static_cast<size_t>(b)];
    const uint16_t half = static_cast<uint16_t>((e + 15) << 10);  // 2^e as float16
    raw.push_back(static_cast<uint8_t>(half & 255));
    raw.push_back(static_cast<uint8_t>(half >> 8));
    for (int64_t i = 0; i < 32; ++i) {
      const int8_t v = q[static_cast<size_t>(b * 32 + i)];
      raw.push_back(static_cast<uint8_t>(v));
      values[static_cast<size_t>(b * 32 + i)] = std::ldexp(static_cast<double>(v), e);
    }
  }
  return raw;
}

// Each (token, slot) pair against a float64 loop over its own expert's rows, with the input shared by a token's
// slots (gate, up) or one per pair (down); ids outside [0, E) give zero rows.
TEST(ExpertProducts, MatchFloat64Loops) {
  const int64_t E = 5, rows = 24, cols = 128, T = 3, K = 4;
  std::mt19937 rng(test_seed("expert products"));
  std::uniform_int_distribution<int> qd(-127, 127), ed(-8, -4), id(0, E - 1);
  std::normal_distribution<float> nd;
  std::vector<int8_t> q(static_cast<size_t>(E * rows * cols));
  for (auto& v : q) v = static_cast<int8_t>(qd(rng));
  std::vector<int> exps(static_cast<size_t>(E * rows * cols / 32));
  for (auto& v : exps) v = ed(rng);
  std::vector<double> want_w;
  std::vector<uint8_t> q8 = q8_0_rows(q, exps, E * rows, cols, want_w);
  std::vector<float> f32(want_w.begin(), want_w.end());
  std::vector<uint8_t> f32_raw(f32.size() * 4);
  std::memcpy(f32_raw.data(), f32.data(), f32_raw.size());
  std::vector<int32_t> ids(static_cast<size_t>(T * K));
  for (auto& v : ids) v = id(rng);
  ids[1] = -1;  // padding picks
  ids[6] = static_cast<int32_t>(E);
  for (const auto& [type, raw] : {std::pair{GGMLType::Q8_0, &q8}, std::pair{GGMLType::F32, &f32_raw}}) {
    GGUFTensor g;
    g.name = "experts";
    g.ne = {cols, rows, E};
    g.type = type;
    g.data = raw->data();
    g.nbytes = raw->size();
    const QuantMatrix w = upload_matrix(g, nullptr);
    for (bool shared : {true, false}) {
      const int64_t n = shared ? T : T * K;
      std::vector<float> x(static_cast<size_t>(n * cols));
      for (auto& v : x) v = nd(rng);
      const auto y =
          qmatmul_experts(w, E, Tensor::from_vector(x, {n, cols}), Tensor::from_vector(ids, {T, K}, dtypes::int32))
              .to_vector<float>();
      // the integer formats multiply x rounded to int8 per 32 values (llama.cpp's Q8_0 activation)
      const std::vector<double> xv = type == GGMLType::F32 ? std::vector<double>(x.begin(), x.end()) : q8_rounded(x);
      ASSERT_EQ(y.size(), static_cast<size_t>(T * K * rows));
      for (int64_t p = 0; p < T * K; ++p)
        for (int64_t r = 0; r < rows; ++r) {
          const int32_t e = ids[static_cast<size_t>(p)];
          double ref = 0, mag = 0;
          if (e >= 0 && e < E)
            for (int64_t c = 0; c < cols; ++c) {
              const double term = want_w[static_cast<size_t>((e * rows + r) * cols + c)] *
                                  xv[static_cast<size_t>((shared ? p / K : p) * cols + c)];
              ref += term;
              mag += std::fabs(term);
            }
          EXPECT_NEAR(y[static_cast<size_t>(p * rows + r)], ref, 1e-5 * mag + 1e-6)
              << type_name(type) << (shared ? " shared" : " per pair") << " pair " << p << " row " << r;
        }
    }
  }
}

TEST(ExpertProducts, BadShapesAreOneClearError) {
  std::vector<uint8_t> raw(4 * 8 * 32 * 4);
  GGUFTensor g;
  g.name = "experts";
  g.ne = {32, 8, 4};
  g.data = raw.data();
  g.nbytes = raw.size();
  const QuantMatrix w = upload_matrix(g, nullptr);
  const Tensor ids = Tensor::zeros({2, 2}, dtypes::int32);
  EXPECT_THROW(qmatmul_experts(w, 3, Tensor::zeros({2, 32}, dtypes::float32), ids),
               std::invalid_argument);  // 32 rows, 3 experts
  EXPECT_THROW(qmatmul_experts(w, 4, Tensor::zeros({3, 32}, dtypes::float32), ids),
               std::invalid_argument);  // neither T nor T * k rows
  EXPECT_THROW(qmatmul_experts(w, 4, Tensor::zeros({2, 32}, dtypes::float32), Tensor::zeros({2, 2}, dtypes::float32)),
               std::invalid_argument);
}

}  // namespace
}  // namespace tg::llm
