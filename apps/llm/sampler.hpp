// Picking the next token from logits: greedy, or temperature with top-k, top-p and min-p filters (applied in
// llama.cpp's order: top-k, top-p, min-p, then temperature), reproducible from a seed.
#pragma once

#include <cstdint>
#include <random>
#include <span>

namespace tg::llm {

struct SamplingParams {
  double temperature = 0.0;  // 0: greedy (argmax)
  int64_t top_k = 40;        // 0: off
  double top_p = 0.95;       // 1: off
  double min_p = 0.05;       // 0: off; keeps tokens with p >= min_p * p_max
  uint64_t seed = 0;
  bool greedy() const { return temperature <= 0.0; }
};

class Sampler {
 public:
  explicit Sampler(SamplingParams p) : p_(p), rng_(p.seed) {}
  const SamplingParams& params() const { return p_; }
  // Index of the chosen logit. NaN and infinite logits are never chosen; if none is finite: tg::Error.
  int32_t sample(std::span<const float> logits);

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
};

}  // namespace tg::llm
