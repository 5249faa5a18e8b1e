// The NV plugin's private declarations: the subset of the CUDA driver API and NVRTC it loads at run time (declared
// here, so building needs no CUDA toolkit), the objects behind the ABI's opaque handles that more than one file
// needs (device, program), and the slot classes each interface file defines (tg/sdk/plugin_table.hpp puts them in
// the table).
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/plugin_handles.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// The handles behind tg_device and tg_program, complete before the SDK's slot templates see them.
namespace tg::nv {
struct Device;
struct Program;
}  // namespace tg::nv
struct tg_device_s : tg::sdk::DeviceHandle<tg::nv::Device> {};
struct tg_program_s : tg::sdk::ProgramHandle<tg::nv::Program> {};

#include <tg/sdk/device_allocator.hpp>
#include <tg/sdk/device_queue.hpp>
#include <tg/sdk/plugin_slots.hpp>
#include <tg/sdk/program_signature.hpp>
#include <tg/sdk/status.hpp>

namespace tg::nv {

// ---- the CUDA driver API (cuda.h) and NVRTC (nvrtc.h) as far as this plugin uses them: stable C ABIs ----------
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr unsigned CU_EVENT_DEFAULT = 0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;

struct CudaApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);  // resolved as cuDeviceTotalMem_v2
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);  // _v2
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);                               // _v2
  CUresult (*cuMemFree)(CUdeviceptr);                                         // _v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);                 // _v2
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);                       // _v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);  // _v2
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);  // _v2
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventDestroy)(CUevent);  // _v2
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuMemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
};

struct NvrtcApi {
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcVersion)(int*, int*);
};

// libcuda.so.1, loaded and cuInit'ed once; throws TG_ERR_UNAVAILABLE saying why not (no driver, no GPU).
const CudaApi& cuda();
// libnvrtc, loaded once (NV_NVRTC_LIBRARY, else the toolkit's); throws TG_ERR_UNAVAILABLE saying why not.
const NvrtcApi& nvrtc();
// Throws unless r is CUDA_SUCCESS: "<call> failed: CUDA_ERROR_... (<code>)".
void check_cu(CUresult r, const char* call);

// One opened GPU. Shared by its handle and by everything made from it, so closing it early leaves nothing dangling.
struct Device {
  std::string name = "NV";
  std::string description;  // "NVIDIA H200, 132 SMs"
  std::string arch;         // "sm_90"
  CUdevice cu_device = 0;
  CUcontext context = nullptr;  // the primary context, made current by every call that needs it
  uint64_t memory_bytes = 0;

  void bind() const;  // makes the context current on this thread
  ~Device();
};

// A loaded kernel and a copy of its signature (its offsets give cuLaunchKernel its kernelParams).
struct Program {
  std::shared_ptr<Device> device;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  std::string kernel_name;
  sdk::Signature signature;
  size_t args_size = 0;  // bytes of the packed argument blob
  ~Program();
};

// The arch a device-less compiler targets: NV_ARCH, default sm_90.
std::string default_arch();

// ---- slot functions (one group per file) ------------------------------------------------------------------------
// plugin.cpp: the GPUs the CUDA driver reports; its DeviceHooks (tg/sdk/plugin_slots.hpp) sit next to the table
std::shared_ptr<Device> device_of(tg_device device);  // throws on NULL

// renderer.cpp (KIR -> CUDA C++) and compiler.cpp (-> CUBIN): each keeps its hooks and handle to itself.
// Both take a NULL device: rendering needs no GPU, and a device-less compiler targets default_arch().
struct RendererHooks;
struct CompilerHooks;
using RendererSlots = sdk::RendererSlots<RendererHooks>;  // the table's renderer_* slots
using CompilerSlots = sdk::CompilerSlots<CompilerHooks>;  // the table's compiler_* slots and blob_free

// allocator.cpp: cuMemAlloc'ed device memory (tg/sdk/device_allocator.hpp does the slots)
struct AllocatorHooks {
  using Device = nv::Device;
  static constexpr std::string_view plugin = "nv";
  static std::shared_ptr<Device> device_of(tg_device device) { return nv::device_of(device); }
  static uint64_t allocate(uint64_t size);
  static void release(uint64_t addr);
  static void copy_in(uint64_t addr, const void* src, uint64_t size);
  static void copy_out(void* dst, uint64_t addr, uint64_t size);
  static void copy_peer(Device& dst, uint64_t dst_addr, Device& src, uint64_t src_addr, uint64_t size);  // cuMemcpyPeer
};
using AllocatorSlots = sdk::DeviceAllocatorSlots<AllocatorHooks>;  // the table's allocator_* slots

// program.cpp: a CUBIN loaded with cuModuleLoadData, and its one kernel
struct ProgramHooks {
  using Program = nv::Program;
  static constexpr std::string_view plugin = "nv";
  static std::shared_ptr<Program> load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                       sdk::Signature signature);
};
using ProgramSlots = sdk::ProgramSlots<ProgramHooks>;  // the table's program_* slots

// collectives.cpp: the device-collectives extension (tg/plugin_collectives.h) over NCCL, loaded at run time
struct Lifecycle {
  static const void* get_extension(const char* name) noexcept;
};

// hwqueue.cpp: tg::sdk::DeviceQueue over one CUDA stream, events as signals and timestamps
struct QueueBackend;
using QueueSlots = sdk::DeviceQueueSlots<tg_hwqueue_s, QueueBackend>;  // the table's hwqueue_* slots

}  // namespace tg::nv

// Compiled where tg_renderer_s and tg_compiler_s are complete (renderer.cpp, compiler.cpp).
extern template struct tg::sdk::RendererSlots<tg::nv::RendererHooks>;
extern template struct tg::sdk::CompilerSlots<tg::nv::CompilerHooks>;
// Compiled where tg_hwqueue_s and the backend are complete (hwqueue.cpp).
extern template struct tg::sdk::DeviceQueueSlots<tg_hwqueue_s, tg::nv::QueueBackend>;
