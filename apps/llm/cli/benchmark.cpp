// Benchmark runs: greedy sampling, synthetic prompts of ordinary vocabulary ids, medians over runs.
#include "cli/benchmark.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace tg::llm {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// Ids from the middle of the vocabulary: ordinary text pieces rather than control tokens.
std::vector<int32_t> synthetic_tokens(int64_t n, int64_t vocab, int64_t offset) {
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i)
    t.push_back(static_cast<int32_t>((vocab / 4 + (i + offset) * 7919) % (vocab / 2) + vocab / 8));
  return t;
}

}  // namespace

int64_t peak_rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  return 0;
}

void warm_up(Generator& gen, const std::vector<int64_t>& prefill_lengths, const std::function<void(double)>& progress) {
  const int64_t vocab = gen.model().config().vocab;
  Sampler greedy(SamplingParams{});
  const int64_t ctx = gen.model().max_context();
  const double steps = static_cast<double>(prefill_lengths.size()) + 3;
  double done = 0;
  int64_t n = 1;
  for (int64_t len : prefill_lengths) {
    n = std::max<int64_t>(1, std::min(len, ctx - 3));
    gen.reset();
    gen.prefill(synthetic_tokens(n, vocab, 0));
    gen.next(greedy);  // realizes the prefill
    if (progress) progress(++done / steps);
  }
  for (int i = 0; i < 3 && n + 1 + i < ctx; ++i) {  // decode: call 1 runs, call 2 captures, call 3 replays
    gen.next(greedy);
    if (progress) progress(++done / steps);
  }
  // batched decode of 2 .. slots sequences (each batch size is its own capture)
  for (int b = 2; b <= gen.slots() && ctx > 8; ++b) {
    std::vector<int> slots;
    std::vector<Sampler*> samplers;
    for (int s = 0; s < b; ++s) {
      gen.prefill(synthetic_tokens(4, vocab, s), s);
      slots.push_back(s);
      samplers.push_back(&greedy);
    }
    for (int i = 0; i < 3; ++i) gen.next_batch(slots, samplers);
  }
  // the drafted step (prompt lookup), decode_rows rows of one slot
  const int64_t rows = gen.model().decode_rows();
  if (rows > gen.slots() && gen.model().can_rewind() && ctx > 4 * rows + 8) {
    gen.reset();
    gen.prefill(synthetic_tokens(4, vocab, 0));
    gen.next(greedy);
    const std::vector<int32_t> draft = synthetic_tokens(rows - 1, vocab, 1);
    for (int i = 0; i < 3; ++i) gen.next_drafted(draft, rows);
  }
  if (progress) progress(1.0);
}

BenchmarkResult run_benchmark(Generator& gen, const BenchmarkOptions& o) {
  Model& m = gen.model();
  const int64_t vocab = m.config().vocab;
  if (o.prompt_tokens < 1 || o.decode_tokens < 1 || o.decode_position < 0 || o.prompt_tokens > m.max_context() ||
      o.decode_position + o.decode_tokens + 1 > m.max_context())
    throw Error("tg-llm: benchmark of " + std::to_string(o.prompt_tokens) + " prompt tokens and " +
                std::to_string(o.decode_tokens) + " decoded at depth " + std::to_string(o.decode_position) +
                " does not fit in the context of " + std::to_string(m.max_context()) + " (--max-context)");
  Sampler greedy(SamplingParams{});
  std::vector<double> ttft, prefill, decode, steps;
  for (int run = 0; run < std::max(1, o.runs); ++run) {
    gen.reset();
    auto t0 = Clock::now();
    gen.prefill(synthetic_tokens(o.prompt_tokens, vocab, run));
    gen.next(greedy);  // realizes the prefill's logits
    double t = since(t0);
    ttft.push_back(t * 1e3);
    prefill.push_back(static_cast<double>(o.prompt_tokens) / t);
    gen.reset();
    gen.prefill(synthetic_tokens(std::max<int64_t>(1, o.decode_position), vocab, 100 + run));
    gen.next(greedy);
    auto d0 = Clock::now();
    for (int64_t i = 0; i < o.decode_tokens; ++i) {
      auto s0 = Clock::now();
      gen.next(greedy);
      steps.push_back(since(s0) * 1e3);
    }
    decode.push_back(static_cast<double>(o.decode_tokens) / since(d0));
  }
  gen.reset();
  BenchmarkResult r;
  r.model = m.gguf().path();
  r.device = m.device();
  r.ttft_ms = median(ttft);
  r.prefill_tok_s = median(prefill);
  r.decode_tok_s = median(decode);
  r.decode_p50_ms = percentile(steps, 0.5);
  r.decode_p95_ms = percentile(steps, 0.95);
  r.prompt_tokens = o.prompt_tokens;
  r.decode_tokens = o.decode_tokens;
  r.decode_position = o.decode_position;
  r.weight_bytes_per_token = m.weight_bytes_per_token();
  r.peak_rss_kb = peak_rss_kb();
  return r;
}

std::string BenchmarkResult::json() const {
  char buf[1024];
  std::snprintf(
      buf, sizeof buf,
      "{\"model\": \"%s\", \"device\": \"%s\", \"load_s\": %.3f, \"warmup_s\": %.3f, \"prompt_tokens\": %lld, "
      "\"ttft_ms\": %.1f, "
      "\"prefill_tok_s\": %.1f, \"decode_position\": %lld, \"decode_tokens\": %lld, \"decode_tok_s\": %.2f, "
      "\"decode_p50_ms\": %.2f, "
      "\"decode_p95_ms\": %.2f, \"weight_bytes_per_token\": %llu, \"decode_weight_gbps\": %.2f, \"peak_rss_mb\": %.1f}",
      model.c_str(), device.c_str(), load_s, warmup_s, static_cast<long long>(prompt_tokens), ttft_ms, prefill_tok_s,
      static_cast<long long>(decode_position), static_cast<long long>(decode_tokens), decode_tok_s, decode_p50_ms,
      decode_p95_ms, static_cast<unsigned long long>(weight_bytes_per_token),
      static_cast<double>(weight_bytes_per_token) * decode_tok_s / 1e9, static_cast<double>(peak_rss_kb) / 1024.0);
  return buf;
}

std::string BenchmarkResult::table() const {
  std::ostringstream o;
  char line[256];
  std::snprintf(line, sizeof line, "model      %s on %s\n", model.c_str(), device.c_str());
  o << line;
  std::snprintf(line, sizeof line, "load       %.3f s, warm-up %.3f s, peak RSS %.1f MiB\n", load_s, warmup_s,
                static_cast<double>(peak_rss_kb) / 1024.0);
  o << line;
  std::snprintf(line, sizeof line, "prefill    %lld tokens: %.1f tok/s (time to first token %.1f ms)\n",
                static_cast<long long>(prompt_tokens), prefill_tok_s, ttft_ms);
  o << line;
  std::snprintf(line, sizeof line,
                "decode     %lld tokens at depth %lld: %.2f tok/s (p50 %.2f ms, p95 %.2f ms), weights read %.2f GB/s\n",
                static_cast<long long>(decode_tokens), static_cast<long long>(decode_position), decode_tok_s,
                decode_p50_ms, decode_p95_ms, static_cast<double>(weight_bytes_per_token) * decode_tok_s / 1e9);
  o << line;
  return o.str();
}

}  // namespace tg::llm
