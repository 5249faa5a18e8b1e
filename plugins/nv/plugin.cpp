// The NV plugin's entry point and table, the run-time loading of libcuda.so.1 and NVRTC, CUDA error names, and
// its devices: the GPUs the CUDA driver reports. Without a driver or a GPU there are simply no devices.
#include "nv_plugin.hpp"

#include <tg/sdk/plugin.hpp>
#include <tg/sdk/plugin_table.hpp>
#include <tg/sdk/runtime_library.hpp>

#include <cstdlib>

namespace tg::nv {

using sdk::cat;
using sdk::Error;

namespace {

struct LoadedCuda {
  CudaApi api{};
  std::string error;  // why the driver is unusable; empty when it is
};

const LoadedCuda& loaded_cuda() {
  static const LoadedCuda loaded = [] {
    LoadedCuda out;
    // Never closed: the driver keeps threads and atexit handlers that must find their code mapped.
    std::vector<std::pair<std::string, std::string>> refused;
    void* lib = sdk::open_first({"libcuda.so.1"}, &refused);
    if (lib == nullptr) {
      out.error = cat("cannot load libcuda.so.1 (the NVIDIA driver): ", refused.at(0).second);
      return out;
    }
    static const char* const names[] = {"cuInit",
                                        "cuDeviceGetCount",
                                        "cuDeviceGet",
                                        "cuDeviceGetName",
                                        "cuDeviceGetAttribute",
                                        "cuDeviceTotalMem_v2",
                                        "cuDevicePrimaryCtxRetain",
                                        "cuDevicePrimaryCtxRelease_v2",
                                        "cuCtxSetCurrent",
                                        "cuMemAlloc_v2",
                                        "cuMemFree_v2",
                                        "cuMemcpyHtoD_v2",
                                        "cuMemcpyDtoH_v2",
                                        "cuMemcpyDtoDAsync_v2",
                                        "cuModuleLoadData",
                                        "cuModuleUnload",
                                        "cuModuleGetFunction",
                                        "cuLaunchKernel",
                                        "cuStreamCreate",
                                        "cuStreamDestroy_v2",
                                        "cuStreamSynchronize",
                                        "cuEventCreate",
                                        "cuEventDestroy_v2",
                                        "cuEventRecord",
                                        "cuEventQuery",
                                        "cuEventSynchronize",
                                        "cuEventElapsedTime",
                                        "cuGetErrorName",
                                        "cuMemcpyPeer"};
    if (std::string missing = sdk::resolve_api(lib, out.api, names); !missing.empty()) {
      out.error = cat("libcuda.so.1 has no ", missing, ": the NVIDIA driver is too old");
      return out;
    }
    if (const CUresult r = out.api.cuInit(0); r != CUDA_SUCCESS) {
      const char* name = nullptr;
      out.api.cuGetErrorName(r, &name);
      out.error = cat("cuInit failed: ", name ? name : "unknown error", " (", r, "): no usable NVIDIA GPU");
    }
    return out;
  }();
  return loaded;
}

struct LoadedNvrtc {
  NvrtcApi api{};
  std::string error;
};

// NV_NVRTC_LIBRARY, else the names the toolkit installs (newest first), else the one CMake found at build time.
std::vector<std::string> nvrtc_candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("NV_NVRTC_LIBRARY"); env != nullptr && *env != '\0') return {env};
  for (const char* name : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"})
    out.push_back(name);
#ifdef TG_NV_NVRTC_HINT
  out.push_back(TG_NV_NVRTC_HINT);
#endif
  return out;
}

const LoadedNvrtc& loaded_nvrtc() {
  static const LoadedNvrtc loaded = [] {
    LoadedNvrtc out;
    std::vector<std::pair<std::string, std::string>> refused;
    void* lib = sdk::open_first(nvrtc_candidates(), &refused);
    if (lib == nullptr) {
      std::string tried;
      for (const auto& [name, why] : refused) tried += cat("\n  ", name, ": ", why);
      out.error = cat("cannot load NVRTC (install the CUDA toolkit or set NV_NVRTC_LIBRARY):", tried);
      return out;
    }
    static const char* const names[] = {"nvrtcCreateProgram",     "nvrtcDestroyProgram", "nvrtcCompileProgram",
                                        "nvrtcGetProgramLogSize", "nvrtcGetProgramLog",  "nvrtcGetCUBINSize",
                                        "nvrtcGetCUBIN",          "nvrtcGetErrorString", "nvrtcVersion"};
    if (std::string missing = sdk::resolve_api(lib, out.api, names); !missing.empty())
      out.error = cat("NVRTC has no ", missing, ": it is older than CUDA 11.1");
    return out;
  }();
  return loaded;
}

}  // namespace

