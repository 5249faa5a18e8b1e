// bench_cpu: tg's CPU plugin against peers measured in the same run: OpenBLAS and BLIS sgemm (each running its
// best kernel here, see peers/gemm_peers.hpp) for GEMM and matrix-vector, plain loops at -O3 -march=native
// (peers/loops.hpp: STREAM's triad, a reduction, the row-wise ops) for the rest. Medians of several runs; one JSON
// object on stdout. tg kernels are replayed through a Jit so the figures are kernel time, not graph building. Each
// GEMM is also read as a fraction of the peak of the unit it runs on (peaks.hpp, measured in the same run).
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <tbb/parallel_for.h>

#include "cli.hpp"
#include "codegen/lower.hpp"
#include "peaks.hpp"
#include "peers/gemm_peers.hpp"
#include "peers/loops.hpp"
#include "quant/quant.hpp"
#include "quant/quant_int8.hpp"
#include "quant/quant_matrix_unit.hpp"
#include "runtime/device.hpp"
#include "schedule/schedule.hpp"
#include "tg/jit.hpp"

namespace {

// Compile time of the demo's kernels (an MLP 64x256 -> 512 -> 10 and a softmax) through the CPU plugin's
// compiler, no cache: the median ms of one kernel compiled alone, and the ms per kernel when `threads` compile at
// once (what PARALLEL_COMPILE does).
std::string compile_times(int runs, int threads) {
  tg::Tensor x = tg::Tensor::rand({64, 256}, 1), w1 = tg::Tensor::rand({256, 512}, 2),
             w2 = tg::Tensor::rand({512, 10}, 3);
  tg::Tensor y = x.matmul(w1).relu().matmul(w2).softmax(-1);
  std::vector<std::pair<std::string, std::string>> sources;  // (source, kernel name)
  tg::rt::Device& dev = tg::rt::Device::get("CPU");
  const tg::sched::Schedule schedule = tg::sched::create_schedule({y.node()}, "CPU");
  for (const auto& item : schedule.items) {
    if (item.kind != tg::sched::ScheduleItem::Kind::KERNEL) continue;
    tg::codegen::KirProgram k = tg::codegen::lower_kernel(item.kernel, dev.caps());
    sources.emplace_back(dev.render(k.view()), k.name);
  }
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r)
    for (const auto& [src, name] : sources) {
      auto t0 = std::chrono::steady_clock::now();
      dev.compile(src, name);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  std::sort(ms.begin(), ms.end());
  std::vector<double> wall;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    tbb::parallel_for(size_t{0}, sources.size(), [&](size_t i) { dev.compile(sources[i].first, sources[i].second); });
    wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                   sources.size());
  }
  std::sort(wall.begin(), wall.end());
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"kernels\": %zu, \"serial_median_ms\": %.2f, \"parallel_ms_per_kernel\": %.2f, \"threads\": %d}",
                sources.size(), ms[ms.size() / 2], wall[wall.size() / 2], threads);
  return buf;
}

double median_seconds(const std::function<void()>& f, int runs) {
  // the previous library's idle threads spin before they sleep (OpenBLAS ~2^28 cycles, TBB briefly) and would
  // take the cores from this one
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 0; i < 3; ++i) f();  // warm-up: BLIS's first calls on 2 threads run at a tenth of its speed
  // at least `runs`, and at least 0.2 s of them: the median of five 0.1 ms GEMMs on 2 threads read the wake-ups of
  // an idle worker (a KVM vCPU that halted), 170 GFLOP/s where 300 calls in a row run at 354
  std::vector<double> t;
  for (double total = 0; (static_cast<int>(t.size()) < runs || total < 0.2) && t.size() < 10000;) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    total += t.back();
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Replays fn(inputs) and waits for the result.
std::function<void()> jitted(tg::Jit& jit, std::vector<tg::Tensor> inputs) {
  for (int i = 0; i < 2; ++i) jit(inputs)[0].realize();  // run + capture
  return [&jit, inputs] {
    tg::Tensor out = jit(inputs)[0];
    float probe;
    out.shrink(std::vector<std::pair<int64_t, int64_t>>(out.ndim(), {0, 1}))
        .reshape({1})
        .copy_out(&probe, sizeof(probe));
  };
}

