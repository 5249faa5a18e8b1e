// The AMD plugin's private declarations: the subset of the HIP runtime API it loads at run time (declared here, so
// building needs no ROCm), the objects behind the ABI's opaque handles that more than one file needs (device,
// program), and the slot functions each interface file defines.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/plugin_handles.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// The handles behind tg_device and tg_program, complete before the SDK's slot templates see them.
namespace tg::amd {
struct Device;
struct Program;
}  // namespace tg::amd
struct tg_device_s : tg::sdk::DeviceHandle<tg::amd::Device> {};
struct tg_program_s : tg::sdk::ProgramHandle<tg::amd::Program> {};

#include <tg/sdk/device_allocator.hpp>
#include <tg/sdk/device_queue.hpp>
#include <tg/sdk/plugin_slots.hpp>
#include <tg/sdk/status.hpp>

namespace tg::amd {

// ---- the HIP runtime API (hip_runtime_api.h, ROCm 6) as far as this plugin uses it: a stable C ABI ---------------
using hipError_t = int;
using hipDevice_t = int;
using hipDeviceptr_t = void*;
using hipModule_t = struct ihipModule_t*;
using hipFunction_t = struct ihipModuleSymbol_t*;
using hipStream_t = struct ihipStream_t*;
using hipEvent_t = struct ihipEvent_t*;

constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorNotReady = 600;
constexpr int hipDeviceAttributeMultiprocessorCount = 63;
constexpr int hipDeviceAttributeWarpSize = 87;
constexpr unsigned hipStreamNonBlocking = 1;
constexpr unsigned hipEventDefault = 0;
constexpr unsigned hipEventDisableTiming = 2;
// hipModuleLaunchKernel's `extra`: the packed argument blob as it is
inline void* const HIP_LAUNCH_PARAM_BUFFER_POINTER = reinterpret_cast<void*>(1);
inline void* const HIP_LAUNCH_PARAM_BUFFER_SIZE = reinterpret_cast<void*>(2);
inline void* const HIP_LAUNCH_PARAM_END = reinterpret_cast<void*>(3);
// hipDeviceProp_tR0600 (ROCm 6): the struct is 1472 bytes; gcnArchName ("gfx1100:sramecc+:xnack-") is char[256]
// at byte 1160. Only that member is read, from a buffer larger than the struct.
constexpr size_t kHipDevicePropGcnArchNameOffset = 1160;
constexpr size_t kHipDevicePropBufferSize = 4096;

struct HipApi {
  hipError_t (*hipInit)(unsigned);
  hipError_t (*hipGetDeviceCount)(int*);
  hipError_t (*hipSetDevice)(int);
  hipError_t (*hipDeviceGetName)(char*, int, hipDevice_t);
  hipError_t (*hipDeviceGetAttribute)(int*, int, int);
  hipError_t (*hipDeviceTotalMem)(size_t*, hipDevice_t);
  hipError_t (*hipGetDevicePropertiesR0600)(void*, int);
  hipError_t (*hipMalloc)(void**, size_t);
  hipError_t (*hipFree)(void*);
  hipError_t (*hipMemcpyHtoD)(hipDeviceptr_t, const void*, size_t);
  hipError_t (*hipMemcpyDtoH)(void*, hipDeviceptr_t, size_t);
  hipError_t (*hipMemcpyDtoDAsync)(hipDeviceptr_t, hipDeviceptr_t, size_t, hipStream_t);
  hipError_t (*hipModuleLoadData)(hipModule_t*, const void*);
  hipError_t (*hipModuleUnload)(hipModule_t);
  hipError_t (*hipModuleGetFunction)(hipFunction_t*, hipModule_t, const char*);
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, hipStream_t, void**, void**);
  hipError_t (*hipStreamCreateWithFlags)(hipStream_t*, unsigned);
  hipError_t (*hipStreamDestroy)(hipStream_t);
  hipError_t (*hipStreamSynchronize)(hipStream_t);
  hipError_t (*hipDeviceSynchronize)();
  hipError_t (*hipEventCreateWithFlags)(hipEvent_t*, unsigned);
  hipError_t (*hipEventDestroy)(hipEvent_t);
  hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t);
  hipError_t (*hipEventQuery)(hipEvent_t);
  hipError_t (*hipEventSynchronize)(hipEvent_t);
  hipError_t (*hipEventElapsedTime)(float*, hipEvent_t, hipEvent_t);
  const char* (*hipGetErrorName)(hipError_t);
  hipError_t (*hipMemcpyPeer)(void*, int, const void*, int, size_t);
};

