// Tensor-parallel models (model/tensor_parallel.hpp, ranks.hpp) on devices of this process, CPU:0 .. CPU:n-1, one
// thread a rank: a synthetic model (gen_synthetic_model.py, with its float64 reference) split over 2 and 4 ranks
// must give the reference's prompt logits (within the single-device bound) and, fed the single-device run's greedy
// tokens, decoded step by step under a tg::Jit that captures the allreduces, that run's logits at every step. Then the
// splits it refuses, each with one clear error; then lockstep (lockstep.hpp): a follower replaying the leader's
// Generator calls, and stopping with a message where it no longer matches the leader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <random>
#include <string_view>
#include <thread>

#include "generation/generator.hpp"
#include "generation/lockstep.hpp"
#include "generation/ranks.hpp"
#include "model/model.hpp"
#include "raw_files.hpp"
#include "test_seed.hpp"
#include "tg/error.hpp"
#include "tg/jit.hpp"

using namespace tg;
using namespace tg::llm;

namespace {

constexpr int64_t kVocab = 300, kPrompt = 7, kSteps = 24;

struct Split {
  const char* arch;
  const char* wtype;
  int ranks;
  double tol;  // max |error| / max |logit| of the prompt's logits against the float64 reference (model_test's bounds)
  int64_t prompt = kPrompt;  // prompt tokens (32 and more: the prefill kernels of long prompts, experts grouped)
  const char* extra = "";    // more generator flags (and a name suffix: its first word, dashes as underscores)
};

std::string make_model(const Split& c, uint32_t seed, const std::vector<int32_t>& prompt) {
  const std::string path =
      ::testing::TempDir() + "tg_tp_" + c.arch + "_" + c.wtype + "_" + std::to_string(::getpid()) + ".gguf";
  std::string toks;
  for (int32_t t : prompt) toks += (toks.empty() ? "" : ",") + std::to_string(t);
  const std::string arch = c.arch;
  const std::string generator = arch == "qwen35"      ? "/gen_synthetic_hybrid.py " + path
                                : arch == "qwen35moe" ? "/gen_synthetic_hybrid.py --moe " + path
                                                      : "/gen_synthetic_model.py " + path + " --arch " + arch;
  const std::string cmd = std::string(TG_PYTHON) + " " + TG_LLM_TEST_DIR + generator + " --wtype " + c.wtype +
                          " --seed " + std::to_string(seed) + " --vocab " + std::to_string(kVocab) +
                          " --steps 1 --tokens " + toks + " " + c.extra + " > /dev/null";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("the generator failed: " + cmd);
  return path;
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// One rank's run: the prompt's logits, then kSteps greedy steps decoded one at a time under a Jit: each step's
// logits and argmax. `fed`: the tokens fed back (the single-device run's), else its own picks.
struct RankRun {
  std::vector<std::vector<float>> logits;  // after the prompt, then after each step
  std::vector<int32_t> tokens;
};
RankRun greedy(const std::string& path, const Rank& rank, const std::vector<int32_t>& prompt,
               const std::vector<int32_t>& fed = {}) {
  auto model = Model::load(path, {.device = rank.device, .max_context = 64, .kv = KvType::f32, .tp = rank.tp});
  RankRun run;
  run.logits.push_back(model->forward(prompt, 0).to_vector<float>());
  Jit decode([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
    return std::vector<Tensor>{model->decode(in[0], {SeqPos{vars[0], vars[1]}})};
  });
  for (int64_t s = 0; s < kSteps; ++s) {
    run.tokens.push_back(argmax(run.logits.back()));
    const int32_t next = fed.empty() ? run.tokens.back() : fed[static_cast<size_t>(s)];
    Tensor tok = Tensor::from_vector(std::vector<int32_t>{next}, {1}, dtypes::int32, model->device());
    const SeqPos at = model->decode_position(0, 0, static_cast<int64_t>(prompt.size()) + s);
    run.logits.push_back(decode({tok}, {at.base, at.pos})[0].to_vector<float>());
  }
  return run;
}

std::vector<std::string> cpu_devices(int n) {
  std::vector<std::string> d;
  for (int i = 0; i < n; ++i) d.push_back("CPU:" + std::to_string(i));
  return d;
}

class TensorParallelModel : public ::testing::TestWithParam<Split> {};

TEST_P(TensorParallelModel, MatchesTheReferenceAndTheSingleDeviceTokens) {
  const Split c = GetParam();
  const uint32_t seed = tgtest::test_seed(std::string("tensor_parallel_test ") + c.arch + " " + c.wtype + " over " +
                                          std::to_string(c.ranks) + " ranks");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(3, kVocab - 1);
  std::vector<int32_t> prompt(static_cast<size_t>(c.prompt));
  for (auto& t : prompt) t = id(rng);
  const std::string path = make_model(c, seed, prompt);
  const std::vector<double> want = read_raw<double>(path + ".logits.f64");  // row prompt - 1: after the prompt
  ASSERT_GE(want.size(), static_cast<size_t>(c.prompt * kVocab));

  // the split model is fed the single-device run's tokens, so that the two runs see the same context at every step
  // even where a near tie (random weights repeat themselves into those) makes the picks differ
  const RankRun whole = greedy(path, Rank{}, prompt);
  std::vector<RankRun> runs(static_cast<size_t>(c.ranks));
  run_local_ranks(cpu_devices(c.ranks),
                  [&](const Rank& r) { runs[static_cast<size_t>(r.tp.rank)] = greedy(path, r, prompt, whole.tokens); });

  auto max_abs = [](const auto* v) {
    double m = 0;
    for (int64_t i = 0; i < kVocab; ++i) m = std::max(m, std::fabs(static_cast<double>(v[i])));
    return m;
  };
  const double* w = want.data() + (c.prompt - 1) * kVocab;
  double err = 0;
  for (int64_t i = 0; i < kVocab; ++i) err = std::max(err, std::fabs(runs[0].logits[0][static_cast<size_t>(i)] - w[i]));
  EXPECT_LE(err / max_abs(w), c.tol) << "the split model's prompt logits against the float64 reference";
  // each step's logits against the single device's: partial sums add in another order, a float32 rounding apart
  // (1e-4 bounds that for F32 weights); quantized weights multiply activations quantized to 8 bits, where one value
  // that far apart may round to the next step and move the logits by up to the weight type's bound (a recurrent
  // state keeps that change), so there the bound is the type's. A pick differs only where the single device's
  // logits are that close.
  const double step_tol = std::string_view(c.wtype) == "F32" ? 1e-4 : c.tol;
  int same = 0;
  double worst = 0;
  for (size_t s = 0; s < whole.tokens.size(); ++s) {
    const std::vector<float>&mine = runs[0].logits[s], &lw = whole.logits[s];
    double d = 0;
    for (size_t i = 0; i < lw.size(); ++i) d = std::max(d, static_cast<double>(std::fabs(mine[i] - lw[i])));
    worst = std::max(worst, d / max_abs(lw.data()));
    EXPECT_LE(d / max_abs(lw.data()), step_tol)
        << "step " << s << ": the split model's logits against the single device's";
    same += runs[0].tokens[s] == whole.tokens[s];
  }
  for (int r = 1; r < c.ranks; ++r)
    EXPECT_EQ(runs[static_cast<size_t>(r)].logits, runs[0].logits)
        << "rank " << r << " computed other logits than rank 0";
  std::cout << "tensor_parallel_test " << c.arch << " " << c.wtype << ": " << same << "/" << whole.tokens.size()
            << " greedy tokens equal to the single device's, step logits within " << worst
            << " of its, prompt logits within " << err / max_abs(w) << " of the reference\n";
  if (!HasFailure())
    for (const char* suffix : {"", ".logits.f64", ".greedy.i32"}) std::filesystem::remove(path + suffix);
}

// llama: 4 heads in 2 KV groups (2 ranks: a group each; 4 ranks: each KV head on two ranks, one query head
// each); qwen2: QKV biases split with their heads; qwen3: per-head QK-norm; gemma3: one KV head on every rank,
// post-norms after the sums, sliding windows; qwen3moe: 4 of the 8 experts on each rank, routed (decode) and
// grouped by expert (a 40-token prompt); olmoe: the QK-norm over all heads from summed squares; deepseek2: latent
// attention's heads split, the latent cache whole (q straight from h, and through q_a / q_b); qwen35: the gated delta
// nets' 2 key heads one a rank, each with the 2 value heads tiled over it (heads 0 and 2, 1 and 3), and the gated
// attention layers; qwen35moe: the same with experts and a gated shared expert.
INSTANTIATE_TEST_SUITE_P(
    Splits, TensorParallelModel,
    ::testing::Values(Split{"llama", "F32", 2, 1e-3}, Split{"llama", "Q8_0", 4, 5e-2}, Split{"qwen2", "Q8_0", 2, 5e-2},
                      Split{"qwen3", "Q8_0", 2, 5e-2}, Split{"gemma3", "Q8_0", 2, 5e-2},
                      Split{"qwen3moe", "F32", 2, 1e-3}, Split{"qwen3moe", "F32", 2, 1e-3, 40},
                      Split{"olmoe", "F32", 2, 1e-3}, Split{"deepseek2", "F32", 2, 1e-3},
                      Split{"deepseek2", "F32", 2, 1e-3, kPrompt, "--q-lora-rank 32"}, Split{"qwen35", "Q8_0", 2, 5e-2},
                      Split{"qwen35moe", "F32", 2, 1e-3}),
    [](const auto& info) {
      std::string extra = std::string(info.param.extra).substr(0, std::string(info.param.extra).find(' '));
      extra.erase(0, extra.find_first_not_of('-'));
      std::replace(extra.begin(), extra.end(), '-', '_');
      if (!extra.empty()) extra = "_" + extra;
      return std::string(info.param.arch) + "_" + info.param.wtype + "_" + std::to_string(info.param.ranks) + "_ranks" +
             (info.param.prompt == kPrompt ? "" : "_prompt_" + std::to_string(info.param.prompt)) + extra;
    });

// Splits that cannot be made: one error naming what does not split, from the rank that found it.
TEST(TensorParallelErrors, WhatDoesNotSplitIsNamed) {
  const std::vector<int32_t> prompt = {5, 6, 7};
  struct Bad {
    Split split;
    const char* message;
  } cases[] = {
      {{"llama", "F32", 3, 0}, "4 query heads in 2 KV groups do not split over 3 ranks"},
      {{"qwen35", "F32", 4, 0}, "the gated delta net's 2 key heads do not split over 4 ranks"},
      // 256-value blocks: the 4 heads of 64 split at column 128 of attn_output, inside a block
      {{"llama", "Q4_K", 2, 0}, "'blk.0.attn_output.weight' (Q4_K, blocks of 256) cannot be split at column 128"},
  };
  for (const Bad& b : cases) {
    const std::string path = make_model(b.split, 7, prompt);
    try {
      run_local_ranks(cpu_devices(b.split.ranks), [&](const Rank& r) { greedy(path, r, prompt); });
      ADD_FAILURE() << b.split.arch << " over " << b.split.ranks << " ranks loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    }
    for (const char* suffix : {"", ".logits.f64", ".greedy.i32"}) std::filesystem::remove(path + suffix);
  }
  EXPECT_THROW(parse_device_list("CPU:0,,CPU:1"), Error);
  EXPECT_THROW(parse_device_list("CPU:0,CPU:0"), Error);
  EXPECT_THROW(parse_device_list("CPU,cpu:0"), Error);  // one device, two spellings
  EXPECT_THROW(parse_device_list("CPU:0,NOSUCHDEV:1"), Error);
  EXPECT_EQ(parse_device_list("cpu:1,CPU:2"), (std::vector<std::string>{"CPU:1", "CPU:2"}));
}

TEST(TensorParallelErrors, AnUnknownDeviceFailsEveryRank) {
  const std::vector<int32_t> prompt = {5, 6, 7};
  const std::string path = make_model({"llama", "F32", 2, 0}, 7, prompt);
  try {
    run_local_ranks({"CPU:0", "NOSUCHDEV:1"}, [&](const Rank& r) { greedy(path, r, prompt); });
    ADD_FAILURE() << "a model loaded on NOSUCHDEV:1";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("NOSUCHDEV"), std::string::npos) << e.what();
  }
  for (const char* suffix : {"", ".logits.f64", ".greedy.i32"}) std::filesystem::remove(path + suffix);
}

}  // namespace

namespace {

// A rank's parts of an axis (model/tensor_parallel.hpp), hand-computed: a gated delta net of 4 key heads with 8
// value heads tiled over them, rank 1 of 2: key heads 2..3 and value heads 2..3 and 6..7.
TEST(IndexRanges, ScaledMergedAndCounted) {
  const IndexRanges values = {{2, 4}, {6, 8}};
  EXPECT_EQ(count(values), 4);
  EXPECT_EQ(scaled(values, 16), (IndexRanges{{32, 64}, {96, 128}}));
  EXPECT_EQ(scaled(values, 16, 100), (IndexRanges{{132, 164}, {196, 228}}));
  EXPECT_EQ(merged({{0, 2}, {2, 4}, {5, 5}, {6, 8}}), (IndexRanges{{0, 4}, {6, 8}}));  // adjacent joined, empty dropped
  EXPECT_EQ(scaled({{0, 1}, {1, 2}}, 3), (IndexRanges{{0, 6}}));  // one rank: every head, one run (read in place)
  const TensorParallel tp{1, 3, nullptr};
  EXPECT_EQ(tp.share(8, 1, "heads"), (std::pair<int64_t, int64_t>{2, 5}));
  EXPECT_THROW(tp.share(2, 1, "2 heads"), Error);
}

// Lockstep (lockstep.hpp): the leader's Generator calls replayed by a follower. The calls are every kind the
// server and the chat make: prefills (one scored, one reusing a prefix, one too long for the context), single and
// batched steps with greedy and sampled slots, a fork, a drafted step, a reset, and an idle spell longer than the
// followers' bound, bridged by keepalives.
struct Transcript {
  std::vector<int32_t> tokens;
  std::vector<double> logprobs;
  int failures = 0;
  std::vector<std::vector<int32_t>> contexts;  // each slot's at the end
};
Transcript script(Generator& g, const std::function<void()>& idle) {
  Transcript t;
  Sampler greedy(SamplingParams{}),
      sampled(SamplingParams{.temperature = 0.8, .top_k = 0, .top_p = 1, .min_p = 0, .seed = 5, .logprobs = 2});
  auto take = [&](const std::vector<int32_t>& v) { t.tokens.insert(t.tokens.end(), v.begin(), v.end()); };
  g.prefill({5, 6, 7, 8}, 0);
  for (int i = 0; i < 3; ++i) t.tokens.push_back(g.next(greedy, 0));
  Generator::PromptScores scores{2, {}};
  g.prefill({9, 10, 11, 12, 13}, 1, &scores);
  for (const Logprobs& lp : scores.logprobs) t.logprobs.push_back(lp.chosen.logprob);
  for (int i = 0; i < 4; ++i) {
    take(g.next_batch({0, 1}, {&greedy, &sampled}));
    t.logprobs.push_back(sampled.last_logprobs()->chosen.logprob);
  }
  g.fork(1, 0);
  for (int i = 0; i < 2; ++i) take(g.next_batch({0, 1}, {&sampled, &greedy}));
  take(g.next_drafted({t.tokens.back(), 3}, 4, 0));
  try {
    g.prefill(std::vector<int32_t>(100, 3), 1);
  } catch (const Error&) {
    ++t.failures;
  }
  g.reset(1);
  std::vector<int32_t> longer = g.cached_tokens(0);
  longer.insert(longer.end(), {4, 5});
  EXPECT_GT(g.prefill(longer, 0).reused, 10);
  take({g.next(greedy, 0)});
  idle();
  for (int i = 0; i < 2; ++i) take({g.next(sampled, 0)});
  t.contexts = {g.cached_tokens(0), g.cached_tokens(1)};
  return t;
}

TEST(Lockstep, AFollowerReplaysTheLeadersCalls) {
  const uint32_t seed = tgtest::test_seed("lockstep_test");
  const std::string path = make_model({"llama", "F32", 2, 0}, seed, {5, 6, 7});
  auto load = [&](const Rank& r) {
    return Model::load(
        path, {.device = r.device, .max_context = 64, .kv = KvType::f32, .slots = 2, .decode_rows = 4, .tp = r.tp});
  };
  Transcript want;
  {
    auto m = load(Rank{});
    Generator g(*m);
    want = script(g, [] {});
  }
  Transcript got;
  std::vector<std::vector<int32_t>> replayed;
  run_local_ranks(cpu_devices(2), [&](const Rank& r) {
    auto m = load(r);
    Generator g(*m);
    Lockstep lockstep(*r.tp.comm);
    if (!r.leader()) {
      g.replay(lockstep);
      replayed = {g.cached_tokens(0), g.cached_tokens(1)};
      return;
    }
    g.lead(lockstep);
    got = script(g, [&] {
      // 5 s of waiting for work against a follower's bound of 2 s: the follower's next wait takes the short bound
      const std::string before = std::getenv("TG_COMM_TIMEOUT_S") ? std::getenv("TG_COMM_TIMEOUT_S") : "";
      ::setenv("TG_COMM_TIMEOUT_S", "2", 1);
      lockstep.keepalive(true);
      for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
           std::chrono::steady_clock::now() < until;) {
        std::this_thread::sleep_for(g.keepalive_period());
        g.keepalive();
      }
      if (before.empty())
        ::unsetenv("TG_COMM_TIMEOUT_S");
      else
        ::setenv("TG_COMM_TIMEOUT_S", before.c_str(), 1);
      lockstep.keepalive(true);  // the follower's next wait has the old bound again
    });
    lockstep.end();
  });
  EXPECT_EQ(got.tokens, want.tokens);
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size());
  for (size_t i = 0; i < want.logprobs.size(); ++i)
    EXPECT_NEAR(got.logprobs[i], want.logprobs[i], 1e-4) << "logprob " << i;
  EXPECT_EQ(got.failures, 1);
  EXPECT_EQ(want.failures, 1);
  EXPECT_EQ(got.contexts, want.contexts);
  EXPECT_EQ(replayed, want.contexts) << "the follower's slots hold other tokens than the leader's";
  for (const char* suffix : {"", ".logits.f64", ".greedy.i32"}) std::filesystem::remove(path + suffix);
}

