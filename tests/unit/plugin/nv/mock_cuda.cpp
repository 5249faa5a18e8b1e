// libcuda.so.1 for the NV plugin's runtime test: a stand-in for the CUDA driver (the test puts its directory first
// on LD_LIBRARY_PATH, so the plugin's dlopen("libcuda.so.1") finds it). It runs no kernels: it reports one sm_90 GPU,
// keeps buffers in host memory, checks that a module is an ELF CUBIN (EM_CUDA) that names the kernel asked for, and
// records every launch (kernel, grid, block, stream, each kernelParams pointer's offset from the first and the bytes
// from there) for the test to read back through mock_cuda_launch(). Events complete at once, each one tick (1 ms)
// after the last. Only the calls the plugin resolves are defined, with the signatures it declares (nv_plugin.hpp).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Module {
  std::vector<unsigned char> image;
};
struct Function {
  std::string name;
};
struct Event {
  unsigned flags = 0;
  double ms = -1;  // when it was recorded; -1: never
};
struct Launch {
  std::string name;
  unsigned grid[3], block[3];
  void* stream;
  std::vector<size_t> offsets;
  std::vector<unsigned char> args;
};

std::mutex g_mutex;
std::vector<Launch> g_launches;
std::vector<std::string> g_calls;       // the stream and event calls, in order
size_t g_nparams = 0, g_arg_bytes = 0;  // the launched kernel's parameters, and the bytes they span
double g_clock_ms = 0;
void* g_context = nullptr;
int g_context_storage = 0;

size_t elf_size(const unsigned char* p) {
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  std::memcpy(&shoff, p + 0x28, 8);
  std::memcpy(&shentsize, p + 0x3a, 2);
  std::memcpy(&shnum, p + 0x3c, 2);
  return static_cast<size_t>(shoff + uint64_t{shentsize} * shnum);
}

void note(const std::string& call) {
  std::lock_guard lock(g_mutex);
  g_calls.push_back(call);
}

}  // namespace

#define MOCK extern "C" __attribute__((visibility("default")))
using CUdeviceptr = unsigned long long;

