// The machine's arithmetic peaks, measured in bench_cpu's own process on every thread at once, so each kernel's
// figure can be read as a fraction of what the unit it runs on can do: float32 FMA, int8 dot products (VNNI's
// vpdpbusd), bfloat16 dot products (AVX512_BF16's vdpbf16ps) and AMX tiles where the CPU has them and the kernel
// grants this process the tile state (arch_prctl ARCH_REQ_XCOMP_PERM). A unit the machine lacks reads 0.
#pragma once

#include <string>

namespace tg::bench {

struct Peaks {
  double fma_gflops = 0;       // float32 multiply-adds x 2 per second (AVX-512 where the CPU has it, else AVX2)
  double vnni_gops = 0;        // int8 x int8 multiply-adds x 2 per second (512-bit vpdpbusd, else AVX-VNNI's 256-bit)
  double bf16_dot_gflops = 0;  // bfloat16 multiply-adds x 2 per second (512-bit vdpbf16ps)
  double amx_int8_gops = 0;    // tdpbssd on 16x64 tiles
  double amx_bf16_gflops = 0;  // tdpbf16ps
  std::string amx;             // "granted", "not on this CPU" or why the kernel refused the tile state
};

Peaks measure_peaks(int threads);
std::string to_json(const Peaks& p);

}  // namespace tg::bench
