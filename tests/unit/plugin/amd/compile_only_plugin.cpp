// A test harness, not a device: libamd_compile_only.so puts the AMD plugin's real renderer and compiler behind one
// "device" that has no GPU, so that tg-conformance, run against it, renders and compiles every kernel of its battery
// for AMD_ARCH on a machine without ROCm. Where a test would load its kernel (program_create), this file reads the
// code object instead (code_object.hpp) and checks its kernel descriptor against the signature it is given: the
// kernarg segment is the aligned sum of the parameters, the wave size the arch's. It then refuses to make a program
// with the message "compile-only: ..." (or "code object of <kernel>: ..." when a check failed), so every kernel test
// fails at that point and conformance_compile.sh counts the outcomes. Buffers are host memory, so tests reach their
// kernels; queues accept nothing.
//
// Built a second time with TG_AMD_COMPILE_ONLY_ACCEPT as libtg_plugin_amdcompile.so (DEV=AMDCOMPILE), for the Tensor
// test suites: there program_create accepts a checked code object and the queue runs nothing (signals are reached at
// submit), so every kernel of a suite is rendered, compiled and checked while the suite's value checks fail, which
// tensor_suite_compile.sh ignores; at exit it prints "amdcompile: N code objects checked for <arch>".
#include "code_object.hpp"

#include <tg/plugin_abi.h>
#include <tg/sdk/status.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

using tg::sdk::cat;

const tg_plugin_api* g_amd = nullptr;  // the real plugin's table
tg_plugin_api g_api{};                 // ours: the real one with the device, memory, program and queue slots replaced

std::string arch() {
  const char* env = std::getenv("AMD_ARCH");
  return env != nullptr && *env != '\0' ? env : "gfx1100";
}

tg_device fake_device() { return reinterpret_cast<tg_device>(&g_api); }

tg_status_t unavailable(const std::string& what) { return tg::sdk::make_status(TG_ERR_UNAVAILABLE, what); }

#ifdef TG_AMD_COMPILE_ONLY_ACCEPT
constexpr bool kAccept = true;
constexpr const char* kDeviceName = "AMDCOMPILE";
#else
constexpr bool kAccept = false;
constexpr const char* kDeviceName = "AMD";
#endif
std::mutex g_mutex;
uint64_t g_checked = 0, g_signal = 0, g_recorded_signal = 0;
struct Summary {
  ~Summary() {
    if (kAccept)
      std::fprintf(stderr, "amdcompile: %llu code objects checked for %s\n", static_cast<unsigned long long>(g_checked),
                   arch().c_str());
  }
} g_summary;

tg_status_t device_count(uint32_t* out_count) {
  *out_count = 1;
  return nullptr;
}
tg_status_t device_open(uint32_t index, tg_device* out_device) {
  if (index != 0) return tg::sdk::make_status(TG_ERR_INVALID_ARGUMENT, "the compile-only device is AMD:0");
  *out_device = fake_device();
  return nullptr;
}
void device_close(tg_device) {}
tg_status_t device_get_info(tg_device, tg_device_info* out_info) {
  static std::string description, arch_name;
  description = "compile-only AMD device (no GPU): " + arch();
  arch_name = arch();
  const size_t size = out_info->struct_size;
  tg_device_info info{
      sizeof(tg_device_info), kDeviceName, description.c_str(), arch_name.c_str(), kAccept ? uint64_t{1} << 34 : 0, 0};
  std::memcpy(reinterpret_cast<char*>(out_info) + sizeof(size_t), reinterpret_cast<const char*>(&info) + sizeof(size_t),
              std::min(size, sizeof info) - sizeof(size_t));
  return nullptr;
}
// The real renderer and compiler, device-less: they target AMD_ARCH.
tg_status_t renderer_create(tg_device, const char* target, tg_renderer* out) {
  return g_amd->renderer_create(nullptr, target, out);
}
tg_status_t compiler_create(tg_device, tg_compiler* out) { return g_amd->compiler_create(nullptr, out); }