// libamdhip64, loaded and hipInit'ed once; throws TG_ERR_UNAVAILABLE saying why not (no ROCm, no GPU).
const HipApi& hip();
// Throws unless r is hipSuccess: "<call> failed: hipError... (<code>)".
void check_hip(hipError_t r, const char* call);

// The arch a device-less compiler and renderer target: AMD_ARCH, default gfx1100.
std::string default_arch();
// The arch without target features: "gfx942:sramecc+:xnack-" -> "gfx942".
std::string base_arch(const std::string& arch);
// Work-items per wave on an arch: 64 on GCN and CDNA (gfx9 and older), 32 on RDNA (gfx10 and newer).
uint32_t wave_size(const std::string& arch);

// One opened GPU. Shared by its handle and by everything made from it, so closing it early leaves nothing dangling.
struct Device {
  std::string name = "AMD";
  std::string description;  // "AMD Radeon RX 7900 XTX, 48 CUs, gfx1100"
  std::string arch;         // "gfx1100" (the gcnArchName without its features)
  int ordinal = 0;
  uint64_t memory_bytes = 0;

  void bind() const;  // makes this the current HIP device of the calling thread
};

// A loaded code object, its kernel, and the size of its packed argument blob.
struct Program {
  std::shared_ptr<Device> device;
  hipModule_t module = nullptr;
  hipFunction_t function = nullptr;
  std::string kernel_name;
  size_t args_size = 0;
  ~Program();
};

// ---- slot functions (one group per file) ------------------------------------------------------------------------
// plugin.cpp: the GPUs the HIP runtime reports; its DeviceHooks (tg/sdk/plugin_slots.hpp) sit next to the table
std::shared_ptr<Device> device_of(tg_device device);  // throws on NULL

// renderer.cpp (KIR -> HIP C++) and compiler.cpp (-> code object): each keeps its hooks and handle to itself.
// Both take a NULL device: rendering needs no GPU, and a device-less compiler targets default_arch().
struct RendererHooks;
struct CompilerHooks;
using RendererSlots = sdk::RendererSlots<RendererHooks>;
using CompilerSlots = sdk::CompilerSlots<CompilerHooks>;

// allocator.cpp: hipMalloc'ed device memory (tg/sdk/device_allocator.hpp does the slots)
struct AllocatorHooks {
  using Device = amd::Device;
  static constexpr std::string_view plugin = "amd";
  static std::shared_ptr<Device> device_of(tg_device device) { return amd::device_of(device); }
  static uint64_t allocate(uint64_t size);
  static void release(uint64_t addr);
  static void copy_in(uint64_t addr, const void* src, uint64_t size);
  static void copy_out(void* dst, uint64_t addr, uint64_t size);
  static void copy_peer(Device& dst, uint64_t dst_addr, Device& src, uint64_t src_addr,
                        uint64_t size);  // hipMemcpyPeer
};
using AllocatorSlots = sdk::DeviceAllocatorSlots<AllocatorHooks>;  // the table's allocator_* slots

// program.cpp: a code object loaded with hipModuleLoadData
struct ProgramHooks {
  using Program = amd::Program;
  static constexpr std::string_view plugin = "amd";
  static std::shared_ptr<Program> load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                       sdk::Signature signature);
};
using ProgramSlots = sdk::ProgramSlots<ProgramHooks, tg_program_s>;  // the table's program_* slots

// hwqueue.cpp: tg::sdk::DeviceQueue over one HIP stream, events as signals and timestamps
struct QueueBackend;
// the table's hwqueue_* slots, and ABI 1.1's device_synchronize (plugin.cpp)
struct QueueSlots : sdk::DeviceQueueSlots<tg_hwqueue_s, QueueBackend> {
  static tg_status_t device_synchronize(tg_device device) noexcept;
};

}  // namespace tg::amd

// Compiled where tg_renderer_s and tg_compiler_s are complete (renderer.cpp, compiler.cpp).
extern template struct tg::sdk::RendererSlots<tg::amd::RendererHooks>;
extern template struct tg::sdk::CompilerSlots<tg::amd::CompilerHooks>;
// Compiled where tg_hwqueue_s and the backend are complete (hwqueue.cpp).
extern template struct tg::sdk::DeviceQueueSlots<tg_hwqueue_s, tg::amd::QueueBackend>;