// One tiny kernel through a Jit replay, call to result: the fixed cost of a launch (median of 2000 calls, µs).
std::string launch_overhead() {
  tg::Tensor x = tg::Tensor::rand({16}, 1).realize();
  tg::Jit f([](const std::vector<tg::Tensor>& in, const std::vector<tg::BoundVariable>&) {
    return std::vector<tg::Tensor>{in[0] + 1.0f};
  });
  for (int i = 0; i < 3; ++i) f({x});  // capture
  std::vector<double> us;
  float probe;
  for (int i = 0; i < 2000; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    tg::Tensor out = f({x})[0];
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (i == 0) out.shrink({{0, 1}}).copy_out(&probe, sizeof(probe));
  }
  std::sort(us.begin(), us.end());
  char buf[96];
  std::snprintf(buf, sizeof(buf), "{\"jit_replay_us\": %.3f}", us[us.size() / 2]);
  return buf;
}

tg::bench::Peaks g_peaks;                       // measured at start, for each kernel's fraction of its unit's peak
int g_threads = 1;                              // CPU_COUNT: tg's threads and the most each peer may use
std::vector<tg::bench::GemmPeer> g_gemm_peers;  // loaded before any thread starts

// C = A B on float32 operands, or on bfloat16 ones converted in the product (a.cast(float32).matmul(...)): the
// peers multiply the same values as float32 (no bfloat16 GEMM in Debian's OpenBLAS or BLIS), and a bfloat16
// product is also read against the vdpbf16ps peak.
std::string gemm(int64_t m, int64_t k, int64_t n, int runs, tg::DType operands = tg::dtypes::float32) {
  tg::Tensor a = tg::Tensor::rand({m, k}, 1, operands).realize(), b = tg::Tensor::rand({k, n}, 2, operands).realize();
  tg::Jit mm([](const std::vector<tg::Tensor>& in, const std::vector<tg::BoundVariable>&) {
    return std::vector<tg::Tensor>{in[0].cast(tg::dtypes::float32).matmul(in[1].cast(tg::dtypes::float32))};
  });
  const double flops = 2.0 * m * n * k;
  const double tg_gflops = flops / median_seconds(jitted(mm, {a, b}), runs) / 1e9;
  std::vector<float> ha = a.cast(tg::dtypes::float32).to_vector<float>(),
                     hb = b.cast(tg::dtypes::float32).to_vector<float>(), hc(static_cast<size_t>(m * n));
  // each peer at its best: on all the threads, or on one where that is faster (a small GEMM split over two
  // threads of a shared VM can run slower than on one: BLIS 0.9 below 1024^3 did)
  std::string peers;
  for (const auto& p : g_gemm_peers) {
    auto gflops_on = [&](int t) {
      p.set_threads(t);
      return flops / median_seconds([&] { p.sgemm(m, k, n, ha.data(), hb.data(), hc.data()); }, runs) / 1e9;
    };
    double gflops = gflops_on(g_threads);
    int used = g_threads;
    if (g_threads > 1)
      if (const double one = gflops_on(1); one > gflops) gflops = one, used = 1;
    p.set_threads(g_threads);
    char buf[192];
    std::snprintf(buf, sizeof(buf), "%s{\"name\": \"%s\", \"threads\": %d, \"gflops\": %.2f, \"tg_over_peer\": %.3f}",
                  peers.empty() ? "" : ", ", p.name.c_str(), used, gflops, tg_gflops / gflops);
    peers += buf;
  }
  const bool bf16 = operands == tg::dtypes::bfloat16;
  char buf[320];
  std::snprintf(
      buf, sizeof(buf),
      "{\"dtype\": \"%s\", \"m\": %ld, \"k\": %ld, \"n\": %ld, \"tg_gflops\": %.2f, \"tg_of_fma_peak\": %.3f, ",
      bf16 ? "bfloat16" : "float32", m, k, n, tg_gflops, tg_gflops / g_peaks.fma_gflops);
  std::string out = buf;
  if (bf16 && g_peaks.bf16_dot_gflops > 0) {
    std::snprintf(buf, sizeof(buf), "\"tg_of_bf16_dot_peak\": %.3f, ", tg_gflops / g_peaks.bf16_dot_gflops);
    out += buf;
  }
  return out + "\"peers\": [" + peers + "]}";
}

