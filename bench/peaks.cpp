#include "peaks.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tg::bench {
namespace {

// 12 independent chains `a = OP(a, x, y)` per thread: enough to cover the unit's latency; named variables, so
// they live in registers. The result's first bytes go to a volatile sink, so no chain is dead code.
#define TG_CHAINS(V, OP, SET, ADD, X, Y)                                                                         \
  V x = X, y = Y;                                                                                                \
  /* different starts: identical chains would be merged into one by the compiler */                              \
  V a0 = SET(1), a1 = SET(2), a2 = SET(3), a3 = SET(4), a4 = SET(5), a5 = SET(6), a6 = SET(7), a7 = SET(8),      \
    a8 = SET(9), a9 = SET(10), a10 = SET(11), a11 = SET(12);                                                     \
  for (int64_t i = 0; i < iters; ++i) {                                                                          \
    a0 = OP(a0, x, y), a1 = OP(a1, x, y), a2 = OP(a2, x, y), a3 = OP(a3, x, y);                                  \
    a4 = OP(a4, x, y), a5 = OP(a5, x, y), a6 = OP(a6, x, y), a7 = OP(a7, x, y);                                  \
    a8 = OP(a8, x, y), a9 = OP(a9, x, y), a10 = OP(a10, x, y), a11 = OP(a11, x, y);                              \
  }                                                                                                              \
  V s = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(ADD(a4, a5), ADD(a6, a7)), ADD(ADD(a8, a9), ADD(a10, a11)))); \
  uint32_t bits;                                                                                                 \
  std::memcpy(&bits, &s, sizeof(bits));                                                                          \
  return bits
constexpr int kChains = 12;

#define TG_SET_PS512(v) _mm512_set1_ps(v * 0.1f)
#define TG_SET_PS256(v) _mm256_set1_ps(v * 0.1f)
#define TG_SET_EPI512(v) _mm512_set1_epi32(v)
#define TG_SET_EPI256(v) _mm256_set1_epi32(v)
#define TG_DPBF16(a, x, y) _mm512_dpbf16_ps(a, (__m512bh)x, (__m512bh)y)
__attribute__((target("avx512f"))) uint32_t fma_avx512(int64_t iters) {
  TG_CHAINS(__m512, _mm512_fmadd_ps, TG_SET_PS512, _mm512_add_ps, _mm512_set1_ps(0.999999f), _mm512_set1_ps(1e-7f));
}
__attribute__((target("avx2,fma"))) uint32_t fma_avx2(int64_t iters) {
  TG_CHAINS(__m256, _mm256_fmadd_ps, TG_SET_PS256, _mm256_add_ps, _mm256_set1_ps(0.999999f), _mm256_set1_ps(1e-7f));
}
__attribute__((target("avx512f,avx512vnni"))) uint32_t vnni_avx512(int64_t iters) {
  TG_CHAINS(__m512i, _mm512_dpbusd_epi32, TG_SET_EPI512, _mm512_add_epi32, _mm512_set1_epi32(0x01020304),
            _mm512_set1_epi32(0x01fe01fe));
}
__attribute__((target("avx2,avxvnni"))) uint32_t vnni_avx2(int64_t iters) {
  TG_CHAINS(__m256i, _mm256_dpbusd_avx_epi32, TG_SET_EPI256, _mm256_add_epi32, _mm256_set1_epi32(0x01020304),
            _mm256_set1_epi32(0x01fe01fe));
}
// bfloat16 pairs (1.0, 1.0) and (1e-3, 1e-3): the sums stay finite and normal
__attribute__((target("avx512f,avx512bf16"))) uint32_t bf16_avx512(int64_t iters) {
  TG_CHAINS(__m512, TG_DPBF16, TG_SET_PS512, _mm512_add_ps, (__m512)_mm512_set1_epi32(0x3f803f80),
            (__m512)_mm512_set1_epi32(0x3a833a83));
}
#undef TG_DPBF16
#undef TG_SET_EPI256
#undef TG_SET_EPI512
#undef TG_SET_PS256
#undef TG_SET_PS512
#undef TG_CHAINS

