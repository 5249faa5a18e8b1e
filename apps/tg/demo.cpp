// `tg demo`: an MLP forward pass and a softmax on the default device, checked against a host loop, with the
// kernels that ran and their times.
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "tg/device.hpp"
#include "tg/profile.hpp"
#include "tg/tensor.hpp"

namespace po = boost::program_options;

namespace {

// out = softmax(relu(x @ w1 + b1) @ w2 + b2), computed with plain loops in double
std::vector<double> reference(const std::vector<float>& x, const std::vector<float>& w1, const std::vector<float>& b1,
                              const std::vector<float>& w2, const std::vector<float>& b2, int B, int I, int H, int O) {
  std::vector<double> out(static_cast<size_t>(B) * O);
  for (int b = 0; b < B; ++b) {
    std::vector<double> h(H);
    for (int j = 0; j < H; ++j) {
      double acc = b1[j];
      for (int i = 0; i < I; ++i) acc += static_cast<double>(x[b * I + i]) * w1[i * H + j];
      h[j] = std::max(acc, 0.0);
    }
    double mx = -INFINITY;
    std::vector<double> logits(O);
    for (int o = 0; o < O; ++o) {
      double acc = b2[o];
      for (int j = 0; j < H; ++j) acc += h[j] * w2[j * O + o];
      logits[o] = acc;
      mx = std::max(mx, acc);
    }
    double sum = 0;
    for (int o = 0; o < O; ++o) sum += std::exp(logits[o] - mx);
    for (int o = 0; o < O; ++o) out[b * O + o] = std::exp(logits[o] - mx) / sum;
  }
  return out;
}

}  // namespace

int run_demo(int argc, char** argv) {
  po::options_description opts("tg demo options");
  int B, I, H, O, iters;
  // clang-format off: one option per line
  opts.add_options()("help,h", "this help")("batch", po::value(&B)->default_value(64), "batch size")("in", po::value(&I)->default_value(256), "input features")(
      "hidden", po::value(&H)->default_value(512), "hidden units")("out", po::value(&O)->default_value(10), "classes")(
      "iters", po::value(&iters)->default_value(3), "timed repetitions");
  // clang-format on
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, opts), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts;
    return 0;
  }
  if (B < 1 || I < 1 || H < 1 || O < 1 || iters < 1) {
    std::cerr << "tg demo: --batch, --in, --hidden, --out and --iters must be at least 1\n";
    return 2;
  }

  std::string dev = tg::default_device();
  std::cout << "device: " << dev << "\n";
  auto host = [](tg::Tensor t) { return t.to_vector<float>(); };
  tg::Tensor x = tg::Tensor::randn({B, I}, 1), w1 = tg::Tensor::randn({I, H}, 2) * (1.0 / std::sqrt(I)),
             b1 = tg::Tensor::randn({H}, 3) * 0.1, w2 = tg::Tensor::randn({H, O}, 4) * (1.0 / std::sqrt(H)),
             b2 = tg::Tensor::randn({O}, 5) * 0.1;
  for (tg::Tensor* t : {&x, &w1, &b1, &w2, &b2}) t->realize();
  auto ref = reference(host(x), host(w1), host(b1), host(w2), host(b2), B, I, H, O);

  tg::set_profiling(true);
  std::vector<float> got;
  for (int it = 0; it < iters; ++it) {
    tg::take_profile();
    tg::Tensor probs = (x.matmul(w1) + b1).relu().matmul(w2);
    probs = (probs + b2).softmax(-1);
    got = probs.to_vector<float>();
  }
  auto runs = tg::take_profile();
  tg::set_profiling(false);

  double max_err = 0;
  for (size_t i = 0; i < got.size(); ++i) max_err = std::max(max_err, std::abs(got[i] - ref[i]));
  std::printf("MLP %dx%d -> %d -> %d + softmax: %zu kernels (last iteration)\n", B, I, H, O, runs.size());
  double total = 0;
  for (const auto& r : runs) {
    std::printf("  %-6s %-24s %9.3f ms %8.2f GFLOP/s %8.2f GB/s\n", r.device.c_str(), r.name.c_str(), r.ms, r.gflops,
                r.gbps);
    total += r.ms;
  }
  std::printf("total %.3f ms; max |error| vs host reference: %.2e\n", total, max_err);
  if (!(max_err < 1e-4)) {
    std::fprintf(stderr, "tg demo: result differs from the host reference (max error %.3e)\n", max_err);
    return 1;
  }
  return 0;
}
