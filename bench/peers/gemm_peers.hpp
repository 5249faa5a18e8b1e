// fp32 GEMM peers for bench_cpu, each loaded from its own shared library at run time and set up to run its best
// kernel on this CPU. OpenBLAS and BLIS export the same BLAS and CBLAS symbols, so neither is linked: each is
// dlopen'ed with RTLD_LOCAL | RTLD_DEEPBIND and called through the pointers looked up in it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tg::bench {

struct GemmPeer {
  std::string name;     // "openblas", "blis"
  std::string kernel;   // what the library runs here: OpenBLAS's core name, BLIS's sub-configuration
  std::string version;  // the library's own version string
  std::string setup;    // how it was made to run `kernel` when auto-detection fell short; "" when it did not
  // row-major C[m x n] = A[m x k] B[k x n]
  std::function<void(int64_t m, int64_t k, int64_t n, const float* a, const float* b, float* c)> sgemm;
  std::function<void(int threads)> set_threads;  // the threads sgemm runs on from the next call
};

// Every peer found on this machine, running on `threads` threads. Call before any thread starts: the OpenBLAS
// probe forks.
std::vector<GemmPeer> load_gemm_peers(int threads);

}  // namespace tg::bench