tg_status_t allocator_alloc(tg_device, uint64_t size, tg_buffer_desc* out) {
  void* p = std::calloc(size == 0 ? 1 : size, 1);
  if (p == nullptr) return tg::sdk::make_status(TG_ERR_OUT_OF_MEMORY, cat("cannot allocate ", size, " bytes"));
  *out = tg_buffer_desc{reinterpret_cast<uint64_t>(p), size, nullptr};
  return nullptr;
}
void allocator_free(tg_device, const tg_buffer_desc* b) {
  if (b != nullptr) std::free(reinterpret_cast<void*>(b->addr));
}
tg_status_t allocator_copy_in(tg_device, const tg_buffer_desc* dst, uint64_t offset, const void* src, uint64_t size) {
  if (offset > dst->size || size > dst->size - offset)
    return tg::sdk::make_status(TG_ERR_INVALID_ARGUMENT, "copy_in past the end");
  if (size != 0) std::memcpy(reinterpret_cast<char*>(dst->addr) + offset, src, size);
  return nullptr;
}
tg_status_t allocator_copy_out(tg_device, void* dst, const tg_buffer_desc* src, uint64_t offset, uint64_t size) {
  if (offset > src->size || size > src->size - offset)
    return tg::sdk::make_status(TG_ERR_INVALID_ARGUMENT, "copy_out past the end");
  if (size != 0) std::memcpy(dst, reinterpret_cast<const char*>(src->addr) + offset, size);
  return nullptr;
}

