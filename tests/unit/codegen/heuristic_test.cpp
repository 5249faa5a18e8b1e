// The heuristic's choices from a renderer's machine description (codegen/heuristic.cpp), checked against tiles
// worked out by hand from the register budget (u x c accumulators + c loaded vectors + 1 broadcast <= registers),
// and the staged, padded matmul kernel it plans checked against a float64 loop on the CPU device.
#include "codegen/heuristic.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <utility>
#include <vector>

#include "codegen/lower.hpp"
#include "runtime/device.hpp"
#include "schedule/schedule.hpp"
#include "tg/tensor.hpp"

namespace tg::codegen {
namespace {

using Tiles = std::vector<std::pair<int, int>>;

tg_renderer_caps host_caps(uint32_t simd_bytes, uint32_t registers, uint64_t l2) {
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.has_threads = 1;
  caps.max_global_dims = 1;
  caps.simd_bytes = simd_bytes, caps.simd_registers = registers, caps.l2_bytes = l2;
  return caps;
}

TEST(Heuristic, LanesAreOneRegister) {
  const tg_renderer_caps avx2 = host_caps(32, 16, 0), avx512 = host_caps(64, 32, 0);
  EXPECT_EQ(widest_lanes(avx2, dtypes::float32), 8);
  EXPECT_EQ(widest_lanes(avx2, dtypes::float64), 4);
  EXPECT_EQ(widest_lanes(avx2, dtypes::int8), 16);  // 32 bytes, but no vector is wider than 16 lanes
  EXPECT_EQ(widest_lanes(avx512, dtypes::float32), 16);
  tg_renderer_caps gpu = host_caps(0, 0, 0);
  gpu.has_threads = 0, gpu.has_local = 1, gpu.max_local_threads = 1024;
  EXPECT_EQ(widest_lanes(gpu, dtypes::float32), 4);
}

TEST(Heuristic, TilesFitTheRegisterFileBestFirst) {
  // AVX2, 16 ymm: 4x3 = 12 accumulators + 3 B vectors + 1 broadcast = 16 (7 loads per 12 FMAs); 3x4 needs 17
  const Tiles avx2 = register_tiles(host_caps(32, 16, 0), dtypes::float32, 8, 0, 0);
  ASSERT_FALSE(avx2.empty());
  EXPECT_EQ(avx2[0], std::make_pair(4, 3));
  EXPECT_EQ(avx2[1], std::make_pair(6, 2));  // 8 loads per 12
  for (auto [u, c] : avx2) EXPECT_LE(u * c + c + 1, 16) << u << "x" << c;
  EXPECT_EQ(std::count(avx2.begin(), avx2.end(), std::make_pair(3, 4)), 0);
  // 1024 rows, 2 vectors: c <= 2 and u a power of two; 4x2 (6 loads per 8 FMAs) beats 8x1 (9 per 8)
  EXPECT_EQ(register_tiles(host_caps(32, 16, 0), dtypes::float32, 8, 1024, 2)[0], std::make_pair(4, 2));
  // AVX-512, 32 zmm: 6x4 = 24 + 4 + 1 = 29 (10 loads per 24 FMAs); 7x4 would need 33
  EXPECT_EQ(register_tiles(host_caps(64, 32, 0), dtypes::float32, 16, 0, 0)[0], std::make_pair(6, 4));
  // 1024 rows (no 6): 8x3 (11 per 24) first; with a converted broadcast (2 loads each) 4x4 (12 per 16) beats 8x3
  // (19 per 24)
  EXPECT_EQ(register_tiles(host_caps(64, 32, 0), dtypes::float32, 16, 1024, 0)[0], std::make_pair(8, 3));
  EXPECT_EQ(register_tiles(host_caps(64, 32, 0), dtypes::float32, 16, 1024, 0, 2)[0], std::make_pair(4, 4));
  // 16 float32 lanes on AVX2 take two registers each: 4x1 x 2 + 2 + 1 = 11, 4x2 would need 21
  for (auto [u, c] : register_tiles(host_caps(32, 16, 0), dtypes::float32, 16, 0, 0))
    EXPECT_LE((u * c + c) * 2 + 1, 16) << u << "x" << c;
  // a renderer that says nothing gets the defaults (32 registers of 64 bytes), a GPU its float4 tiles
  tg_renderer_caps old = host_caps(0, 0, 0);
  EXPECT_EQ(register_tiles(old, dtypes::float32, 16, 0, 0)[0], std::make_pair(6, 4));
  tg_renderer_caps gpu = old;
  gpu.has_threads = 0, gpu.has_local = 1, gpu.max_local_threads = 1024;
  EXPECT_EQ(register_tiles(gpu, dtypes::float32, 4, 0, 0), (Tiles{{4, 1}, {2, 1}}));
}

TEST(Heuristic, PanelsStagedOnlyWhereTheCopyPays) {
  const tg_renderer_caps avx2 = host_caps(32, 16, 512 << 10);
  // 1024 x 1024 float32 B (4 MiB), 256 row tiles, a 1024 x 24 panel (96 KiB)
  EXPECT_TRUE(stages_pay(avx2, 256, 4 << 20, 96 << 10));
  EXPECT_TRUE(stages_pay(avx2, 256, 256 << 10, 96 << 10));   // B takes half of L2: its strided rows come from L2
  EXPECT_FALSE(stages_pay(avx2, 256, 255 << 10, 96 << 10));  // under half: it stays there as it is
  EXPECT_FALSE(stages_pay(avx2, 8, 4 << 20, 96 << 10));      // 8 row tiles do not repay the copy
  EXPECT_FALSE(stages_pay(avx2, 256, 64 << 20, 384 << 10));  // a panel over half of L2 would not stay there
  tg_renderer_caps gpu = avx2;
  gpu.has_threads = 0, gpu.has_local = 1, gpu.max_local_threads = 1024;
  EXPECT_FALSE(stages_pay(gpu, 256, 4 << 20, 96 << 10));
  // PADTO: whole tiles where that wastes at most 1/8 of the vectors
  EXPECT_EQ(padded_loop(128, 3), 129);
  EXPECT_EQ(padded_loop(125, 2), 126);
  EXPECT_EQ(padded_loop(126, 3), 126);
  EXPECT_EQ(padded_loop(5, 3), 0);  // 6 would waste 1 of 5
}

// Rows and columns that are not whole tiles: the vector loop is padded (its extra vectors gated off) and B's
// panels are staged, in one kernel; B is large enough to be staged on any L2 up to 4 MiB. The reference is a
// float64 loop.
TEST(Heuristic, PaddedStagedMatmulMatchesFloat64) {
  const int64_t m = 130, k = 1100, n = 1000;
  {
    Tensor a = Tensor::rand({m, k}, 1), b = Tensor::rand({k, n}, 2);
    a.realize(), b.realize();
    const auto items = sched::create_schedule({a.matmul(b).node()}, "CPU").items;
    ASSERT_EQ(items.size(), 1u) << "the product is not one kernel";
    rt::Device& dev = rt::Device::get("CPU");
    const KirProgram kir = lower_kernel(items[0].kernel, dev.caps());
    bool staged = false, gated = false;
    for (const tg_kir_inst& in : kir.insts) {
      staged |= in.op == TG_KIR_DEFINE_REG && in.arg.i >= k * 16;  // the panel: k x at least two vectors of 8
      gated |= in.op == TG_KIR_STORE && in.nsrc == 4 && kir.insts[kir.src_pool[in.src_start]].op == TG_KIR_PARAM;
    }
    EXPECT_TRUE(staged) << "B's panel is not staged: the test would not cover it\n" << kir.dump();
    EXPECT_TRUE(gated) << "no padded vector: the test would not cover it\n" << kir.dump();
  }
  const uint64_t seed = std::random_device{}();
  std::cout << "padded staged matmul seed=" << seed << "\n";
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(m * k), b(k * n);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  const std::vector<float> got =
      Tensor::from_vector(a, {m, k}).matmul(Tensor::from_vector(b, {k, n})).to_vector<float>();
  ASSERT_EQ(got.size(), static_cast<size_t>(m * n));
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p)
        ref += double{a[i * k + p]} * b[p * n + j], mag += std::abs(double{a[i * k + p]} * b[p * n + j]);
      // float32 accumulation over k terms: within k ulps of the sum of magnitudes
      const double err = std::abs(got[i * n + j] - ref) / (mag * k * 0x1p-24);
      worst = std::max(worst, err);
      ASSERT_LE(err, 1.0) << "at (" << i << ", " << j << "): got " << got[i * n + j] << ", float64 " << ref;
    }
  std::cout << "worst error: " << worst << " of the bound\n";
}

}  // namespace
}  // namespace tg::codegen
