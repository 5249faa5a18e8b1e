// Picking the next token from logits: greedy, or temperature with top-k, top-p and min-p filters (applied in
// llama.cpp's order: top-k, top-p, min-p, then temperature), reproducible from a seed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

namespace tg::llm {

namespace constrain {
class Constraint;
}

struct SamplingParams {
  double temperature = 0.0;  // 0: greedy (argmax)
  int64_t top_k = 40;        // 0: off
  double top_p = 0.95;       // 1: off
  double min_p = 0.05;       // 0: off; keeps tokens with p >= min_p * p_max
  uint64_t seed = 0;
  int64_t logprobs = -1;  // -1: none; n >= 0: each sample reports its token's log-probability and the n likeliest
  bool greedy() const { return temperature <= 0.0; }
};

struct TokenLogprob {
  int32_t token;
  double logprob;
};
struct Logprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // the likeliest first; the lower id first on ties
};
// The log-softmax of `logits` in double: the model's distribution at temperature 1, before any filter (what
// OpenAI's and vLLM's logprobs report). Non-finite logits have -inf and are never among the top_n.
Logprobs logprobs_of(std::span<const float> logits, int32_t chosen, int64_t top_n);

class Sampler {
 public:
  explicit Sampler(SamplingParams p) : p_(p), rng_(p.seed) {}
  const SamplingParams& params() const { return p_; }
  // Index of the chosen logit. NaN and infinite logits are never chosen; if none is finite: tg::Error.
  // With params().logprobs >= 0 it also keeps the token's logprobs_of (last_logprobs).
  int32_t sample(std::span<const float> logits);
  // Whether sample() needs the logits: a greedy sampler that reports nothing takes the argmax, which the model's
  // output head computes without storing them.
  bool needs_logits() const { return !p_.greedy() || p_.logprobs >= 0 || constraint_; }
  const std::optional<Logprobs>& last_logprobs() const { return last_; }
  // Constrained decoding: tokens the constraint masks are never chosen, and each chosen one goes into it
  // (logprobs stay the model's own distribution).
  void constrain(std::shared_ptr<constrain::Constraint> c) { constraint_ = std::move(c); }
  const constrain::Constraint* constraint() const { return constraint_.get(); }

 private:
  int32_t pick(std::span<const float> logits);
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::optional<Logprobs> last_;
  std::shared_ptr<constrain::Constraint> constraint_;
  std::vector<float> masked_;  // the logits with the constraint applied
};

}  // namespace tg::llm