// The checks, computed from the signature here (not with the plugin's or the ABI header's layout code).
tg_status_t program_create(tg_device, const void* blob, size_t size, const char* kernel_name,
                           const tg_kir_param* params, uint32_t nparams, tg_program* out_program) {
  static const uint32_t sizes[TG_DTYPE_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
  const std::vector<unsigned char> bytes(static_cast<const unsigned char*>(blob),
                                         static_cast<const unsigned char*>(blob) + size);
  std::string error;
  const tg::test::amdgpu::CodeObject co = tg::test::amdgpu::read_code_object(bytes, kernel_name, error);
  if (!error.empty())
    return tg::sdk::make_status(TG_ERR_INVALID_ARGUMENT, cat("code object of ", kernel_name, ": ", error));
  uint32_t expected = 0;
  for (uint32_t p = 0; p < nparams; ++p) {
    const uint32_t sz = params[p].kind == TG_PARAM_VAR && params[p].dtype < TG_DTYPE_COUNT ? sizes[params[p].dtype] : 8;
    expected = (expected + sz - 1) / sz * sz + sz;
  }
  const bool wave32 = (co.descriptor->kernel_code_properties & tg::test::amdgpu::kEnableWavefrontSize32) != 0;
  const bool want_wave32 = arch().rfind("gfx1", 0) == 0 && arch().size() >= 7;  // gfx10xx-gfx12xx: RDNA
  if (co.descriptor->kernarg_size != expected || wave32 != want_wave32)
    return tg::sdk::make_status(TG_ERR_INTERNAL,
                                cat("code object of ", kernel_name, ": kernarg_size ", co.descriptor->kernarg_size,
                                    " (expected ", expected, "), wave32 ", wave32, " on ", arch()));
  if (kAccept) {
    std::lock_guard lock(g_mutex);
    ++g_checked;
    *out_program = reinterpret_cast<tg_program>(&g_api);
    return nullptr;
  }
  return unavailable(cat("compile-only: ", kernel_name, " rendered, compiled for ", arch(),
                         " and its kernel descriptor "
                         "checked (kernarg ",
                         expected, " bytes, LDS ", co.descriptor->group_segment_fixed_size, " bytes)"));
}
void program_destroy(tg_program) {}

tg_status_t hwqueue_create(tg_device, tg_hwqueue* out) {
  *out = reinterpret_cast<tg_hwqueue>(&g_api);
  return nullptr;
}
void hwqueue_destroy(tg_hwqueue) {}
tg_status_t hwqueue_exec(tg_hwqueue, tg_program, const void*, size_t, const tg_launch_dims*) {
  return kAccept ? nullptr : unavailable("compile-only: no launches");
}
tg_status_t hwqueue_copy(tg_hwqueue, const tg_buffer_desc* dst, uint64_t dst_offset, const tg_buffer_desc* src,
                         uint64_t src_offset, uint64_t size) {
  if (!kAccept) return unavailable("compile-only: no copies");
  std::memmove(reinterpret_cast<char*>(dst->addr) + dst_offset, reinterpret_cast<const char*>(src->addr) + src_offset,
               size);
  return nullptr;
}
tg_status_t hwqueue_signal(tg_hwqueue, uint64_t value) {
  if (!kAccept) return unavailable("compile-only: no signals");
  std::lock_guard lock(g_mutex);
  g_recorded_signal = std::max(g_recorded_signal, value);
  return nullptr;
}
tg_status_t hwqueue_timestamp(tg_hwqueue, uint64_t* out_slot) {
  if (!kAccept) return unavailable("compile-only: no timestamps");
  *out_slot = 0;
  return nullptr;
}
tg_status_t hwqueue_submit(tg_hwqueue) {
  if (!kAccept) return unavailable("compile-only: no submits");
  std::lock_guard lock(g_mutex);
  g_signal = g_recorded_signal;
  return nullptr;
}
tg_status_t hwqueue_wait(tg_hwqueue, uint64_t value, uint64_t) {
  if (!kAccept) return unavailable("compile-only: no waits");
  std::lock_guard lock(g_mutex);
  return value <= g_signal ? nullptr
                           : tg::sdk::make_status(TG_ERR_INVALID_ARGUMENT, cat("signal ", value, " never submitted"));
}
tg_status_t hwqueue_read_timestamp(tg_hwqueue, uint64_t, uint64_t* out_ns) {
  if (!kAccept) return unavailable("compile-only: no timestamps");
  *out_ns = 0;
  return nullptr;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const tg_plugin_api* tg_plugin_get_api(uint32_t major, uint32_t minor,
                                                                                         tg_status_t* out_status) {
  // the real plugin negotiates the version (and refuses another major) every time
  void* lib = dlopen(TG_AMD_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  auto get = lib ? reinterpret_cast<tg_plugin_get_api_fn>(dlsym(lib, TG_ABI_ENTRY_POINT)) : nullptr;
  if (get == nullptr) {
    if (out_status != nullptr)
      *out_status = tg::sdk::make_status(TG_ERR_UNAVAILABLE, "cannot load " TG_AMD_PLUGIN_PATH);
    return nullptr;
  }
  const tg_plugin_api* real = get(major, minor, out_status);
  if (real == nullptr) return nullptr;
  if (g_amd == nullptr) {
    g_amd = real;
    g_api = *g_amd;
    g_api.plugin_name = kAccept ? "amdcompile" : "amd (compile-only)";
    g_api.device_name = kDeviceName;
    g_api.device_count = device_count;
    g_api.device_open = device_open;
    g_api.device_close = device_close;
    g_api.device_get_info = device_get_info;
    g_api.renderer_create = renderer_create;
    g_api.compiler_create = compiler_create;
    g_api.allocator_alloc = allocator_alloc;
    g_api.allocator_free = allocator_free;
    g_api.allocator_copy_in = allocator_copy_in;
    g_api.allocator_copy_out = allocator_copy_out;
    g_api.program_create = program_create;
    g_api.program_destroy = program_destroy;
    g_api.hwqueue_create = hwqueue_create;
    g_api.hwqueue_destroy = hwqueue_destroy;
    g_api.hwqueue_exec = hwqueue_exec;
    g_api.hwqueue_copy = hwqueue_copy;
    g_api.hwqueue_signal = hwqueue_signal;
    g_api.hwqueue_timestamp = hwqueue_timestamp;
    g_api.hwqueue_submit = hwqueue_submit;
    g_api.hwqueue_wait = hwqueue_wait;
    g_api.hwqueue_read_timestamp = hwqueue_read_timestamp;
    g_api.device_synchronize = nullptr;
  }
  return &g_api;
}
