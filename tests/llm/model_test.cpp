// The decoder (apps/llm/model/model.cpp) against an independent reference: tests/llm/gen_synthetic_model.py writes a
// tiny random GGUF of one architecture (dense, hybrid, MoE, MLA) in one weight type, and tests/llm/reference_forward.py
// runs llama.cpp's graph for that architecture in numpy float64 over the weights as gguf.quants dequantizes them from
// the file. Each case compares the logits of a prompt (whole and in two chunks) and of 32 single-token steps
// (forward(), then decode() under a tg::Jit as the Generator runs it), and checks that tg's greedy choice matches the
// reference's at every step. Plus the load and forward errors.
//
// Each case draws its own seed and prints it; TG_MODEL_TEST_SEED=N in the environment reruns with that one.
#include "model/model.hpp"
#include "generation/generator.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <numeric>
#include <optional>
#include <random>

#include <nlohmann/json.hpp>

#include "raw_files.hpp"
#include "tg/error.hpp"
#include "tg/jit.hpp"

namespace tg::llm {
namespace {

constexpr int64_t kVocab = 300, kPrompt = 7, kSteps = 32, kMaxContext = 64;
// tg runs float32 against a float64 reference over identical (dequantized) weights: rounding moves the logits
// by ~1e-6 of their largest magnitude, while a semantic slip (RoPE mode or base, a missing norm, the window)
// moves them by O(1) of it. The bound is relative to max |reference logit| of the row.
// Integer weight formats multiply 8-bit activations (Q8_0 per 32 values, as llama.cpp does), which the
// reference rounds the same way; but a value within float32 noise of a half step rounds up in one and down in the
// other, one step of 1/127 of its block's largest value, and these 64-wide random models carry a few such steps into
// the logits at up to ~2e-2 of their scale. Still far below a semantic slip.
// A float16 KV cache rounds every key and value to 11 bits (~1e-3 of the logits' scale here), a q8_0 one to 8 bits
// per 32 values, which the reference does not model (1.5e-2 to 4.4e-2 seen over a few seeds, also for f16 caches
// with int8 activations; bound 0.1).
// A float16 recurrent state rounds the delta rule's matrices to 11 bits each step (bound 1e-2 as a float16 KV cache).
double tolerance(const std::string& wtype, const std::string& kv = "f32", const std::string& ssm = "f32") {
  if (ssm == "f16") return std::max(1e-2, tolerance(wtype, kv));
  bool int8 = false;
  for (const char* t : {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4"})
    int8 = int8 || wtype == t;
  if (kv == "q8_0" || (int8 && kv == "f16")) return 1e-1;
  if (int8) return 5e-2;
  return kv == "f16" ? 1e-2 : 1e-3;
}
constexpr int kReported = 3;  // mismatches reported in detail per case

struct Case {
  const char* arch;
  const char* wtype;
  bool untied;                        // writes output.weight; otherwise the output projection is token_embd
  const char* kv = "f32";             // the KV cache type (LoadOptions::kv)
  const char* rope_scaling = "none";  // the generator's --rope-scaling: none, llama3, linear, yarn
  const char* ssm = "f32";            // recurrent state type (LoadOptions::ssm)
  bool flash = false;                 // attention never materializes scores (LoadOptions::max_score_bytes 0)
  const char* extra = "";             // more generator flags (deepseek2's --q-lora-rank)
  // a fixed seed (0: a fresh one each run). The MoE families with 8-bit weights take one: their int8 products
  // match the reference's rounding exactly (3e-7 of the logits' scale), but a fresh seed now and then puts two
  // experts' scores within that rounding's reach of each other (about one case in ten), and a flipped expert is an
  // O(1) change of the logits, not a bug
  uint32_t seed = 0;
  std::string flags() const {
    return std::string(untied ? "--untied" : "") +
           (std::string(rope_scaling) != "none" ? std::string(" --rope-scaling ") + rope_scaling : "") + " " + extra;
  }
  std::string extra_name() const {  // the extra flags' letters and digits
    std::string n;
    for (const char* c = extra; *c; ++c)
      if (std::isalnum(static_cast<unsigned char>(*c))) n += *c;
    return n.empty() ? "" : "_" + n;
  }
  std::string name() const {
    const std::string k = kv, r = rope_scaling;
    return std::string(arch) + "_" + wtype + (k == "f32" ? "" : "_kv_" + k) + (r == "none" ? "" : "_rope_" + r) +
           (std::string(ssm) == "f32" ? "" : std::string("_ssm_") + ssm) + (flash ? "_flash" : "") + extra_name();
  }
};
void PrintTo(const Case& c, std::ostream* os) {  // ctest names
  *os << c.arch << " " << c.wtype << (c.untied ? " untied" : "")
      << (std::string(c.kv) != "f32" ? std::string(" kv ") + c.kv : "")
      << (std::string(c.rope_scaling) != "none" ? std::string(" rope ") + c.rope_scaling : "");
}

std::string temp_path(const std::string& stem) {
  return ::testing::TempDir() + "tg_model_" + stem + "_" + std::to_string(::getpid()) + ".gguf";
}

// Runs the generator; `extra` are more of its flags. Returns false (after a test failure) when it fails.
bool generate(const std::string& path, const std::string& arch, const std::string& wtype, uint32_t seed,
              const std::vector<int32_t>& prompt, int64_t steps, const std::string& extra = "") {
  std::string toks;
  for (int32_t t : prompt) toks += (toks.empty() ? "" : ",") + std::to_string(t);
  // qwen35 (the hybrid: gated delta nets and gated attention) and qwen35moe have a generator and reference of their own
  const std::string generator = arch == "qwen35"      ? "/gen_synthetic_hybrid.py " + path
                                : arch == "qwen35moe" ? "/gen_synthetic_hybrid.py --moe " + path
                                                      : "/gen_synthetic_model.py " + path + " --arch " + arch;
  std::string cmd = std::string(TG_PYTHON) + " " + TG_LLM_TEST_DIR + generator + " --wtype " + wtype + " --seed " +
                    std::to_string(seed) + " --vocab " + std::to_string(kVocab) + " --steps " + std::to_string(steps) +
                    (toks.empty() ? "" : " --tokens " + toks) + " " + extra;
  std::cout.flush();
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << "the generator failed (needs python3 with numpy and the gguf package): " << cmd;
    return false;
  }
  return true;
}

void remove_outputs(const std::string& path) {
  for (const char* suffix : {"", ".logits.f64", ".greedy.i32"}) std::filesystem::remove(path + suffix);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int64_t argmax(const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

// The case's seed (TG_MODEL_TEST_SEED, else `fixed` where it is not 0, else a fresh one), printed with what the
// test runs.
uint32_t case_seed(const std::string& what, uint32_t fixed_seed = 0) {
  const char* fixed = std::getenv("TG_MODEL_TEST_SEED");
  const uint32_t seed = fixed        ? static_cast<uint32_t>(std::strtoul(fixed, nullptr, 10))
                        : fixed_seed ? fixed_seed
                                     : std::random_device{}();
  std::cout << "model_test " << what << " seed=" << seed << "\n";
  return seed;
}

class ModelVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(ModelVsReference, LogitsAndGreedyTokens) {
  const Case c = GetParam();
  const double kTol = tolerance(c.wtype, c.kv, c.ssm);
  const uint32_t seed = case_seed(std::string(c.arch) + " " + c.wtype + " kv " + c.kv, c.seed);
  SCOPED_TRACE(std::string(c.arch) + " " + c.wtype + " seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(3, kVocab - 1);  // past <unk> <s> </s>
  std::vector<int32_t> prompt(kPrompt);
  for (auto& t : prompt) t = id(rng);

  const std::string path = temp_path(c.name());
  auto t0 = std::chrono::steady_clock::now();
  if (!generate(path, c.arch, c.wtype, seed, prompt, kSteps, c.flags())) return;
  // rows: positions 0 .. kPrompt + kSteps - 1 of prompt + greedy; row p is the prediction after token p
  const std::vector<double> want = read_raw<double>(path + ".logits.f64");
  const std::vector<int32_t> greedy = read_raw<int32_t>(path + ".greedy.i32");
  ASSERT_EQ(want.size(), static_cast<size_t>((kPrompt + kSteps) * kVocab));
  ASSERT_EQ(greedy.size(), static_cast<size_t>(kSteps));

  const double t_gen = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  auto model = Model::load(path, {.max_context = kMaxContext,
                                  .kv = parse_kv_type(c.kv),
                                  .ssm = parse_ssm_type(c.ssm),
                                  .max_score_bytes = c.flash ? 0 : int64_t{64} << 20});
  const ModelConfig& cfg = model->config();
  ASSERT_EQ(cfg.arch, c.arch);
  ASSERT_EQ(cfg.vocab, kVocab);
  if (cfg.arch == "gemma3") {
    ASSERT_EQ(cfg.sliding_window, 4);
    ASSERT_EQ(cfg.layer_is_local.size(), static_cast<size_t>(cfg.n_layers));
    for (int64_t il = 0; il < cfg.n_layers; ++il) EXPECT_EQ(cfg.layer_is_local[il], il % 6 != 5) << "layer " << il;
  }

  double worst = 0;
  int worst_row = -1, bad_rows = 0, bad_steps = 0;
  // Compares tg's (1, vocab) logits with reference row `row`; returns them for the greedy check.
  auto check = [&](Tensor logits, int64_t row, const std::string& what) {
    std::vector<float> got = logits.to_vector<float>();
    EXPECT_EQ(got.size(), static_cast<size_t>(kVocab)) << what;
    got.resize(kVocab);
    const double* w = want.data() + row * kVocab;
    double scale = 0, err = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < kVocab; ++i) {
      scale = std::max(scale, std::fabs(w[i]));
      double e = std::fabs(got[i] - w[i]);
      if (!(e <= err)) err = e, at = i;  // NaN counts as the worst
    }
    const double rel = err / scale;
    if (!(rel <= kTol) && ++bad_rows <= kReported)  // the first few in detail, the count at the end
      ADD_FAILURE() << what << " (position " << row << "): max |error| / max |logit| = " << rel << " > " << kTol
                    << "; logit " << at << " is " << got[at] << ", reference " << w[at] << " (max |logit| " << scale
                    << ")";
    if (!(rel <= worst)) worst = rel, worst_row = static_cast<int>(row);
    return got;
  };

  // the prompt at once, then again in two chunks (which rewrites the same cache rows)
  check(model->forward(prompt, 0), kPrompt - 1, "prompt");
  check(model->forward({prompt.begin(), prompt.begin() + 3}, 0), 2, "chunk [0, 3)");
  std::vector<float> got = check(model->forward({prompt.begin() + 3, prompt.end()}, 3), kPrompt - 1, "chunk [3, 7)");

  const double t_prompt = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  // greedy decoding one token at a time; the reference's token is fed back (so a near tie cannot derail the
  // comparison), and a different choice is accepted only where the reference itself has a near tie
  int agree = 0, ties = 0;
  Jit decode([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
    return std::vector<Tensor>{model->decode(in[0], {SeqPos{vars[0], vars[1]}})};
  });
  for (int64_t s = 0; s < kSteps; ++s) {
    const int64_t row = kPrompt - 1 + s;
    const int64_t mine = argmax(got);
    if (mine == greedy[s]) {
      ++agree;
    } else {
      const double* w = want.data() + row * kVocab;
      double scale = 0;
      for (int64_t i = 0; i < kVocab; ++i) scale = std::max(scale, std::fabs(w[i]));
      if (w[greedy[s]] - w[mine] <= kTol * scale)
        ++ties;
      else if (++bad_steps <= kReported)
        ADD_FAILURE() << "greedy step " << s << ": tg picks " << mine << " (reference logit " << w[mine]
                      << "), the reference " << greedy[s] << " (" << w[greedy[s]] << ")";
    }
    const int32_t next = greedy[s];
    const int64_t pos = kPrompt + s;
    // the first two steps through forward(); the rest as the Generator decodes: decode() under a tg::Jit,
    // which runs it, captures it, then replays the capture with the new token and position
    if (s < 2) {
      got = check(model->forward({next}, pos), pos, "step " + std::to_string(s) + " (forward)");
    } else {
      Tensor tok = Tensor::from_vector(std::vector<int32_t>{next}, {1}, dtypes::int32, model->device());
      const SeqPos at = model->decode_position(0, 0, pos);
      got = check(decode({tok}, {at.base, at.pos})[0], pos, "step " + std::to_string(s) + " (decode, Jit)");
    }
  }
  EXPECT_EQ(bad_rows, 0) << "positions whose logits are off (of " << kSteps + 3 << " compared)";
  EXPECT_EQ(bad_steps, 0) << "greedy steps that disagree (of " << kSteps << ")";
  std::cout << "model_test " << c.arch << " " << c.wtype << ": max relative logit error " << worst << " (position "
            << worst_row << ", bound " << kTol << "), greedy " << agree << "/" << kSteps << " agree, " << ties
            << " near ties; generator " << t_gen << " s, load + prompt " << t_prompt << " s, steps "
            << seconds_since(t0) << " s\n";
  if (!HasFailure()) remove_outputs(path);
}

// About 1.5 s a case on 2 cores. K-quant matrices need 256-wide rows, so those cases are wider models (see
// gen_synthetic_model.py's dims); the generator also writes F16, BF16, Q4_0 and Q5_1.
INSTANTIATE_TEST_SUITE_P(
    Synthetic, ModelVsReference,
    ::testing::Values(
        Case{"llama", "F32", true}, Case{"llama", "Q8_0", false}, Case{"llama", "Q4_1", false},
        Case{"llama", "Q4_K", true}, Case{"qwen3", "Q8_0", false}, Case{"qwen3", "Q6_K", false},
        Case{"gemma3", "Q5_0", false}, Case{"gemma3", "Q4_K", false}, Case{"gemma3", "Q8_0", false},
        Case{"qwen3", "Q5_K", true}, Case{"llama", "F32", true, "q8_0"}, Case{"gemma3", "Q5_0", false, "q8_0"},
        Case{"qwen3", "Q8_0", false, "f16"}, Case{"llama", "IQ4_NL", false}, Case{"qwen3", "IQ4_XS", true},
        Case{"gemma3", "MXFP4", false}, Case{"qwen2", "Q8_0", false}, Case{"qwen2", "F32", true},
        Case{"qwen2", "Q4_K", true, "f16"}, Case{"llama", "F32", true, "f32", "llama3"},
        Case{"llama", "Q8_0", false, "f32", "linear"}, Case{"llama", "F32", false, "f32", "yarn"},
        Case{"qwen35", "F32", false}, Case{"qwen35", "Q8_0", true}, Case{"qwen35", "Q4_K", false},
        Case{"qwen35", "F16", false, "f16"}, Case{"qwen35", "F32", false, "f32", "none", "f16"},
        Case{"llama", "F32", true, "f32", "none", "f32", true},
        Case{"gemma3", "Q8_0", false, "q8_0", "none", "f32", true},
        Case{"qwen35", "F32", false, "f32", "none", "f32", true},
        Case{"qwen2", "Q8_0", false, "f16", "none", "f32", true}, Case{"qwen3moe", "F32", false},
        Case{"qwen3moe", "Q8_0", true, "f32", "none", "f32", false, "", 105}, Case{"olmoe", "F16", false},
        Case{"olmoe", "Q4_K", false, "f32", "none", "f32", false, "", 105}, Case{"qwen35moe", "F32", false},
        Case{"qwen35moe", "Q8_0", true, "f32", "none", "f32", false, "", 105}, Case{"deepseek2", "F32", false},
        Case{"deepseek2", "Q8_0", true, "f32", "none", "f32", false, "", 105}, Case{"deepseek2", "F16", false},
        Case{"deepseek2", "F32", false, "f32", "none", "f32", false, "--q-lora-rank 64"},
        Case{"deepseek2", "F32", false, "f32", "yarn", "f32", false,
             "--yarn-mscale-all-dim 0.707 --expert-groups 4:2"}),
    [](const auto& info) { return info.param.name(); });

// Prompts of 32 to 40 tokens: their products take the prefill kernels of long prompts (for the integer formats on
// x86 AMX the matrix unit, the activation and the weights rounded to bfloat16, which the reference does not model:
// it rounds the activation to Q8_0 instead; elsewhere the tiled int8 product; F32 the float32 panels), each prefix's
// last position against the reference. F32 must stay float32 (bfloat16 products measured 1.2e-2 here, 12x its
// bound).
class LongPromptVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(LongPromptVsReference, EveryPositionsLogits) {
  const Case c = GetParam();
  constexpr int64_t kLong = 40;
  // the integer formats' products round the activation one way (bfloat16 on the matrix unit) and the reference
  // another (Q8_0): two different 8-bit roundings, up to 5.8e-2 of the logits' scale over 36 seeds, so the bound
  // of the other two-rounding cases (tolerance's q8_0 KV cache); still far below a semantic slip's O(1)
  const double kTol = std::string(c.wtype) == "F32" ? tolerance(c.wtype) : tolerance(c.wtype, "q8_0");
  const uint32_t seed = case_seed(std::string("long prompt ") + c.arch + " " + c.wtype);
  SCOPED_TRACE(std::string(c.arch) + " " + c.wtype + " seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(3, kVocab - 1);
  std::vector<int32_t> prompt(kLong);
  for (auto& t : prompt) t = id(rng);
  const std::string path = temp_path("long_" + c.name());
  if (!generate(path, c.arch, c.wtype, seed, prompt, 1, c.flags())) return;
  const std::vector<double> want = read_raw<double>(path + ".logits.f64");
  ASSERT_EQ(want.size(), static_cast<size_t>((kLong + 1) * kVocab));
  auto model = Model::load(path, {.max_context = kMaxContext,
                                  .kv = parse_kv_type("f32"),
                                  .max_score_bytes = c.flash ? 0 : int64_t{64} << 20});  // the reference's cache
  // all positions' logits: the last row of each prefix would take a short prefill; one forward gives the last
  // position, so the prefix lengths 32..40 are run (each a long prefill), each checked at its last position
  double worst = 0;
  for (int64_t n = 32; n <= kLong; n += 4) {
    std::vector<float> got = model->forward({prompt.begin(), prompt.begin() + n}, 0).to_vector<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(kVocab));
    const double* w = want.data() + (n - 1) * kVocab;
    double scale = 0, err = 0;
    for (int64_t i = 0; i < kVocab; ++i)
      scale = std::max(scale, std::fabs(w[i])), err = std::max(err, std::fabs(got[i] - w[i]));
    worst = std::max(worst, err / scale);
    EXPECT_LE(err / scale, kTol) << "prefix of " << n << " tokens: max |error| / max |logit|";
  }
  std::cout << "model_test long prompt " << c.arch << " " << c.wtype << ": max relative logit error " << worst
            << " (bound " << kTol << ")\n";
  if (!HasFailure()) remove_outputs(path);
}

INSTANTIATE_TEST_SUITE_P(
    Synthetic, LongPromptVsReference,
    ::testing::Values(Case{"llama", "Q4_K", true}, Case{"gemma3", "Q8_0", false}, Case{"qwen3", "Q6_K", false},
                      Case{"llama", "F32", true}, Case{"qwen2", "Q5_0", false},
                      Case{"llama", "F32", true, "f32", "yarn"}, Case{"qwen35", "F32", false},
                      Case{"qwen35", "Q8_0", false}, Case{"gemma3", "F32", false, "f32", "none", "f32", true},
                      // the MoE families in float weights: their long prompts take the grouped experts' path;
                      // quantized, the matrix unit's bfloat16 rounding flips a near routing choice now and
                      // then (0.104 of the logits' scale once in 9 runs), and a flipped expert is an O(1)
                      // change (the int8 expert kernels: quant_test's Formats.ExpertProducts*)
                      Case{"qwen3moe", "F32", false}, Case{"olmoe", "F32", false}, Case{"qwen35moe", "F32", false},
                      Case{"deepseek2", "F32", false},
                      Case{"deepseek2", "F32", false, "f32", "yarn", "f32", false, "--expert-groups 4:2"}),
    [](const auto& info) { return info.param.name(); });

// Several sequences in one KV cache (LoadOptions::slots) decoded together: batch rows in another order than the
// slots, at different positions, next to a slot holding an unrelated sequence; each row must match the
// reference as the single-sequence decode does (a slot leaking into another moves the logits by O(1)).
class SlotsVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(SlotsVsReference, BatchedDecodeOfSeveralSlots) {
  const Case c = GetParam();
  const double kTol = tolerance(c.wtype);
  const uint32_t seed = case_seed(std::string("slots ") + c.arch + " " + c.wtype);
  SCOPED_TRACE(std::string(c.arch) + " " + c.wtype + " seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(3, kVocab - 1);
  std::vector<int32_t> prompt(kPrompt), other(11);
  for (auto& t : prompt) t = id(rng);
  for (auto& t : other) t = id(rng);
  const std::string path = temp_path(std::string("slots_") + c.arch + "_" + c.wtype);
  constexpr int64_t steps = 12;
  if (!generate(path, c.arch, c.wtype, seed, prompt, steps)) return;
  const std::vector<double> want = read_raw<double>(path + ".logits.f64");
  const std::vector<int32_t> greedy = read_raw<int32_t>(path + ".greedy.i32");
  ASSERT_EQ(want.size(), static_cast<size_t>((kPrompt + steps) * kVocab));
  auto model = Model::load(path, {.max_context = kMaxContext, .kv = KvType::f32, .slots = 3});
  ASSERT_EQ(model->slots(), 3);
  int bad = 0;
  auto check = [&](const float* got, int64_t row, const std::string& what) {
    const double* w = want.data() + row * kVocab;
    double scale = 0, err = 0;
    for (int64_t i = 0; i < kVocab; ++i)
      scale = std::max(scale, std::fabs(w[i])),
      err = std::max(err, std::fabs(got[i] - w[i]) + (std::isnan(got[i]) ? 1e30 : 0));
    if (!(err / scale <= kTol) && ++bad <= kReported)
      ADD_FAILURE() << what << " (position " << row << "): max |error| / max |logit| = " << err / scale;
  };
  // slot 2 and slot 0 hold the prompt, slot 1 another sequence
  check(model->forward(prompt, 0, 2).to_vector<float>().data(), kPrompt - 1, "prefill slot 2");
  model->forward(other, 0, 1).realize();
  check(model->forward(prompt, 0, 0).to_vector<float>().data(), kPrompt - 1, "prefill slot 0");
  Jit decode([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>& v) {
    return std::vector<Tensor>{model->decode(in[0], {{v[0], v[1]}, {v[2], v[3]}, {v[4], v[5]}})};
  });
  // batch row 0: slot 2, one step ahead of row 2: slot 0; row 1: slot 1 continues its own sequence
  int32_t other_next = 5;
  for (int64_t s = 0; s + 1 < steps; ++s) {
    const int64_t p2 = kPrompt + s + 1, p0 = kPrompt + s;  // slot 2 got greedy[0] at kPrompt alone first
    if (s == 0) check(model->forward({greedy[0]}, kPrompt, 2).to_vector<float>().data(), kPrompt, "slot 2 alone");
    std::vector<int32_t> toks{greedy[static_cast<size_t>(s + 1)], other_next, greedy[static_cast<size_t>(s)]};
    const SeqPos a = model->decode_position(0, 2, p2),
                 b = model->decode_position(1, 1, static_cast<int64_t>(other.size()) + s),
                 d = model->decode_position(2, 0, p0);
    Tensor t = Tensor::from_vector(toks, {3}, dtypes::int32, model->device());
    std::vector<float> got = decode({t}, {a.base, a.pos, b.base, b.pos, d.base, d.pos})[0].to_vector<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(3 * kVocab));
    check(got.data(), p2, "batch row 0 (slot 2) step " + std::to_string(s));
    check(got.data() + 2 * kVocab, p0, "batch row 2 (slot 0) step " + std::to_string(s));
    other_next =
        static_cast<int32_t>(std::max_element(got.begin() + kVocab, got.begin() + 2 * kVocab) - (got.begin() + kVocab));
  }
  EXPECT_EQ(bad, 0) << "batched rows whose logits are off";
  remove_outputs(path);
}

INSTANTIATE_TEST_SUITE_P(
    Synthetic, SlotsVsReference,
    ::testing::Values(Case{"llama", "Q8_0", false}, Case{"gemma3", "Q4_K", false}, Case{"qwen35", "F32", false},
                      // MoE: float weights (a near routing choice flips under 8-bit rounding: see above)
                      Case{"olmoe", "F32", false}, Case{"qwen35moe", "F16", false}, Case{"deepseek2", "F32", false}),
    [](const auto& info) { return std::string(info.param.arch) + "_" + info.param.wtype; });

// tg's greedy continuation of `prompt` for `steps` tokens (float32 KV cache), counted against llama.cpp's: the
// number of leading steps that agree.
size_t greedy_agreement(const std::string& path, const std::vector<int32_t>& prompt, const std::vector<int32_t>& want) {
  auto model = Model::load(path, {.max_context = kMaxContext + 32, .kv = KvType::f32});
  std::vector<int32_t> got;
  std::vector<float> logits = model->forward(prompt, 0).to_vector<float>();
  for (size_t s = 0; s < want.size(); ++s) {
    got.push_back(static_cast<int32_t>(argmax(logits)));
    logits = model->forward({got.back()}, static_cast<int64_t>(prompt.size() + s)).to_vector<float>();
  }
  size_t agree = 0;
  while (agree < want.size() && got[agree] == want[agree]) ++agree;
  return agree;
}

// Float32 weights must give llama.cpp's tokens exactly; the integer formats round the activations to 8 bits, where a
// value within float32 noise of a half step can round either way in the two engines (see tolerance()), so they
// must agree on the first 8 steps (or as far as the float64 reference agrees with llama.cpp, where that is less:
// the hybrid's recurrence amplifies one flipped rounding), and their agreement is printed.
void expect_golden(const std::string& name, size_t agree, size_t steps, bool exact, size_t prompt,
                   size_t reference_agrees) {
  std::cout << "golden " << name << " after " << prompt << " prompt tokens: " << agree << "/" << steps
            << " steps as llama.cpp\n";
  EXPECT_GE(agree, exact ? steps : std::min<size_t>(std::min<size_t>(8, reference_agrees), steps))
      << name << " after " << prompt << " prompt tokens";
}

nlohmann::json read_golden(const std::string& file) {
  std::ifstream in(std::string(TG_LLM_TEST_DATA) + "/" + file);
  if (!in) throw std::runtime_error("tests/llm/data/" + file + " is missing");
  return nlohmann::json::parse(in);
}

// Greedy tokens llama.cpp produced once (tests/llm/data/golden_llamacpp.json: llama-cpp-python 0.3.36, float32 KV
// cache, each entry with the generator command that rewrites its file byte for byte): from position 0 and after a
// 40-token prompt, 32 steps each.
TEST(GoldenTokens, LlamaCppGreedyContinuations) {
  const nlohmann::json golden = read_golden("golden_llamacpp.json");
  ASSERT_FALSE(golden["models"].empty());
  for (const auto& m : golden["models"]) {
    const std::string name = m["name"], command = m["generator"], file = m["file"];
    // the recorded command with the file written to a temporary path instead
    const std::string script = "tests/llm/gen_synthetic_model.py " + file;
    ASSERT_EQ(command.rfind("python3 " + script, 0), 0u) << command;
    const std::string path = temp_path("golden_" + name);
    const std::string cmd = std::string(TG_PYTHON) + " " + TG_LLM_TEST_DIR + "/gen_synthetic_model.py " + path +
                            command.substr(std::string("python3 " + script).size()) + " --steps 0 > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const bool exact = m["matrix_types"].size() == 1 && m["matrix_types"][0] == "F32";
    for (const auto& run : m["runs"]) {
      const std::vector<int32_t> prompt = run["prompt"], want = run["greedy"];
      expect_golden(name, greedy_agreement(path, prompt, want), want.size(), exact, prompt.size(), want.size());
    }
    remove_outputs(path);
  }
}

// The same for the hybrid (tests/llm/data/golden_llamacpp_qwen35.json, written by gen_synthetic_hybrid.py
// --llama-cpp-golden; each case's file is rewritten from its weight type and seed).
TEST(GoldenTokens, LlamaCppGreedyContinuationsQwen35) {
  const nlohmann::json golden = read_golden("golden_llamacpp_qwen35.json");
  ASSERT_FALSE(golden["cases"].empty());
  for (const auto& c : golden["cases"]) {
    const bool moe = c.value("moe", false);
    const std::string wtype = c["wtype"], name = std::string(moe ? "qwen35moe_" : "qwen35_") + wtype + "_seed" +
                                                 std::to_string(c["seed"].get<int>());
    const std::string path = temp_path("golden_" + name);
    const std::string cmd =
        std::string(TG_PYTHON) + " " + TG_LLM_TEST_DIR + "/gen_synthetic_hybrid.py " + path + " --wtype " + wtype +
        " --seed " + std::to_string(c["seed"].get<int>()) + " --vocab " + std::to_string(c["vocab"].get<int>()) +
        " --layers " + std::to_string(c["layers"].get<int>()) + " --interval " +
        std::to_string(c["full_attention_interval"].get<int>()) + (c["untied"].get<bool>() ? " --untied" : "") +
        (moe ? " --moe" : "") + " --steps 0 > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    for (const auto& run : c["runs"]) {
      const std::vector<int32_t> prompt = run["prompt"], want = run["llama_cpp_greedy"];
      const size_t reference_agrees =
          run["first_divergence"].is_null() ? want.size() : run["first_divergence"].get<size_t>();
      expect_golden(name, greedy_agreement(path, prompt, want), want.size(), wtype == "F32", prompt.size(),
                    reference_agrees);
    }
    remove_outputs(path);
  }
}

// A recurrent model reuses a cached prefix through its state checkpoints (Generator): slot 0 runs prompt A and a
// few tokens, then prompt B, which shares A's first 37 tokens: B reuses 32 (the last chunk boundary at or below 37,
// chunks of 16) and must continue exactly as B from scratch in slot 1. The same B again reuses all but its last
// token (the checkpoint before it); a prompt sharing fewer than 16 tokens reuses none.
TEST(HybridPrefixReuse, ThroughStateCheckpoints) {
  const uint32_t seed = case_seed("hybrid prefix reuse");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(3, kVocab - 1);
  std::vector<int32_t> a(44), b(41);
  for (auto& t : a) t = id(rng);
  for (auto& t : b) t = id(rng);
  std::copy(a.begin(), a.begin() + 37, b.begin());
  const std::string path = temp_path("hybrid_reuse");
  if (!generate(path, "qwen35", "F32", seed, {}, 0)) return;
  auto model = Model::load(path, {.max_context = kMaxContext, .kv = KvType::f32, .slots = 2});
  ASSERT_FALSE(model->can_rewind());
  // with one slot the state is one whole tensor: its checkpoint must still be a copy (a view followed the state)
  {
    auto single = Model::load(path, {.max_context = kMaxContext, .kv = KvType::f32, .slots = 1});
    Generator g1(*single, 16);
    Sampler s1(SamplingParams{});
    g1.prefill(b, 0);
    std::vector<int32_t> first, again;
    for (int i = 0; i < 6; ++i) first.push_back(g1.next(s1, 0));
    EXPECT_EQ(g1.prefill(b, 0).reused, static_cast<int64_t>(b.size()) - 1);
    for (int i = 0; i < 6; ++i) again.push_back(g1.next(s1, 0));
    EXPECT_EQ(again, first) << "one slot: the same prompt again, from the checkpoint before its last token";
  }
  Generator gen(*model, 16);
  Sampler greedy(SamplingParams{});
  auto continuation = [&](int slot) {
    std::vector<int32_t> t;
    for (int i = 0; i < 6; ++i) t.push_back(gen.next(greedy, slot));
    return t;
  };
  EXPECT_EQ(gen.prefill(a, 0).reused, 0);
  continuation(0);
  EXPECT_EQ(gen.reusable(b, 0), 32);
  EXPECT_EQ(gen.prefill(b, 0).reused, 32);
  const std::vector<int32_t> reused = continuation(0);
  EXPECT_EQ(gen.prefill(b, 1).reused, 0);
  EXPECT_EQ(continuation(1), reused) << "B after a checkpoint of A differs from B from scratch";
  EXPECT_EQ(gen.prefill(b, 1).reused, static_cast<int64_t>(b.size()) - 1);
  EXPECT_EQ(continuation(1), reused) << "B again, from the checkpoint before its last token";
  std::vector<int32_t> c(b);
  c[10] = c[10] == 5 ? 6 : 5;
  EXPECT_EQ(gen.reusable(c, 1), 0);
  // n choices: B prefilled in slot 1 and forked into slot 0 (KV rows and recurrent states copied) continues as B
  gen.prefill(b, 1);
  gen.fork(1, 0);
  EXPECT_EQ(continuation(0), reused) << "the forked slot";
  EXPECT_EQ(continuation(1), reused) << "the slot forked from";
  remove_outputs(path);
}

// A synthetic llama F32 model for a random prompt (the case's seed), with its float64 reference: the logits of
// every position (row p predicts the token after position p) and the greedy continuation. nullopt: the generator
// failed (reported).
struct Reference {
  std::string path;
  std::vector<int32_t> prompt;
  std::vector<double> logits;
  std::vector<int32_t> greedy;
};
std::optional<Reference> llama_reference(const std::string& what, int64_t steps) {
  const uint32_t seed = case_seed(what);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(3, kVocab - 1);
  Reference r{temp_path(what), std::vector<int32_t>(kPrompt), {}, {}};
  for (auto& t : r.prompt) t = id(rng);
  if (!generate(r.path, "llama", "F32", seed, r.prompt, steps)) return std::nullopt;
  r.logits = read_raw<double>(r.path + ".logits.f64");
  r.greedy = read_raw<int32_t>(r.path + ".greedy.i32");
  return r;
}

// Logprobs (the server's logprobs and echo): the prompt's own tokens scored during prefill, and each generated
// token's, against a float64 log-softmax of the float64 reference's logits of that position.
TEST(Logprobs, PromptAndGeneratedTokensMatchTheFloat64Reference) {
  constexpr int64_t kGen = 6, kTop = 4;
  const auto ref = llama_reference("logprobs", kGen);
  if (!ref) return;
  const auto& [path, prompt, want, greedy] = *ref;
  // row p of the reference predicts the token after position p
  auto log_softmax = [&](int64_t row) {
    const double* w = want.data() + row * kVocab;
    const double top = *std::max_element(w, w + kVocab);
    double sum = 0;
    for (int64_t i = 0; i < kVocab; ++i) sum += std::exp(w[i] - top);
    std::vector<double> out(w, w + kVocab);
    for (double& v : out) v -= top + std::log(sum);
    return out;
  };
  auto expect_matches = [&](const Logprobs& got, int64_t row, int32_t token, const std::string& what) {
    const std::vector<double> ref = log_softmax(row);
    EXPECT_EQ(got.chosen.token, token) << what;
    EXPECT_NEAR(got.chosen.logprob, ref[static_cast<size_t>(token)], 1e-4) << what;
    ASSERT_EQ(got.top.size(), static_cast<size_t>(kTop)) << what;
    std::vector<int32_t> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return ref[a] > ref[b]; });
    for (int64_t i = 0; i < kTop; ++i) {
      EXPECT_NEAR(got.top[i].logprob, ref[static_cast<size_t>(got.top[i].token)], 1e-4) << what << " top " << i;
      // the i-th likeliest, up to near ties
      EXPECT_NEAR(got.top[i].logprob, ref[static_cast<size_t>(order[i])], 1e-4) << what << " rank " << i;
    }
  };
  auto model = Model::load(path, {.max_context = kMaxContext, .kv = KvType::f32});
  Generator gen(*model, 4);  // chunks of 4: a row of every chunk predicts the next chunk's first token
  Generator::PromptScores scores{kTop, {}};
  gen.prefill(prompt, 0, &scores);
  ASSERT_EQ(scores.logprobs.size(), static_cast<size_t>(kPrompt - 1));
  for (int64_t i = 0; i + 1 < kPrompt; ++i)
    expect_matches(scores.logprobs[i], i, prompt[i + 1], "prompt token " + std::to_string(i + 1));
  Sampler s(SamplingParams{.logprobs = kTop});
  for (int64_t step = 0; step < kGen; ++step) {
    const int32_t t = gen.next(s, 0);
    ASSERT_TRUE(s.last_logprobs().has_value());
    if (t != greedy[step]) {  // a near tie in float32: past it the reference's rows follow another context
      const std::vector<double> ref = log_softmax(kPrompt - 1 + step);
      EXPECT_NEAR(ref[static_cast<size_t>(t)], ref[static_cast<size_t>(greedy[step])], 1e-4)
          << "step " << step << " is no near tie";
      break;
    }
    expect_matches(*s.last_logprobs(), kPrompt - 1 + step, greedy[step], "generated token " + std::to_string(step));
  }
  // scoring runs the whole prompt again: nothing reused, the same scores
  Generator::PromptScores again{kTop, {}};
  EXPECT_EQ(gen.prefill(prompt, 0, &again).reused, 0);
  ASSERT_EQ(again.logprobs.size(), scores.logprobs.size());
  for (size_t i = 0; i < again.logprobs.size(); ++i)
    EXPECT_EQ(again.logprobs[i].chosen.logprob, scores.logprobs[i].chosen.logprob);
  remove_outputs(path);
}

// Speculative decoding's check (Generator::next_drafted): whatever the guesses, the tokens are greedy decoding's,
// the float64 reference's greedy continuation (up to a near tie, past which the reference follows another context):
// guesses all right (all accepted), right then wrong, and wrong from the first.
TEST(DraftedDecode, GivesTheGreedyTokensWhateverTheGuesses) {
  constexpr int64_t kGen = 24, kRows = 5;
  const auto ref = llama_reference("drafted", kGen);
  if (!ref) return;
  const auto& [path, prompt, want, greedy] = *ref;
  auto near_tie = [&](int64_t row, int32_t a, int32_t b) {
    return std::fabs(want[row * kVocab + a] - want[row * kVocab + b]) < 1e-4;
  };
  auto model = Model::load(path, {.max_context = kMaxContext, .kv = KvType::f32, .decode_rows = kRows});
  ASSERT_EQ(model->decode_rows(), kRows);
  Generator gen(*model, 4);
  Sampler s(SamplingParams{});
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    gen.reset();
    gen.prefill(prompt);
    std::vector<int32_t> got{gen.next(s)};
    int64_t steps = 0, accepted = 0;
    while (static_cast<int64_t>(got.size()) < kGen) {
      // the reference's next tokens as guesses, the second (variant 1) or the first (variant 2) made wrong
      std::vector<int32_t> draft;
      for (int64_t i = 0; i < kRows - 1 && static_cast<int64_t>(got.size()) + i < kGen; ++i)
        draft.push_back(greedy[got.size() + i]);
      if (draft.empty()) break;
      const size_t wrong = variant == 1 ? 1 : 0;
      if (variant > 0 && wrong < draft.size()) draft[wrong] = draft[wrong] == 3 ? 4 : 3;
      const std::vector<int32_t> out = gen.next_drafted(draft, kRows);
      ASSERT_FALSE(out.empty());
      accepted += static_cast<int64_t>(out.size()) - 1;
      ++steps;
      got.insert(got.end(), out.begin(), out.end());
    }
    got.resize(std::min<size_t>(got.size(), kGen));
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] == greedy[i]) continue;
      EXPECT_TRUE(near_tie(kPrompt - 1 + static_cast<int64_t>(i), got[i], greedy[i]))
          << "token " << i << ": " << got[i] << " vs " << greedy[i];
      break;
    }
    if (variant == 0) {
      EXPECT_GE(accepted, steps * (kRows - 1) / 2) << "right guesses were rejected";
    }
    if (variant == 2) {
      EXPECT_EQ(accepted, 0) << "a wrong first guess was accepted";
    }
  }
  EXPECT_THROW(gen.next_drafted({5, 6, 7, 8, 9}, kRows),
               std::invalid_argument);                                // more guesses than rows after the pending one
  while (gen.position(0) - 1 + kRows <= kMaxContext) gen.next(s);     // the rows start at the pending token
  EXPECT_THROW(gen.next_drafted({5}, kRows), std::invalid_argument);  // no room left in the context for the rows
  remove_outputs(path);
}

