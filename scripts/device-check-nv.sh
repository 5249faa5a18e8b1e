#!/usr/bin/env bash
# device-check-nv.sh: one command for a CUDA machine (an H200 in CI's device lane). Builds tg with the NV plugin,
# runs the NV plugin's compile test, the conformance battery and the Tensor suites with DEV=NV, then prints a GEMM
# benchmark (fp32 and fp16, 4096^3) with cuBLAS measured in the same run, and device-to-device copy bandwidth.
# Meant to finish in under 8 minutes on an H200. Output: test summaries on stderr, one JSON object per benchmark
# line on stdout.
#
#   scripts/device-check-nv.sh [build-dir]        (default build-nv)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-nv}"
cuda="${CUDA_HOME:-/usr/local/cuda}"
say() { echo "device-check-nv: $*" >&2; }
started=$SECONDS

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >&2 ||
  say "warning: nvidia-smi not found"
[ -e "$cuda/include/cublas_v2.h" ] || { say "no CUDA toolkit at $cuda (set CUDA_HOME)"; exit 1; }

# 1. build: the NV plugin must be built (ON, not AUTO), with the tests and tools that exercise it
say "configuring $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTG_PLUGIN_NV=ON >/dev/null
targets=(tg_plugin_nv tg_plugin_cpu nv_compile_test jit_test gpu_lower_test)
for src in "$root"/tests/unit/tensor/*_test.cpp; do targets+=("$(basename "${src%.cpp}")"); done
ninja -C "$build" -t targets all 2>/dev/null | grep -q '^tg-conformance:' && targets+=(tg-conformance)
say "building ${targets[*]}"
ninja -C "$build" "${targets[@]}" >&2

# 2. tests: every kernel compiles for sm_80/sm_90, the plugin passes conformance, the Tensor suites pass on NV
status=0
export TG_CACHE_DIR="$build/tg-cache"
run() { # run <label> <command...>: runs it, keeps going on failure, remembers that something failed
  local label="$1"; shift
  local t0=$SECONDS
  if "$@" >"$build/check-$label.log" 2>&1; then say "PASS $label ($((SECONDS - t0)) s)"
  else status=1; say "FAIL $label ($((SECONDS - t0)) s): see $build/check-$label.log"; tail -n 20 "$build/check-$label.log" >&2; fi
}
run nv_compile_test "$build/bin/nv_compile_test"
run gpu_lower_test "$build/bin/gpu_lower_test"  # grouped reductions and 3-dim grids on every GPU device present
if [ -x "$build/bin/tg-conformance" ]; then
  run conformance "$build/bin/tg-conformance" "$build/lib/tg/plugins/libtg_plugin_nv.so"
fi
for src in "$root"/tests/unit/tensor/*_test.cpp "$root/tests/unit/runtime/jit_test.cpp"; do
  name="$(basename "${src%.cpp}")"
  run "$name" env DEV=NV "$build/bin/$name"
done

# 3. benchmarks: tg's GEMM on NV against cuBLAS in the same process, and copy bandwidth (tg kernel vs cuMemcpy)
bench_dir="$build/device-check"
mkdir -p "$bench_dir"
cat >"$bench_dir/bench_nv.cpp" <<'EOF'
// GEMM 4096^3 (fp32, fp16) through tg on DEV=NV and through cuBLAS, and device-to-device copy bandwidth through a
// tg kernel and through cudaMemcpy, all in one process on one GPU. One JSON line per measurement.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "tg/profile.hpp"
#include "tg/tensor.hpp"

#define CHECK_CUDA(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)
#define CHECK_BLAS(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { std::fprintf(stderr, "%s: %d\n", #x, (int)s_); std::exit(1); } } while (0)

constexpr int kN = 4096, kReps = 10;
// tg's float32 GEMM is tiled through shared memory and its 16-bit GEMMs run on tensor cores (mma.sync), but neither
// is tuned yet: time fewer repetitions of them to stay inside the script's 8 minutes.
constexpr int kTgReps = 3;

// Best of kReps: the device time of the kernels one realize runs (profiling waits for each launch).
template <class F>
double tg_best_ms(F&& make) {
  make().realize();  // compile and warm up
  double best = 1e30;
  for (int r = 0; r < kTgReps; ++r) {
    tg::set_profiling(true);
    make().realize();
    tg::set_profiling(false);
    double ms = 0;
    for (const auto& run : tg::take_profile()) ms += run.ms;
    best = std::min(best, ms);
  }
  return best;
}

template <class F>
double cuda_best_ms(F&& body) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  body();
  CHECK_CUDA(cudaDeviceSynchronize());
  float best = 1e30f;
  for (int r = 0; r < kReps; ++r) {
    CHECK_CUDA(cudaEventRecord(a));
    body();
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    best = std::min(best, ms);
  }
  return best;
}

void report(const char* what, const char* dtype, double tg_ms, double peer_ms, double work, const char* unit) {
  std::printf("{\"bench\":\"%s\",\"dtype\":\"%s\",\"tg_ms\":%.4f,\"tg_%s\":%.1f,\"peer\":\"%s\",\"peer_ms\":%.4f,"
              "\"peer_%s\":%.1f,\"ratio\":%.3f}\n",
              what, dtype, tg_ms, unit, work / tg_ms / 1e6, what[0] == 'g' ? "cublas" : "cudaMemcpy", peer_ms, unit,
              work / peer_ms / 1e6, peer_ms / tg_ms);
  std::fflush(stdout);
}

int main() {
  cublasHandle_t blas;
  CHECK_BLAS(cublasCreate(&blas));
  const double flops = 2.0 * kN * kN * kN;
  // fp32 and fp16 GEMM: tg (fp16 on tensor cores, then with TC=0 tiled through shared memory like fp32, then on
  // tensor cores with BEAM=2 choosing the tiles per warp by timing)
  const char* const names[] = {"float32", "float16", "float16_TC=0", "float16_BEAM=2"};
  for (int variant = 0; variant < 4; ++variant) {
    const tg::DType d = variant == 0 ? tg::dtypes::float32 : tg::dtypes::float16;
    setenv("TC", variant == 2 ? "0" : "1", 1);
    setenv("BEAM", variant == 3 ? "2" : "0", 1);
    tg::Tensor a = tg::Tensor::rand({kN, kN}, 1, d, "NV").realize(), b = tg::Tensor::rand({kN, kN}, 2, d, "NV").realize();
    // the product against a host loop on a few entries, so a fast wrong kernel cannot pass as a result
    const std::vector<float> ha = a.cast(tg::dtypes::float32).to_vector<float>(), hb = b.cast(tg::dtypes::float32).to_vector<float>();
    const std::vector<float> hc = a.matmul(b).cast(tg::dtypes::float32).to_vector<float>();
    for (int probe = 0; probe < 16; ++probe) {
      const int i = probe * 257 % kN, j = probe * 1031 % kN;
      double want = 0;
      for (int q = 0; q < kN; ++q) want += double{ha[size_t{1} * i * kN + q]} * hb[size_t{1} * q * kN + j];
      const double got = hc[size_t{1} * i * kN + j];
      if (std::abs(got - want) > 1e-2 * (1 + std::abs(want))) {
        std::fprintf(stderr, "wrong GEMM result (%s): C[%d][%d] = %f, host loop %f\n", names[variant], i, j, got, want);
        return 1;
      }
    }
    const double tg_ms = tg_best_ms([&] { return a.matmul(b); });
    // cuBLAS on its own buffers of the same shape
    const size_t bytes = size_t{kN} * kN * (d == tg::dtypes::float32 ? 4 : 2);
    void *da, *db, *dc;
    CHECK_CUDA(cudaMalloc(&da, bytes));
    CHECK_CUDA(cudaMalloc(&db, bytes));
    CHECK_CUDA(cudaMalloc(&dc, bytes));
    CHECK_CUDA(cudaMemset(da, 0, bytes));
    CHECK_CUDA(cudaMemset(db, 0, bytes));
    double peer_ms;
    if (d == tg::dtypes::float32) {
      const float one = 1, zero = 0;
      peer_ms = cuda_best_ms([&] {
        CHECK_BLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, (float*)db, kN, (float*)da, kN, &zero, (float*)dc, kN));
      });
    } else {
      const __half one = __float2half(1.0f), zero = __float2half(0.0f);
      peer_ms = cuda_best_ms([&] {
        CHECK_BLAS(cublasHgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, (__half*)db, kN, (__half*)da, kN, &zero, (__half*)dc, kN));
      });
    }
    report("gemm_4096", names[variant], tg_ms, peer_ms, flops, "gflops");
    cudaFree(da), cudaFree(db), cudaFree(dc);
  }
  unsetenv("TC");
  unsetenv("BEAM");
  // copy bandwidth: 256 MiB read + 256 MiB written
  const int64_t n = int64_t{64} << 20;
  tg::Tensor x = tg::Tensor::rand({n}, 3, tg::dtypes::float32, "NV").realize();
  const double tg_ms = tg_best_ms([&] { return x + 1.0f; });
  void *src, *dst;
  CHECK_CUDA(cudaMalloc(&src, n * 4));
  CHECK_CUDA(cudaMalloc(&dst, n * 4));
  const double peer_ms = cuda_best_ms([&] { CHECK_CUDA(cudaMemcpy(dst, src, n * 4, cudaMemcpyDeviceToDevice)); });
  report("copy_256MiB", "float32", tg_ms, peer_ms, 2.0 * n * 4, "gbps");  // bytes / ms / 1e6 = GB/s
  cublasDestroy(blas);
  return 0;
}
EOF
say "building the benchmark (tg + cuBLAS)"
"$cuda/bin/nvcc" -O2 -std=c++20 -x cu "$bench_dir/bench_nv.cpp" -o "$bench_dir/bench_nv" \
  -I"$root/core/include" -L"$build/lib" -Xlinker -rpath="$build/lib" -ltg_core -lcublas >&2
DEV=NV timeout 300 "$bench_dir/bench_nv" || { status=1; say "FAIL benchmark"; }

say "done in $((SECONDS - started)) s, $([ $status = 0 ] && echo 'all passed' || echo 'with failures')"
exit $status
