// CustomKernel::tile_mma (KIR's TILE_MMA) against a float64 loop over the layouts plugin_abi.h states, packed here
// element by element: on the CPU (x86 AMX where the host grants it, the core's loops elsewhere) and on INTERP (the
// loops), for both C dtypes, every shape, C overwritten and accumulated, rows and slabs with gaps between them.
#include "tg/custom_kernel.hpp"
#include "tg/device.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tg {
namespace {

struct Case {
  bool bf16;
  int mt, nt;
  bool accumulate;
};

// Two batches g: C rows ldc apart (ldc > N), batch g's C at g * M * ldc; A's slabs sa apart (a gap after each),
// batch g's at g * mt * sa; B shared by both batches.
void run_case(const Case& c, const std::string& dev, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t M = 16 * c.mt, N = 16 * c.nt, steps = 3, isz = c.bf16 ? 2 : 1;
  const int64_t step = 64 / isz, group = 4 / isz, slab = 1024 / isz, K = steps * step;
  const int64_t ldc = N + 3, sa = steps * slab + 64, sb = steps * slab, batches = 2;
  // bfloat16 values k / 8 with |k| <= 64 and int8 values: exact in both types and in float64
  auto value = [&] {
    return c.bf16 ? static_cast<double>(static_cast<int>(rng() % 129) - 64) / 8
                  : static_cast<double>(static_cast<int>(rng() % 256) - 128);
  };
  std::vector<double> a(batches * M * K), b(K * N), c0(batches * M * ldc);
  for (auto& v : a) v = value();
  for (auto& v : b) v = value();
  for (auto& v : c0) v = c.bf16 ? value() : static_cast<double>(static_cast<int>(rng() % 20001) - 10000);
  std::vector<float> ap(batches * c.mt * sa, 99.f), bp(c.nt * sb, 99.f);  // gaps hold values the op must not read
  for (int64_t g = 0; g < batches; ++g)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k)
        ap[g * c.mt * sa + m / 16 * sa + k / step * slab + m % 16 * step + k % step] =
            static_cast<float>(a[(g * M + m) * K + k]);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      bp[n / 16 * sb + k / step * slab + (k % step) / group * step + n % 16 * group + k % group] =
          static_cast<float>(b[k * N + n]);
  const DType ab = c.bf16 ? dtypes::bfloat16 : dtypes::int8, cd = c.bf16 ? dtypes::float32 : dtypes::int32;
  CustomKernel k("tile_mma_case");
  KExpr g = k.range(batches, Axis::GLOBAL);
  auto i64 = [&](int64_t v) { return k.constant(static_cast<double>(v), dtypes::int64); };
  KExpr cb = k.buffer(0, cd), abuf = k.buffer(1, ab), bbuf = k.buffer(2, ab);
  k.run(k.tile_mma({cb, g * (M * ldc), i64(ldc)}, {abuf, g * (c.mt * sa), i64(sa)}, {bbuf, i64(0), i64(sb)}, i64(steps),
                   c.mt, c.nt, c.accumulate));
  std::vector<float> c0f(c0.begin(), c0.end());
  Tensor tc = Tensor::from_vector(c0f, {static_cast<int64_t>(c0f.size())}, dtypes::float32, dev).cast(cd).realize();
  Tensor ta = Tensor::from_vector(ap, {static_cast<int64_t>(ap.size())}, dtypes::float32, dev).cast(ab).realize();
  Tensor tb = Tensor::from_vector(bp, {static_cast<int64_t>(bp.size())}, dtypes::float32, dev).cast(ab).realize();
  k({}, {tc, ta, tb});
  const std::vector<double> got = tc.cast(dtypes::float64).to_vector<double>();
  for (int64_t gi = 0; gi < batches; ++gi)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < ldc; ++n) {
        const int64_t at = (gi * M + m) * ldc + n;
        double want = c0[at], mag = std::abs(c0[at]);
        if (n < N) {
          double sum = 0;
          for (int64_t kk = 0; kk < K; ++kk)
            sum += a[(gi * M + m) * K + kk] * b[kk * N + n], mag += std::abs(a[(gi * M + m) * K + kk] * b[kk * N + n]);
          want = c.accumulate ? want + sum : sum;
        }
        // float32 sums in an order the unit picks: a few roundings of the magnitude; int32 exact
        const double tol = c.bf16 ? mag * 1e-6 + 1e-6 : 0;
        ASSERT_NEAR(got[at], want, tol) << dev << (c.bf16 ? " bf16 " : " int8 ") << M << "x" << N
                                        << (c.accumulate ? " +=" : " =") << " batch " << gi << " C[" << m << "][" << n
                                        << "] seed " << seed;
      }
}

TEST(TileMma, MatchesFloat64OnEveryShape) {
  const uint32_t seed = std::random_device{}();
  std::printf("seed %u; CPU matrix unit: bf16 %d, int8 %d\n", seed,
              CustomKernel::has_matrix_unit("CPU", dtypes::float32),
              CustomKernel::has_matrix_unit("CPU", dtypes::int32));
  std::vector<std::string> devs{"CPU", "INTERP"};
  if (default_device() != "CPU" && default_device() != "INTERP") devs.push_back(default_device());  // DEV=... runs
  for (const std::string& dev : devs)
    for (bool bf16 : {true, false})
      for (int mt : {1, 2})
        for (int nt : {1, 2})
          for (bool acc : {false, true}) run_case({bf16, mt, nt, acc}, dev, seed + mt * 4 + nt * 2 + acc);
}

TEST(TileMma, InterpreterHasNoMatrixUnit) {
  EXPECT_FALSE(CustomKernel::has_matrix_unit("INTERP", dtypes::float32));
  EXPECT_FALSE(CustomKernel::has_matrix_unit("INTERP", dtypes::int32));
}

TEST(TileMma, WrongDtypesAndShapesAreRefused) {
  CustomKernel k("tile_mma_bad");
  KExpr z = k.constant(0, dtypes::int64), one = k.constant(1, dtypes::int64);
  KExpr f32 = k.buffer(0, dtypes::float32), bf = k.buffer(1, dtypes::bfloat16), i8 = k.buffer(2, dtypes::int8);
  EXPECT_THROW(k.tile_mma({f32, z, one}, {i8, z, one}, {i8, z, one}, one, 1, 1),
               std::invalid_argument);  // f32 from int8
  EXPECT_THROW(k.tile_mma({bf, z, one}, {bf, z, one}, {bf, z, one}, one, 1, 1), std::invalid_argument);   // bf16 C
  EXPECT_THROW(k.tile_mma({f32, z, one}, {bf, z, one}, {bf, z, one}, one, 3, 1), std::invalid_argument);  // 48 rows
  EXPECT_THROW(k.tile_mma({f32, z, one}, {bf, z, one}, {bf, z, one}, k.constant(1, dtypes::float32), 1, 1),
               std::invalid_argument);
  EXPECT_NO_THROW(k.tile_mma({f32, z, one}, {bf, z, one}, {bf, z, one}, one, 2, 2, true));
}

}  // namespace
}  // namespace tg
