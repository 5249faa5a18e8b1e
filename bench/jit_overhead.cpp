// bench_jit_overhead: replay cost of a Jit capture of 100 tiny dependent kernels (µs per kernel), medians of
// several runs, with tinygrad's TinyJit on the same chain measured in the same run when it is installed.
// Prints one JSON object on stdout.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "tg/jit.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs the peer script and returns its "us_per_kernel", or a negative number when tinygrad is missing.
double tinygrad_us_per_kernel(int kernels, int reps) {
  std::string cmd = "python3 " TG_BENCH_DIR "/peers/tinygrad_jit_chain.py " + std::to_string(kernels) + " " +
                    std::to_string(reps) + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return -1;
  char buf[256] = {0};
  if (!std::fgets(buf, sizeof(buf), p.get())) return -1;
  return std::atof(buf);
}

}  // namespace

int main(int argc, char** argv) {
  const int kernels = 100, runs = 7;
  int reps = 200;
  if (std::optional<int> status =
          tg::bench::parse_count("bench_jit_overhead",
                                 "bench_jit_overhead: replay cost of a Jit of 100 tiny kernels, against tinygrad's "
                                 "TinyJit; one JSON object",
                                 "reps", "replays per timed run", reps, argc, argv))
    return *status;
  tg::Jit chain([&](const std::vector<tg::Tensor>& in, const std::vector<tg::BoundVariable>&) {
    tg::Tensor y = in[0];
    for (int i = 0; i < kernels; ++i) y = (y * 1.0001 + 1.0).contiguous();  // one kernel each
    return std::vector<tg::Tensor>{y};
  });
  tg::Tensor x = tg::Tensor::rand({16}, 1).realize();
  for (int i = 0; i < 3; ++i) chain({x})[0].realize();  // run, capture, first replay
  std::vector<double> us;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) chain({x});
    std::vector<float> sink = chain({x})[0].to_vector<float>();  // waits for the queue
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    us.push_back(s * 1e6 / ((reps + 1) * kernels));
  }
  double tg_us = median(us), peer = tinygrad_us_per_kernel(kernels, reps);
  std::printf(
      "{\"bench\": \"jit_overhead\", \"device\": \"%s\", \"kernels\": %d, \"captured_launches\": %zu, "
      "\"tg_us_per_kernel\": %.3f, \"tg_runs_us\": [",
      x.device().c_str(), kernels, chain.captured_launches(), tg_us);
  for (size_t i = 0; i < us.size(); ++i) std::printf("%s%.3f", i ? ", " : "", us[i]);
  if (peer > 0)
    std::printf("], \"tinygrad_us_per_kernel\": %.3f, \"tinygrad_over_tg\": %.2f}\n", peer, peer / tg_us);
  else
    std::printf("], \"tinygrad_us_per_kernel\": null, \"note\": \"tinygrad not installed (pip install tinygrad)\"}\n");
  return 0;
}