// AMX: four 16x16 accumulator tiles fed by two A and two B tiles (2x2, as a GEMM's micro-kernel), each tile 16 rows
// of 64 bytes. The tile state must be granted first (request_amx).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
__attribute__((target("amx-tile,amx-int8,amx-bf16"))) uint32_t amx_tiles(int64_t iters, bool bf16) {
  alignas(64) static const uint8_t operand[1024] = {};  // zeros: the timing does not depend on the values
  alignas(64) uint8_t out[1024];
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
  // (GCC's tile intrinsics are asm statements: one per statement)
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  for (int64_t i = 0; i < iters; ++i) {
    if (bf16) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    } else {
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      _tile_dpbssd(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
    }
  }
  _tile_stored(0, out, 64);
  _tile_release();
  uint32_t bits;
  std::memcpy(&bits, out, sizeof(bits));
  return bits;
}

// ops_per_iter x iters operations per thread, on every thread at once: the best of three, summed over the threads.
double on_every_thread(int threads, int64_t iters, double ops_per_iter, const std::function<uint32_t(int64_t)>& f) {
  std::vector<double> best(threads, 0);
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<std::thread> ts;
    std::vector<double> secs(threads);
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        auto t0 = std::chrono::steady_clock::now();
        volatile uint32_t sink = f(iters);
        (void)sink;
        secs[t] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      });
    for (auto& th : ts) th.join();
    for (int t = 0; t < threads; ++t)
      best[t] = std::max(best[t], ops_per_iter * static_cast<double>(iters) / secs[t] / 1e9);
  }
  double total = 0;
  for (double b : best) total += b;
  return total;
}

bool cpu_has_amx() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (d >> 22 & 1) && (d >> 24 & 1) && (d >> 25 & 1);  // AMX-BF16, AMX-TILE, AMX-INT8
}

// "" when this process may use the AMX tile state (Linux grants it per process on request), else why not.
std::string request_amx() {
  if (!cpu_has_amx()) return "not on this CPU";
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
    return std::string("the kernel refused the tile state: ") + std::strerror(errno);
  return "";
}

}  // namespace

Peaks measure_peaks(int threads) {
  Peaks p;
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const int64_t iters = 20'000'000;
  const double lanes = avx512 ? 16 : 8;
  p.fma_gflops = on_every_thread(threads, iters, 2.0 * kChains * lanes, avx512 ? fma_avx512 : fma_avx2);
  if (__builtin_cpu_supports("avx512vnni"))
    p.vnni_gops = on_every_thread(threads, iters, 2.0 * kChains * 64, vnni_avx512);
  else if (__builtin_cpu_supports("avxvnni"))
    p.vnni_gops = on_every_thread(threads, iters, 2.0 * kChains * 32, vnni_avx2);
  if (__builtin_cpu_supports("avx512bf16"))
    p.bf16_dot_gflops = on_every_thread(threads, iters / 2, 2.0 * kChains * 32, bf16_avx512);
  const std::string refused = request_amx();
  p.amx = refused.empty() ? "granted" : refused;
  if (refused.empty()) {
    const int64_t tile_iters = 1'000'000;  // 4 tile products of 16x16 outputs x 64 bytes each
    p.amx_int8_gops =
        on_every_thread(threads, tile_iters, 2.0 * 4 * 16 * 16 * 64, [](int64_t n) { return amx_tiles(n, false); });
    p.amx_bf16_gflops =
        on_every_thread(threads, tile_iters, 2.0 * 4 * 16 * 16 * 32, [](int64_t n) { return amx_tiles(n, true); });
  }
  return p;
}

std::string to_json(const Peaks& p) {
  char buf[400];
  std::snprintf(buf, sizeof(buf),
                "{\"fma_gflops\": %.1f, \"vnni_int8_gops\": %.1f, \"bf16_dot_gflops\": %.1f, \"amx_int8_gops\": %.1f, "
                "\"amx_bf16_gflops\": %.1f, \"amx\": \"%s\"}",
                p.fma_gflops, p.vnni_gops, p.bf16_dot_gflops, p.amx_int8_gops, p.amx_bf16_gflops, p.amx.c_str());
  return buf;
}

}  // namespace tg::bench
