// libamd_mock_hip.so: a stand-in for libamdhip64 in the AMD plugin's runtime test (AMD_HIP_LIBRARY points the plugin
// at it). It runs no kernels: it reports one "gfx942" GPU, keeps buffers in host memory, checks that a module is an
// ELF code object that defines the kernel asked for, and records every launch (kernel, grid, block, the argument
// buffer) for the test to read back through mock_hip_launch(). Events complete at once, each one tick (1 ms) after
// the last. Only the calls the plugin resolves are defined, with the signatures it declares (amd_plugin.hpp).
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
  double ms = 0;
};
struct Launch {
  std::string name;
  unsigned grid[3], block[3];
  std::vector<unsigned char> args;
};

std::mutex g_mutex;
std::vector<Launch> g_launches;
double g_clock_ms = 0;
int g_current = 0;

// Bytes of an ELF-64 file: its section header table is last in what lld writes.
size_t elf_size(const unsigned char* p) {
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  std::memcpy(&shoff, p + 0x28, 8);
  std::memcpy(&shentsize, p + 0x3a, 2);
  std::memcpy(&shnum, p + 0x3c, 2);
  return static_cast<size_t>(shoff + uint64_t{shentsize} * shnum);
}

}  // namespace

#define MOCK extern "C" __attribute__((visibility("default")))

MOCK int hipInit(unsigned) { return 0; }
MOCK int hipGetDeviceCount(int* n) { return *n = 1, 0; }
MOCK int hipSetDevice(int d) { return d == 0 ? (g_current = d, 0) : 101; }
MOCK int hipDeviceGetName(char* name, int len, int d) {
  if (d != 0) return 101;
  std::strncpy(name, "AMD Mock GPU", static_cast<size_t>(len));
  return 0;
}
MOCK int hipDeviceGetAttribute(int* v, int attr, int) {
  return attr == 63 ? (*v = 48, 0) : attr == 87 ? (*v = 64, 0) : 1;
}
MOCK int hipDeviceTotalMem(size_t* bytes, int) { return *bytes = size_t{1} << 30, 0; }
MOCK int hipGetDevicePropertiesR0600(void* props, int) {  // hipDeviceProp_tR0600: gcnArchName at byte 1160
  std::memset(props, 0, 1472);
  std::strcpy(static_cast<char*>(props) + 1160, "gfx942:sramecc+:xnack-");
  return 0;
}
MOCK int hipMalloc(void** p, size_t size) { return (*p = std::calloc(size, 1)) ? 0 : 2; }
MOCK int hipFree(void* p) { return std::free(p), 0; }
MOCK int hipMemcpyHtoD(void* dst, const void* src, size_t n) { return std::memcpy(dst, src, n), 0; }
MOCK int hipMemcpyDtoH(void* dst, void* src, size_t n) { return std::memcpy(dst, src, n), 0; }
MOCK int hipMemcpyDtoDAsync(void* dst, void* src, size_t n, void*) { return std::memmove(dst, src, n), 0; }
MOCK int hipMemcpyPeer(void* dst, int, const void* src, int, size_t n) { return std::memmove(dst, src, n), 0; }
MOCK int hipModuleLoadData(Module** out, const void* image) {
  const auto* p = static_cast<const unsigned char*>(image);
  if (std::memcmp(p,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      p[18] != 224 /* EM_AMDGPU */)
    return 200;  // hipErrorInvalidImage
  *out = new Module{std::vector<unsigned char>(p, p + elf_size(p))};
  return 0;
}
MOCK int hipModuleUnload(Module* m) { return delete m, 0; }
MOCK int hipModuleGetFunction(Function** out, Module* m, const char* name) {
  const std::string kd = std::string(name) + ".kd";
  const auto* begin = m->image.data();
  const auto* end = begin + m->image.size();
  if (std::search(begin, end, kd.begin(), kd.end()) == end) return 500;  // hipErrorNotFound
  *out = new Function{name};                                             // (leaked with the module: a test's handful)
  return 0;
}
MOCK int hipModuleLaunchKernel(Function* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned, void*, void** params, void** extra) {
  if (params != nullptr || extra == nullptr) return 1;
  const unsigned char* buffer = nullptr;
  size_t size = 0;
  for (int i = 0; extra[i] != reinterpret_cast<void*>(3); i += 2) {
    if (extra[i] == reinterpret_cast<void*>(1))
      buffer = static_cast<const unsigned char*>(extra[i + 1]);
    else if (extra[i] == reinterpret_cast<void*>(2))
      size = *static_cast<size_t*>(extra[i + 1]);
    else
      return 1;
  }
  if (buffer == nullptr) return 1;
  std::lock_guard lock(g_mutex);
  g_launches.push_back({f->name, {gx, gy, gz}, {bx, by, bz}, std::vector<unsigned char>(buffer, buffer + size)});
  return 0;
}
MOCK int hipStreamCreateWithFlags(void** s, unsigned) { return *s = std::malloc(1), 0; }
MOCK int hipStreamDestroy(void* s) { return std::free(s), 0; }
MOCK int hipStreamSynchronize(void*) { return 0; }
MOCK int hipDeviceSynchronize() { return 0; }
MOCK int hipEventCreateWithFlags(Event** e, unsigned) { return *e = new Event, 0; }
MOCK int hipEventDestroy(Event* e) { return delete e, 0; }
MOCK int hipEventRecord(Event* e, void*) {
  std::lock_guard lock(g_mutex);
  e->ms = g_clock_ms;
  g_clock_ms += 1;
  return 0;
}
MOCK int hipEventQuery(Event*) { return 0; }
MOCK int hipEventSynchronize(Event*) { return 0; }
MOCK int hipEventElapsedTime(float* ms, Event* from, Event* to) {
  return *ms = static_cast<float>(to->ms - from->ms), 0;
}
MOCK const char* hipGetErrorName(int) { return "hipErrorMock"; }

// For the test: how many launches there were, and launch i.
MOCK size_t mock_hip_launch_count() {
  std::lock_guard lock(g_mutex);
  return g_launches.size();
}
MOCK const char* mock_hip_launch(size_t i, unsigned* grid, unsigned* block, const unsigned char** args, size_t* size) {
  std::lock_guard lock(g_mutex);
  const Launch& l = g_launches.at(i);
  for (int d = 0; d < 3; ++d) grid[d] = l.grid[d], block[d] = l.block[d];
  *args = l.args.data();
  *size = l.args.size();
  return l.name.c_str();
}