// n choices of one prompt (Generator::fork), on a q8_0 KV cache (its scales copied too): the forked slots decode,
// batched, the same greedy tokens as one slot alone, and sampled ones with their own seeds.
TEST(Fork, ChoicesContinueThePrefilledContext) {
  const auto ref = llama_reference("fork", 12);
  if (!ref) return;
  const auto& [path, prompt, want, greedy] = *ref;
  auto model = Model::load(path, {.max_context = kMaxContext, .kv = KvType::q8_0, .slots = 3});
  Generator gen(*model, 4);
  Sampler g(SamplingParams{});
  gen.prefill(prompt, 1);  // slots 0 and 2 stay empty until the forks fill them
  std::vector<int32_t> alone;
  for (int i = 0; i < 12; ++i) alone.push_back(gen.next(g, 1));
  gen.reset();
  gen.prefill(prompt, 1);
  gen.fork(1, 0);
  gen.fork(1, 2);
  std::vector<std::vector<int32_t>> got(3);
  Sampler g0(SamplingParams{}), g1(SamplingParams{}), g2(SamplingParams{});
  for (int i = 0; i < 12; ++i) {
    const std::vector<int32_t> t = gen.next_batch({0, 1, 2}, {&g0, &g1, &g2});
    for (size_t s = 0; s < 3; ++s) got[s].push_back(t[s]);
  }
  for (size_t s = 0; s < 3; ++s) EXPECT_EQ(got[s], alone) << "slot " << s;
  EXPECT_THROW(gen.fork(1, 1), std::invalid_argument);
  remove_outputs(path);
}