// The LLM's prefill product (Q8_0 weights, rows x cols, `tokens` tokens; the activation's int8 form or bfloat16
// tiles made once, as the model shares them) on both units it can run on: the int8 dot products (int8_matmul,
// read against the VNNI peak) and the matrix unit (tile_matmul, where the CPU plugin grants AMX: read against the
// AMX bfloat16 peak, and against the VNNI peak it replaces). The peer comparison with llama.cpp is
// bench/llm/compare_llamacpp.py (a model-level run outside CI).
std::string prefill_products(int64_t tokens, int64_t rows, int64_t cols, int runs) {
  constexpr int64_t kBlock = 32, kBlockBytes = 34;  // Q8_0: a float16 scale, then 32 int8
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * cols / kBlock * kBlockBytes));
  uint32_t state = 1;
  for (size_t i = 0; i < bytes.size(); ++i) {
    state = state * 1664525u + 1013904223u;
    bytes[i] = i % kBlockBytes == 0   ? 0x00
               : i % kBlockBytes == 1 ? 0x2c
                                      : static_cast<uint8_t>(state >> 24);  // scale 1/16
  }
  const tg::llm::QuantMatrix w{
      tg::llm::GGMLType::Q8_0, rows, cols,
      tg::Tensor::from_vector(bytes, {static_cast<int64_t>(bytes.size())}, tg::dtypes::uint8).realize()};
  tg::llm::ProductInput in{tg::Tensor::rand({tokens, cols}, 3).realize(), nullptr};
  const double ops = 2.0 * tokens * rows * cols;
  auto gops = [&](tg::Tensor (*product)(const tg::llm::QuantMatrix&, tg::llm::ProductInput&)) {
    product(w, in).realize();  // compiles, and makes the activation's form once
    return ops /
           median_seconds(
               [&] {
                 float probe;
                 product(w, in).shrink({{0, 1}, {0, 1}}).reshape({1}).copy_out(&probe, sizeof(probe));
               },
               runs) /
           1e9;
  };
  auto of = [](double x, double peak) { return peak > 0 ? x / peak : 0.0; };
  const double int8 = gops(tg::llm::int8_matmul);
  char buf[512];
  int n = std::snprintf(buf, sizeof(buf),
                        "{\"format\": \"Q8_0\", \"tokens\": %ld, \"rows\": %ld, \"cols\": %ld, \"int8_dot\": "
                        "{\"tg_gops\": %.2f, \"tg_of_int8_dot_peak\": %.3f}",
                        tokens, rows, cols, int8, of(int8, g_peaks.vnni_gops));
  if (tg::llm::takes_matrix_unit(w, tokens)) {
    const double amx = gops(tg::llm::tile_matmul);
    n += std::snprintf(buf + n, sizeof(buf) - n,
                       ", \"matrix_unit\": {\"tg_gflops\": %.2f, \"tg_of_amx_bf16_peak\": %.3f, "
                       "\"tg_of_int8_dot_peak\": %.3f, \"vs_int8_dot\": %.2f}",
                       amx, of(amx, g_peaks.amx_bf16_gflops), of(amx, g_peaks.vnni_gops), amx / int8);
  } else {
    n += std::snprintf(buf + n, sizeof(buf) - n, ", \"matrix_unit\": null");
  }
  std::snprintf(buf + n, sizeof(buf) - n, "}");
  return buf;
}

// The peers as loaded: which kernel each runs and how it was set up.
std::string peers_json() {
  std::string out;
  for (const auto& p : g_gemm_peers)
    out += (out.empty() ? "{" : ", {") + std::string("\"name\": \"") + p.name + "\", \"kernel\": \"" + p.kernel +
           "\", \"version\": \"" + p.version + "\", \"setup\": \"" + p.setup + "\"}";
  return "[" + out + "]";
}

// Memory-bound kernels run over 512 MiB per array: 16M floats (64 MiB) fit in these VMs' 260 MiB L3.
constexpr int64_t kDramFloats = int64_t{128} << 20;

std::string triad(int64_t n, int runs, int threads) {
  tg::Tensor a = tg::Tensor::rand({n}, 1).realize(), b = tg::Tensor::rand({n}, 2).realize(),
             c = tg::Tensor::rand({n}, 3).realize();
  tg::Jit f([](const std::vector<tg::Tensor>& in, const std::vector<tg::BoundVariable>&) {
    return std::vector<tg::Tensor>{in[0] * in[1] + in[2]};
  });
  double tg_s = median_seconds(jitted(f, {a, b, c}), runs);
  std::vector<float> ha(n, 1.0f), hb(n, 2.0f), hc(n, 3.0f), hd(n);
  double peer_s = median_seconds(
      [&] {
        tg::bench::on_threads(threads, n, [&](int64_t lo, int64_t hi) {
          tg::bench::triad_loop(ha.data(), hb.data(), hc.data(), hd.data(), lo, hi);
        });
      },
      runs);
  double bytes = 16.0 * n;
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"n\": %ld, \"tg_gbps\": %.2f, \"stream_triad_gbps\": %.2f, \"tg_over_stream\": %.3f}", n,
                bytes / tg_s / 1e9, bytes / peer_s / 1e9, peer_s / tg_s);
  return buf;
}

