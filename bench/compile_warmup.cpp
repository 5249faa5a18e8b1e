// bench_compile_warmup: the first run of a model-sized schedule (>= 200 distinct kernels): wall time with a serial
// compile vs PARALLEL_COMPILE=2, and with a cold vs a warm disk cache (warm must compile nothing). One JSON object.
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "cli.hpp"
#include "runtime/program_cache.hpp"
#include "tg/profile.hpp"
#include "tg/tensor.hpp"

namespace {

// `n` distinct kernels (constants are part of each kernel's code), all realized in one schedule.
void model(int n) {
  tg::Tensor x = tg::Tensor::rand({64, 64}, 1);
  std::vector<tg::Tensor> outs;
  for (int i = 0; i < n; ++i) outs.push_back(((x * (1.0 + i * 0.01)).exp() + static_cast<double>(i)).sum({1}));
  std::vector<tg::Tensor*> ptrs;
  for (auto& t : outs) ptrs.push_back(&t);
  tg::Tensor::realize_all(ptrs);
}

struct Result {
  double seconds;
  size_t compiled, disk_hits;
};

Result timed(int n, const char* parallel) {
  setenv("PARALLEL_COMPILE", parallel, 1);
  tg::rt::clear_program_cache();
  size_t c0 = tg::schedule_stats().programs_compiled, h0 = tg::schedule_stats().disk_hits;
  auto t0 = std::chrono::steady_clock::now();
  model(n);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {s, tg::schedule_stats().programs_compiled - c0, tg::schedule_stats().disk_hits - h0};
}

}  // namespace

int main(int argc, char** argv) {
  int n = 200;
  if (std::optional<int> status =
          tg::bench::parse_count("bench_compile_warmup",
                                 "bench_compile_warmup: the first run of a schedule of N distinct kernels, serial vs "
                                 "parallel compile and cold vs warm disk cache; one JSON object",
                                 "kernels", "N", n, argc, argv))
    return *status;
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / ("tg-warmup-" + std::to_string(getpid()))).string();
  // Each cold run gets its own empty cache directory: the process-wide cache reads TG_CACHE_DIR once, so the
  // cold runs clear the directory instead.
  setenv("TG_CACHE_DIR", dir.c_str(), 1);
  model(1);  // device open, TBB and LLVM start-up outside the timings
  fs::remove_all(dir);
  fs::create_directories(dir);
  Result serial = timed(n, "1");
  fs::remove_all(dir);
  fs::create_directories(dir);
  Result par = timed(n, "2");
  Result warm = timed(n, "2");
  fs::remove_all(dir);
  std::printf(
      "{\"bench\": \"compile_warmup\", \"kernels\": %d, \"cold_serial_s\": %.3f, \"cold_parallel2_s\": %.3f, "
      "\"parallel_speedup\": %.2f, \"warm_disk_s\": %.3f, \"warm_speedup_vs_cold_parallel\": %.2f, "
      "\"compiled\": {\"serial\": %zu, \"parallel\": %zu, \"warm\": %zu}, \"warm_disk_hits\": %zu, "
      "\"ms_per_kernel_serial\": %.2f}\n",
      n, serial.seconds, par.seconds, serial.seconds / par.seconds, warm.seconds, par.seconds / warm.seconds,
      serial.compiled, par.compiled, warm.compiled, warm.disk_hits,
      serial.seconds * 1e3 / std::max<size_t>(1, serial.compiled));
  return warm.compiled == 0 ? 0 : 1;
}