// A follower that no longer matches the leader ends the group with a message: a call it does not know, or a
// call that failed on one side only.
TEST(Lockstep, AFollowerThatNoLongerMatchesTheLeaderStops) {
  const std::string path = make_model({"llama", "F32", 2, 0}, 7, {5, 6, 7});
  auto expect_stop = [&](const std::function<void(Lockstep&)>& leader, const std::string& message) {
    try {
      run_local_ranks(cpu_devices(2), [&](const Rank& r) {
        auto m = Model::load(path, {.device = r.device, .max_context = 16, .kv = KvType::f32, .tp = r.tp});
        Generator g(*m);
        Lockstep lockstep(*r.tp.comm);
        if (r.leader()) {
          leader(lockstep);
          g.lead(lockstep);
          g.prefill({5, 6});  // waits in its collectives for the follower, which has stopped
        } else {
          g.replay(lockstep);
        }
      });
      ADD_FAILURE() << "the group went on";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  expect_stop([](Lockstep& l) { l.send({static_cast<LockstepCall::Op>(99), {}}); },
              "rank 0 sent lockstep call 99, which this rank does not know");
  expect_stop(
      [](Lockstep& l) {
        l.failed(true);
        l.keepalive(true);
      },
      "rank 1 no longer matches rank 0: rank 0's last call failed where its own did not");
  expect_stop([](Lockstep& l) { l.send({LockstepCall::Op::prefill, {0, -1, 100000}}); }, "no longer matches rank 0");
  for (const char* suffix : {"", ".logits.f64", ".greedy.i32"}) std::filesystem::remove(path + suffix);
}

}  // namespace