std::string reduce_sum(int64_t n, int runs, int threads) {
  tg::Tensor a = tg::Tensor::rand({n}, 1).realize();
  tg::Jit f([](const std::vector<tg::Tensor>& in, const std::vector<tg::BoundVariable>&) {
    return std::vector<tg::Tensor>{in[0].sum()};
  });
  double tg_s = median_seconds(jitted(f, {a}), runs);
  std::vector<float> ha(n, 1.0f);
  std::vector<double> part(threads);
  double peer_s = median_seconds(
      [&] {
        tg::bench::on_threads(threads, n, [&](int64_t lo, int64_t hi) {
          part[lo * threads / n] = tg::bench::sum_loop(ha.data(), lo, hi);
        });
      },
      runs);
  double bytes = 4.0 * n;
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"n\": %ld, \"tg_gbps\": %.2f, \"stream_reduce_gbps\": %.2f, \"tg_over_stream\": %.3f}", n,
                bytes / tg_s / 1e9, bytes / peer_s / 1e9, peer_s / tg_s);
  return buf;
}

// The LLM decode shape: float16 weights (n x n) times a float32 vector; bound by reading the weights.
std::string half_matvec(int64_t n, int runs, int threads) {
  tg::Tensor w = tg::Tensor::rand({n, n}, 1, tg::dtypes::float16).realize(), x = tg::Tensor::rand({n, 1}, 2).realize();
  tg::Jit f([](const std::vector<tg::Tensor>& in, const std::vector<tg::BoundVariable>&) {
    return std::vector<tg::Tensor>{in[0].cast(tg::dtypes::float32).matmul(in[1])};
  });
  double tg_s = median_seconds(jitted(f, {w, x}), runs);
  std::vector<uint16_t> hw(static_cast<size_t>(n * n), 0x3c00);
  std::vector<float> hx(n, 1.0f), hy(n);
  double peer_s = median_seconds(
      [&] {  // a plain loop over the same bytes (converting half to float)
        tg::bench::on_threads(threads, n, [&](int64_t lo, int64_t hi) {
          tg::bench::half_matvec_loop(hw.data(), hx.data(), hy.data(), n, lo, hi);
        });
      },
      runs);
  double bytes = 2.0 * n * n;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "{\"n\": %ld, \"tg_gbps\": %.2f, \"loop_gbps\": %.2f, \"tg_over_loop\": %.3f}", n,
                bytes / tg_s / 1e9, bytes / peer_s / 1e9, peer_s / tg_s);
  return buf;
}

// int8 x int8 -> int32 dot products (rows of n); peer: the same loop in C++.
std::string int8_dot(int64_t rows, int64_t n, int runs, int threads) {
  std::vector<int8_t> ha(static_cast<size_t>(rows * n)), hb(static_cast<size_t>(n));
  for (size_t i = 0; i < ha.size(); ++i) ha[i] = static_cast<int8_t>(i * 7 % 255 - 127);
  for (size_t i = 0; i < hb.size(); ++i) hb[i] = static_cast<int8_t>(i * 3 % 255 - 127);
  tg::Tensor a = tg::Tensor::from_vector(ha, {rows, n}, tg::dtypes::int8),
             b = tg::Tensor::from_vector(hb, {n, 1}, tg::dtypes::int8);
  tg::Jit f([](const std::vector<tg::Tensor>& in, const std::vector<tg::BoundVariable>&) {
    return std::vector<tg::Tensor>{in[0].cast(tg::dtypes::int32).matmul(in[1].cast(tg::dtypes::int32))};
  });
  double tg_s = median_seconds(jitted(f, {a, b}), runs);
  std::vector<int32_t> hy(rows);
  double peer_s = median_seconds(
      [&] {
        tg::bench::on_threads(threads, rows, [&](int64_t lo, int64_t hi) {
          tg::bench::int8_matvec_loop(ha.data(), hb.data(), hy.data(), n, lo, hi);
        });
      },
      runs);
  double ops = 2.0 * rows * n;
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"rows\": %ld, \"n\": %ld, \"tg_gops\": %.2f, \"loop_gops\": %.2f, \"tg_over_loop\": %.3f}", rows, n,
                ops / tg_s / 1e9, ops / peer_s / 1e9, peer_s / tg_s);
  return buf;
}

