// bench_quant MODEL.gguf [T...]: the quantized products (tg::llm::qmatmul) on each distinct weight shape of a
// model, for the token counts given (default 1 16 128 512). Prints one JSON line per (tensor, T): median ms of
// 7 runs, the multiply-adds per second and, at T = 1, the weight bytes streamed per second. A tool for tuning
// the kernels; the model-level peer comparison is compare_llamacpp.py.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../cli.hpp"
#include "gguf/gguf.hpp"
#include "quant/quant.hpp"

using namespace tg;
using namespace tg::llm;

int main(int argc, char** argv) {
  std::string model;
  std::vector<int64_t> tokens;
  bench::po::options_description opts(
      "bench_quant MODEL.gguf [T...]: the quantized products on each weight shape of "
      "a model, one JSON line per (tensor, T)");
  // clang-format off: one option per line
  opts.add_options()("help,h", "this help")("model", bench::po::value(&model)->required(), "the GGUF file")(
      "tokens", bench::po::value(&tokens)->multitoken(), "token counts (default 1 16 128 512), each at least 1");
  // clang-format on
  bench::po::positional_options_description positional;
  positional.add("model", 1).add("tokens", -1);
  if (std::optional<int> status = bench::parse_command_line("bench_quant", argc, argv, opts, positional))
    return *status;
  if (std::any_of(tokens.begin(), tokens.end(), [](int64_t t) { return t < 1; })) {
    std::fprintf(stderr, "bench_quant: token counts must be at least 1\n");
    return 2;
  }
  if (tokens.empty()) tokens = {1, 16, 128, 512};
  try {
    auto file = std::make_shared<GGUFFile>(GGUFFile::open(model));
    std::set<std::tuple<GGMLType, int64_t, int64_t>> seen;
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    for (const GGUFTensor& t : file->tensors()) {
      if (t.ne.size() != 2 || t.name.find("token_embd") != std::string::npos || !is_supported(t.type)) continue;
      if (!seen.insert({t.type, t.ne[1], t.ne[0]}).second) continue;
      QuantMatrix w = upload_matrix(t, file);
      for (int64_t T : tokens) {
        std::vector<float> xs(static_cast<size_t>(T * w.cols));
        for (float& v : xs) v = normal(rng);
        Tensor x = Tensor::from_vector(xs, {T, w.cols});
        x.realize();
        std::vector<double> ms;
        for (int run = 0; run < 8; ++run) {
          auto t0 = std::chrono::steady_clock::now();
          Tensor y = qmatmul(w, x);
          y.realize();
          double dt = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          if (run > 0) ms.push_back(dt);  // the first run compiles
        }
        std::sort(ms.begin(), ms.end());
        const double med = ms[ms.size() / 2], macs = static_cast<double>(T) * w.rows * w.cols;
        std::printf(
            "{\"tensor\": \"%s\", \"type\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"T\": %lld, \"ms\": %.3f, "
            "\"gmac_s\": %.2f",
            t.name.c_str(), type_name(w.type).c_str(), static_cast<long long>(w.rows), static_cast<long long>(w.cols),
            static_cast<long long>(T), med, macs / med / 1e6);
        if (T == 1) std::printf(", \"weight_gb_s\": %.2f", static_cast<double>(t.nbytes) / med / 1e6);
        std::printf("}\n");
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_quant: %s\n", e.what());
    return 1;
  }
  return 0;
}