MOCK int cuInit(unsigned) { return 0; }
// NVRTC opens libcuda.so.1 too and asks it for the driver's private tables: there are none here.
MOCK int cuGetExportTable(const void** table, const void*) { return *table = nullptr, 500; }
MOCK int cuDeviceGetCount(int* n) { return *n = 1, 0; }
MOCK int cuDeviceGet(int* d, int ordinal) { return ordinal == 0 ? (*d = 0, 0) : 101; }
MOCK int cuDeviceGetName(char* name, int len, int d) {
  if (d != 0) return 101;
  std::strncpy(name, "NVIDIA Mock GPU", static_cast<size_t>(len));
  return 0;
}
MOCK int cuDeviceGetAttribute(int* v, int attr, int) {
  return attr == 75 ? (*v = 9, 0) : attr == 76 ? (*v = 0, 0) : attr == 16 ? (*v = 132, 0) : 1;
}
MOCK int cuDeviceTotalMem_v2(size_t* bytes, int) { return *bytes = size_t{1} << 30, 0; }
MOCK int cuDevicePrimaryCtxRetain(void** ctx, int) { return *ctx = &g_context_storage, 0; }
MOCK int cuDevicePrimaryCtxRelease_v2(int) { return 0; }
MOCK int cuCtxSetCurrent(void* ctx) { return g_context = ctx, 0; }
MOCK int cuMemAlloc_v2(CUdeviceptr* p, size_t size) {
  void* mem = std::calloc(size, 1);
  return mem ? (*p = reinterpret_cast<CUdeviceptr>(mem), 0) : 2;
}
MOCK int cuMemFree_v2(CUdeviceptr p) { return std::free(reinterpret_cast<void*>(p)), 0; }
MOCK int cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  return std::memcpy(reinterpret_cast<void*>(dst), src, n), 0;
}
MOCK int cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  return std::memcpy(dst, reinterpret_cast<void*>(src), n), 0;
}
MOCK int cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void*) {
  note("cuMemcpyDtoDAsync");
  return std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n), 0;
}
MOCK int cuMemcpyPeer(CUdeviceptr dst, void* dst_ctx, CUdeviceptr src, void* src_ctx, size_t n) {
  if (dst_ctx == nullptr || src_ctx == nullptr) return 201;  // CUDA_ERROR_INVALID_CONTEXT
  note("cuMemcpyPeer");
  return std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n), 0;
}
MOCK int cuModuleLoadData(Module** out, const void* image) {
  if (g_context == nullptr) return 201;  // CUDA_ERROR_INVALID_CONTEXT
  const auto* p = static_cast<const unsigned char*>(image);
  if (std::memcmp(p,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      p[18] != 190 /* EM_CUDA */)
    return 200;  // CUDA_ERROR_INVALID_IMAGE
  *out = new Module{std::vector<unsigned char>(p, p + elf_size(p))};
  return 0;
}
MOCK int cuModuleUnload(Module* m) { return delete m, 0; }
MOCK int cuModuleGetFunction(Function** out, Module* m, const char* name) {
  const std::string n(name);
  if (std::search(m->image.begin(), m->image.end(), n.begin(), n.end()) == m->image.end()) return 500;  // NOT_FOUND
  *out = new Function{name};  // (leaked with the module: a test's handful)
  return 0;
}
MOCK int cuLaunchKernel(Function* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void* stream, void** params, void** extra) {
  if (shared != 0 || extra != nullptr || g_context == nullptr) return 1;
  Launch l{f->name, {gx, gy, gz}, {bx, by, bz}, stream, {}, {}};
  std::lock_guard lock(g_mutex);
  // The driver knows a kernel's parameter count from the CUBIN; the mock is told it (mock_cuda_set_params).
  if (g_nparams != 0) {
    if (params == nullptr) return 1;
    const auto* base = static_cast<const unsigned char*>(params[0]);
    for (size_t i = 0; i < g_nparams; ++i)
      l.offsets.push_back(static_cast<size_t>(static_cast<const unsigned char*>(params[i]) - base));
    l.args.assign(base, base + g_arg_bytes);
  }
  g_calls.push_back("cuLaunchKernel");
  g_launches.push_back(std::move(l));
  return 0;
}
MOCK int cuStreamCreate(void** s, unsigned flags) {
  note("cuStreamCreate(" + std::to_string(flags) + ")");
  return *s = std::malloc(1), 0;
}
MOCK int cuStreamDestroy_v2(void* s) {
  note("cuStreamDestroy");
  return std::free(s), 0;
}
MOCK int cuStreamSynchronize(void*) { return note("cuStreamSynchronize"), 0; }
MOCK int cuEventCreate(Event** e, unsigned flags) {
  note("cuEventCreate(" + std::to_string(flags) + ")");
  return *e = new Event{flags}, 0;
}
MOCK int cuEventDestroy_v2(Event* e) { return delete e, 0; }
MOCK int cuEventRecord(Event* e, void*) {
  std::lock_guard lock(g_mutex);
  g_calls.push_back("cuEventRecord");
  e->ms = g_clock_ms;
  g_clock_ms += 1;
  return 0;
}
MOCK int cuEventQuery(Event* e) { return e->ms < 0 ? 600 /* CUDA_ERROR_NOT_READY */ : 0; }
MOCK int cuEventSynchronize(Event*) { return note("cuEventSynchronize"), 0; }
MOCK int cuEventElapsedTime(float* ms, Event* from, Event* to) {
  if ((from->flags & 2) || (to->flags & 2)) return 1;  // CU_EVENT_DISABLE_TIMING: CUDA_ERROR_INVALID_VALUE
  return *ms = static_cast<float>(to->ms - from->ms), 0;
}
MOCK int cuGetErrorName(int r, const char** name) {
  *name = r == 500 ? "CUDA_ERROR_NOT_FOUND" : r == 200 ? "CUDA_ERROR_INVALID_IMAGE" : "CUDA_ERROR_MOCK";
  return 0;
}

// For the test: the next launches' parameter count and argument bytes, the launches, and the stream/event calls.
MOCK void mock_cuda_set_params(size_t nparams, size_t arg_bytes) { g_nparams = nparams, g_arg_bytes = arg_bytes; }
MOCK size_t mock_cuda_launch_count() {
  std::lock_guard lock(g_mutex);
  return g_launches.size();
}
MOCK const char* mock_cuda_launch(size_t i, unsigned* grid, unsigned* block, const size_t** offsets, size_t* noffsets,
                                  const unsigned char** args, size_t* size) {
  std::lock_guard lock(g_mutex);
  const Launch& l = g_launches.at(i);
  for (int d = 0; d < 3; ++d) grid[d] = l.grid[d], block[d] = l.block[d];
  *offsets = l.offsets.data(), *noffsets = l.offsets.size();
  *args = l.args.data(), *size = l.args.size();
  return l.name.c_str();
}
MOCK const char* mock_cuda_calls() {
  static std::string joined;
  std::lock_guard lock(g_mutex);
  joined.clear();
  for (const std::string& c : g_calls) joined += c + " ";
  return joined.c_str();
}