// Row-wise softmax and layernorm over rows x cols float32; peer: the same math as plain C++ loops on the threads.
std::string rows_op(const char* name, int64_t rows, int64_t cols, int runs, int threads) {
  bool softmax = std::string(name) == "softmax";
  tg::Tensor x = tg::Tensor::rand({rows, cols}, 1).realize();
  tg::Jit f([softmax](const std::vector<tg::Tensor>& in, const std::vector<tg::BoundVariable>&) {
    const tg::Tensor& t = in[0];
    if (softmax) return std::vector<tg::Tensor>{t.softmax(-1)};
    tg::Tensor xc = t - t.mean({-1}, true);
    return std::vector<tg::Tensor>{xc * ((xc * xc).mean({-1}, true) + 1e-5).rsqrt()};
  });
  double tg_s = median_seconds(jitted(f, {x}), runs);
  std::vector<float> hx = x.to_vector<float>(), hy(hx.size());
  double peer_s = median_seconds(
      [&] {
        tg::bench::on_threads(threads, rows, [&](int64_t lo, int64_t hi) {
          (softmax ? tg::bench::softmax_loop : tg::bench::layernorm_loop)(hx.data(), hy.data(), cols, lo, hi);
        });
      },
      runs);
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"rows\": %ld, \"cols\": %ld, \"tg_ms\": %.2f, \"loop_ms\": %.2f, \"tg_over_loop\": %.3f}", rows,
                cols, tg_s * 1e3, peer_s * 1e3, peer_s / tg_s);
  return buf;
}

}  // namespace

namespace po = boost::program_options;

int main(int argc, char** argv) {
  // CPU_COUNT sets the threads of tg's CPU plugin and of every peer; --quick: small GEMMs; --gemm: GEMMs only;
  // --int8: the peaks and the prefill product only (on int8 dot products and on the matrix unit)
  int runs = 5, threads = static_cast<int>(std::thread::hardware_concurrency());
  if (const char* c = std::getenv("CPU_COUNT")) threads = std::max(1, std::atoi(c));
  bool quick = false, gemm_only = false, int8_only = false;
  po::options_description opts(
      "bench_cpu: tg's CPU kernels against their peers, one JSON object on stdout "
      "(CPU_COUNT sets the threads)");
  // clang-format off: one option per line
  opts.add_options()("help,h", "this help")("quick", po::bool_switch(&quick), "small GEMMs only")(
      "gemm", po::bool_switch(&gemm_only), "the GEMMs only")(
      "int8", po::bool_switch(&int8_only), "the peaks and the prefill product only");
  // clang-format on
  if (std::optional<int> status = tg::bench::parse_command_line("bench_cpu", argc, argv, opts)) return *status;
  g_threads = threads;
  g_peaks = tg::bench::measure_peaks(threads);
  if (int8_only) {
    std::printf("{\"bench\": \"cpu\", \"threads\": %d, \"runs\": %d, \"peaks\": %s, \"prefill_product\": %s}\n",
                threads, runs, to_json(g_peaks).c_str(), prefill_products(512, 2048, 2048, runs).c_str());
    return 0;
  }
  g_gemm_peers = tg::bench::load_gemm_peers(threads);
  std::vector<std::string> gemms;
  for (int64_t s : quick ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{256, 512, 1024, 2048})
    gemms.push_back(gemm(s, s, s, runs));
  gemms.push_back(gemm(1024, 1024, 1024, runs, tg::dtypes::bfloat16));
  if (!gemm_only) {
    gemms.push_back(gemm(4096, 4096, 1, runs));  // matrix-vector
    gemms.push_back(gemm(1, 4096, 4096, runs));  // vector-matrix
  }
  std::printf(
      "{\"bench\": \"cpu\", \"threads\": %d, \"runs\": %d, \"fma_peak_gflops\": %.1f, \"peaks\": %s, \"peers\": %s, "
      "\"gemm\": [",
      threads, runs, g_peaks.fma_gflops, to_json(g_peaks).c_str(), peers_json().c_str());
  for (size_t i = 0; i < gemms.size(); ++i) std::printf("%s%s", i ? ", " : "", gemms[i].c_str());
  std::printf("], \"prefill_product\": %s", prefill_products(512, 2048, 2048, runs).c_str());
  if (gemm_only) {
    std::printf("}\n");
    return 0;
  }
  std::printf(
      ", \"launch\": %s, \"compile\": %s, \"half_matvec\": %s, \"int8_dot\": %s, \"triad\": %s, \"sum\": %s, "
      "\"softmax\": %s, \"layernorm\": %s}\n",
      launch_overhead().c_str(), compile_times(runs, threads).c_str(), half_matvec(4096, runs, threads).c_str(),
      int8_dot(4096, 4096, runs, threads).c_str(), triad(kDramFloats, runs, threads).c_str(),
      reduce_sum(kDramFloats, runs, threads).c_str(), rows_op("softmax", 4096, 4096, runs, threads).c_str(),
      rows_op("layernorm", 4096, 4096, runs, threads).c_str());
  return 0;
}
