// The renderer caps that describe a host CPU (ABI 1.5: simd_bytes, simd_registers, l2_bytes), which the core sizes
// output vectors, register tiles and staged matmul panels by. Fill them for the machine code your compiler emits.
#pragma once

#include <tg/plugin_abi.h>

#include <unistd.h>

#include <cstdint>

namespace tg::sdk {

// `native`: kernels are compiled for this host's features (-march=native, or an in-process compiler given the
// host's CPU): AVX-512 gives 32 registers of 64 bytes, AVX 16 of 32. Otherwise the baseline ISA's 16 of 16 (SSE2
// on x86-64; NEON on AArch64 has 32 of 16). L2 is one core's, from sysconf (0 where the system does not say).
inline void describe_host_machine(tg_renderer_caps& caps, bool native) {
#if defined(__x86_64__) || defined(__i386__)
  const bool avx512 = native && __builtin_cpu_supports("avx512f"), avx = native && __builtin_cpu_supports("avx");
  caps.simd_bytes = avx512 ? 64 : avx ? 32 : 16;
  caps.simd_registers = avx512 ? 32 : 16;
#elif defined(__aarch64__)
  (void)native;
  caps.simd_bytes = 16;
  caps.simd_registers = 32;
#else
  (void)native;
  caps.simd_bytes = 0, caps.simd_registers = 0;  // unknown: the core's defaults
#endif
#if defined(_SC_LEVEL2_CACHE_SIZE)
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  caps.l2_bytes = l2 > 0 ? static_cast<uint64_t>(l2) : 0;
#else
  caps.l2_bytes = 0;
#endif
}

}  // namespace tg::sdk
