// `tg-llm --benchmark`: the seed's figures (load and warm-up time, time to first token, prefill and decode
// tokens per second, decode latency percentiles) for one model on one device.
#pragma once

#include <cstdint>
#include <string>

#include "generation/generator.hpp"

namespace tg::llm {

struct BenchmarkOptions {
  int64_t prompt_tokens = 512;
  int64_t decode_tokens = 128;
  int64_t decode_position = 0;  // tokens already in the cache when decoding starts (depth)
  int runs = 3;                 // medians over this many runs
};

struct BenchmarkResult {
  std::string model, device;
  double load_s = 0, warmup_s = 0;
  double ttft_ms = 0;  // prefill of the prompt + the first sampled token
  double prefill_tok_s = 0, decode_tok_s = 0, decode_p50_ms = 0, decode_p95_ms = 0;
  int64_t prompt_tokens = 0, decode_tokens = 0, decode_position = 0;
  uint64_t weight_bytes_per_token = 0;  // bytes of weights one decode step reads
  int64_t peak_rss_kb = 0;
  std::string json() const;
  std::string table() const;
};

// Runs on an already loaded (and warmed-up) generator; load_s and warmup_s are the caller's measurements.
BenchmarkResult run_benchmark(Generator& gen, const BenchmarkOptions& opts);

// Warms a model up: compiles the prefill kernels of each prompt length and the decode kernels, captures the
// decode Jit, then clears the context. `progress` is called with a fraction in [0, 1].
void warm_up(Generator& gen, const std::vector<int64_t>& prefill_lengths,
             const std::function<void(double)>& progress = {});

int64_t peak_rss_kb();  // VmHWM of this process

}  // namespace tg::llm