const CudaApi& cuda() {
  const LoadedCuda& loaded = loaded_cuda();
  if (!loaded.error.empty()) throw Error(TG_ERR_UNAVAILABLE, loaded.error);
  return loaded.api;
}

const NvrtcApi& nvrtc() {
  const LoadedNvrtc& loaded = loaded_nvrtc();
  if (!loaded.error.empty()) throw Error(TG_ERR_UNAVAILABLE, loaded.error);
  return loaded.api;
}

void check_cu(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (cuda().cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) name = "CUDA_ERROR_UNKNOWN";
  const tg_status_code code = r == 2 /* CUDA_ERROR_OUT_OF_MEMORY */ ? TG_ERR_OUT_OF_MEMORY
                              : r == 1 /* CUDA_ERROR_INVALID_VALUE */ || r == 400 /* INVALID_HANDLE */ ||
                                      r == 200 /* INVALID_IMAGE */ || r == 701 /* LAUNCH_OUT_OF_RESOURCES */
                                  ? TG_ERR_INVALID_ARGUMENT
                                  : TG_ERR_INTERNAL;
  throw Error(code, cat(call, " failed: ", name, " (", r, ")"));
}

std::string default_arch() {
  const char* env = std::getenv("NV_ARCH");
  return env != nullptr && *env != '\0' ? env : "sm_90";
}

void Device::bind() const { check_cu(cuda().cuCtxSetCurrent(context), "cuCtxSetCurrent"); }

Device::~Device() {
  if (context != nullptr) cuda().cuDevicePrimaryCtxRelease(cu_device);
}

// What the device slots need to know (tg/sdk/plugin_slots.hpp): how many devices, and how to open one.
struct DeviceHooks {
  using Device = nv::Device;
  static constexpr std::string_view plugin = "nv";
  static constexpr bool is_host = false;
  static uint32_t count();
  static std::shared_ptr<Device> open(uint32_t index);
};
using DeviceSlots = sdk::DeviceSlots<DeviceHooks>;  // the table's device_* slots

std::shared_ptr<Device> device_of(tg_device device) { return sdk::require(device, "device")->device; }

// No driver or no GPU is zero devices (`tg devices` says "no devices present"); device_open says why.
uint32_t DeviceHooks::count() {
  if (!loaded_cuda().error.empty()) return 0;
  int count = 0;
  return cuda().cuDeviceGetCount(&count) == CUDA_SUCCESS && count > 0 ? static_cast<uint32_t>(count) : 0;
}

std::shared_ptr<Device> DeviceHooks::open(uint32_t index) {
  const CudaApi& cu = cuda();
  int count = 0;
  check_cu(cu.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (index >= static_cast<uint32_t>(count))
    throw Error(count == 0 ? TG_ERR_UNAVAILABLE : TG_ERR_INVALID_ARGUMENT,
                cat("no NV device ", index, "; the CUDA driver reports ", count));
  auto device = std::make_shared<Device>();
  check_cu(cu.cuDeviceGet(&device->cu_device, static_cast<int>(index)), "cuDeviceGet");
  char name[256] = {};
  check_cu(cu.cuDeviceGetName(name, sizeof name - 1, device->cu_device), "cuDeviceGetName");
  int major = 0, minor = 0, sms = 0;
  check_cu(cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device->cu_device),
           "cuDeviceGetAttribute");
  check_cu(cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device->cu_device),
           "cuDeviceGetAttribute");
  check_cu(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device->cu_device),
           "cuDeviceGetAttribute");
  size_t memory = 0;
  check_cu(cu.cuDeviceTotalMem(&memory, device->cu_device), "cuDeviceTotalMem");
  device->memory_bytes = memory;
  device->arch = cat("sm_", major, minor);
  device->description = cat(name, ", ", sms, " SMs, ", device->arch);
  check_cu(cu.cuDevicePrimaryCtxRetain(&device->context, device->cu_device), "cuDevicePrimaryCtxRetain");
  return device;
}

const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api =
      sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, AllocatorSlots, ProgramSlots, QueueSlots, Lifecycle>(
          "nv", "NV");
  return api;
}

}  // namespace tg::nv

TG_SDK_PLUGIN_ENTRY(tg::nv::plugin_api());