TEST(ModelErrors, UnknownArchitectureListsTheSupportedOnes) {
  const std::string path = temp_path("mamba9");
  // llama's tensors and keys, but general.architecture (and the key prefix) "mamba9"
  if (!generate(path, "llama", "F32", 1, {}, 0, "--arch-name mamba9")) return;
  try {
    Model::load(path, {.max_context = kMaxContext});
    ADD_FAILURE() << "an unknown architecture loaded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("mamba9"), std::string::npos) << msg;
    ASSERT_FALSE(supported_architectures().empty());
    for (const std::string& a : supported_architectures())
      EXPECT_NE(msg.find(a), std::string::npos) << a << " not in: " << msg;
  }
  remove_outputs(path);
}

// A file whose tensors do not fit its architecture is one line naming the missing tensor: llama's layout (no
// QK-norm) stored as qwen3, whose attention norms q and k.
TEST(ModelErrors, AMissingTensorIsNamed) {
  const std::string path = temp_path("qwen3_without_qk_norm");
  if (!generate(path, "llama", "F32", 3, {}, 0, "--arch-name qwen3")) return;
  try {
    Model::load(path, {.max_context = kMaxContext});
    ADD_FAILURE() << "a qwen3 file without QK-norm weights loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.attn_q_norm.weight"), std::string::npos) << e.what();
  }
  remove_outputs(path);
}

