#include "gemm_peers.hpp"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <stdexcept>

namespace tg::bench {

namespace {

void* open_local(const char* path) {
  // DEEPBIND: the library's calls into its own BLAS symbols must not land in the other peer's
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!h) std::fprintf(stderr, "bench_cpu: peer %s not loaded: %s\n", path, dlerror());
  return h;
}

template <class F>
F sym(void* h, const char* name) {
  void* p = dlsym(h, name);
  if (!p) throw std::runtime_error(std::string("bench_cpu: peer has no symbol ") + name);
  return reinterpret_cast<F>(p);
}

// f() run in a child process, its result read back: what a library auto-detects is read this way, because it reads
// its override variable (OPENBLAS_CORETYPE, BLIS_ARCH_TYPE) only once, when it initializes, and the parent must
// not initialize it before deciding whether to set the variable.
std::string in_child(const std::function<std::string()>& f) {
  int fd[2];
  if (pipe(fd) != 0) return "";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    const std::string out = f();
    _exit(write(fd[1], out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  close(fd[1]);
  std::string out;
  char buf[64];
  for (ssize_t n; pid > 0 && (n = read(fd[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return out;
}

// Loads `path` and runs its `init` (none: its constructor does it) with `var` set to `value` (none: unset) for
// the library's initialization only.
void* open_with(const char* path, const char* init, const char* var, const char* value) {
  if (value) setenv(var, value, 1);
  void* h = open_local(path);
  if (h && init) sym<void (*)()>(h, init)();
  if (value) unsetenv(var);
  return h;
}

// ---- OpenBLAS --------------------------------------------------------------------------------------------------

using NameFn = const char* (*)();

bool is_avx512_core(const std::string& core) {
  return core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
}

// Debian's OpenBLAS 0.3.21 does not know the CPU model our VMs report and falls back to its generic Prescott
// kernel; on a CPU with AVX-512 it is then loaded with the AVX-512 core forced (Cooperlake where the CPU has
// AVX512_BF16: the same sgemm kernel as SkylakeX, which it extends). Only the peer reads OPENBLAS_CORETYPE.
std::optional<GemmPeer> load_openblas(const char* path, int threads) {
  GemmPeer p{"openblas", "", "", "", {}};
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  const std::string detected = user ? "" : in_child([path] {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    auto f = h ? reinterpret_cast<NameFn>(dlsym(h, "openblas_get_corename")) : nullptr;
    return std::string(f ? f() : "");
  });
  const bool force = !user && __builtin_cpu_supports("avx512f") && !is_avx512_core(detected);
  const char* forced = __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
  void* h = open_with(path, nullptr, "OPENBLAS_CORETYPE", force ? forced : nullptr);
  if (!h) return std::nullopt;
  p.kernel = sym<NameFn>(h, "openblas_get_corename")();
  p.version = sym<const char* (*)()>(h, "openblas_get_config")();
  if (force)
    p.setup = "OPENBLAS_CORETYPE=" + std::string(forced) + " (auto-detected: " + detected + ")";
  else if (user)
    p.setup = "OPENBLAS_CORETYPE=" + std::string(user) + " (set by the caller)";
  p.set_threads = sym<void (*)(int)>(h, "openblas_set_num_threads");
  p.set_threads(threads);
  // cblas_sgemm(order, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); 101 row major, 111 no trans
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
  auto f = sym<Sgemm>(h, "cblas_sgemm");
  p.sgemm = [f](int64_t m, int64_t k, int64_t n, const float* a, const float* b, float* c) {
    f(101, 111, 111, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(k), b,
      static_cast<int>(n), 0.0f, c, static_cast<int>(n));
  };
  return p;
}

// ---- BLIS --------------------------------------------------------------------------------------------------------

// BLIS picks its sub-configuration from CPUID when it initializes; for skx it also needs to know the core has two
// FMA units, which it reads from the model number, and on a model it does not know (our VMs) it settles for
// haswell (AVX2). On a CPU with AVX-512 it is then initialized with BLIS_ARCH_TYPE=skx (Debian's build has that
// sub-configuration; BLIS 0.9.0 honours the variable only when bli_init runs before the first query). Its typed
// API takes row and column strides, with 64-bit dimensions in Debian's build (BLIS_INT_TYPE_SIZE 64).
std::optional<GemmPeer> load_blis(const char* path, int threads) {
  using ArchFn = int (*)();
  using ArchNameFn = const char* (*)(int);
  const char* user = std::getenv("BLIS_ARCH_TYPE");
  const std::string detected = user ? "" : in_child([path] {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return std::string();
    return std::string(sym<ArchNameFn>(h, "bli_arch_string")(sym<ArchFn>(h, "bli_arch_query_id")()));
  });
  const bool force = !user && __builtin_cpu_supports("avx512f") && detected != "skx" && detected != "knl";
  void* h = open_with(path, "bli_init", "BLIS_ARCH_TYPE", force ? "skx" : nullptr);
  if (!h) return std::nullopt;
  GemmPeer p{"blis", "", "", "", {}};
  p.kernel = sym<ArchNameFn>(h, "bli_arch_string")(sym<ArchFn>(h, "bli_arch_query_id")());
  if (force)
    p.setup = "BLIS_ARCH_TYPE=skx (auto-detected: " + detected + ")";
  else if (user)
    p.setup = "BLIS_ARCH_TYPE=" + std::string(user) + " (set by the caller)";
  p.version = sym<const char* (*)()>(h, "bli_info_get_version_str")();
  auto set = sym<void (*)(int64_t)>(h, "bli_thread_set_num_threads");
  p.set_threads = [set](int t) { set(t); };
  p.set_threads(threads);
  // bli_sgemm(transa, transb, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc); 0 = no transpose
  using Sgemm = void (*)(int, int, int64_t, int64_t, int64_t, const float*, const float*, int64_t, int64_t,
                         const float*, int64_t, int64_t, const float*, float*, int64_t, int64_t);
  auto f = sym<Sgemm>(h, "bli_sgemm");
  p.sgemm = [f](int64_t m, int64_t k, int64_t n, const float* a, const float* b, float* c) {
    const float one = 1.0f, zero = 0.0f;
    f(0, 0, m, n, k, &one, a, k, 1, b, n, 1, &zero, c, n, 1);
  };
  return p;
}

}  // namespace

std::vector<GemmPeer> load_gemm_peers(int threads) {
  std::vector<GemmPeer> peers;
#ifdef TG_OPENBLAS_LIB
  if (auto p = load_openblas(TG_OPENBLAS_LIB, threads)) peers.push_back(std::move(*p));
#endif
#ifdef TG_BLIS_LIB
  if (auto p = load_blis(TG_BLIS_LIB, threads)) peers.push_back(std::move(*p));
#endif
  return peers;
}

}  // namespace tg::bench