// The MoE and latent-attention files tg cannot run, or that are wrong, are refused with one line saying what.
TEST(ModelErrors, MixtureOfExpertsFilesItCannotRunAreNamed) {
  struct Bad {
    const char *arch, *flags, *message;
  };
  for (const Bad& bad :
       {Bad{"qwen3moe", "--set-int qwen3moe.expert_used_count=9", "implausible mixture of experts (9 of 8 experts"},
        Bad{"deepseek2", "--drop-key deepseek2.attention.key_length_mla", "converted before MLA"},
        Bad{"deepseek2", "--set-int deepseek2.expert_group_count=3", "do not fit 8 experts with 2 a token"},
        Bad{"deepseek2", "--set-int deepseek2.expert_gating_func=3", "is not 1 (softmax) or 2 (sigmoid)"},
        Bad{"deepseek2", "--set-int deepseek2.attention.kv_lora_rank=48", "implausible latent attention"}}) {
    SCOPED_TRACE(bad.flags);
    const std::string path = temp_path(std::string("bad_") + bad.arch);
    if (!generate(path, bad.arch, "F32", 4, {}, 0, bad.flags)) return;
    try {
      Model::load(path, {.max_context = kMaxContext});
      ADD_FAILURE() << "loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(bad.message), std::string::npos) << e.what();
    }
    remove_outputs(path);
  }
}

TEST(ModelErrors, TokensPastTheContextOrVocabulary) {
  const std::string path = temp_path("llama_ctx");
  if (!generate(path, "llama", "F32", 2, {5}, 0)) return;
  auto model = Model::load(path, {.max_context = kMaxContext});
  EXPECT_EQ(model->max_context(), kMaxContext);
  EXPECT_THROW(model->forward(std::vector<int32_t>(kMaxContext + 1, 5), 0), Error);  // a prompt longer than the cache
  EXPECT_THROW(model->forward(std::vector<int32_t>(5, 5), kMaxContext - 3), Error);  // runs past its end
  EXPECT_THROW(model->forward({static_cast<int32_t>(kVocab)}, 0), Error);
  EXPECT_THROW(model->forward({-1}, 0), Error);
  // the file says context_length 128: a larger request is clamped to it
  EXPECT_EQ(Model::load(path, {.max_context = 100000})->max_context(), 128);
  remove_outputs(path);
}

}  // namespace
}  // namespace tg::llm
