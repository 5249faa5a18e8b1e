// The AMD plugin's entry point and table, the run-time loading of the HIP runtime (libamdhip64), HIP error names,
// and its devices: the GPUs the HIP runtime reports. Without ROCm or a GPU there are simply no devices, and
// device_open says why in one line; rendering and compiling need neither.
#include "amd_plugin.hpp"

#include <tg/sdk/plugin.hpp>
#include <tg/sdk/plugin_table.hpp>
#include <tg/sdk/runtime_library.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace tg::amd {

using sdk::cat;
using sdk::Error;

namespace {

struct LoadedHip {
  HipApi api{};
  std::string error;  // why the runtime is unusable; empty when it is
};

// AMD_HIP_LIBRARY, else the names ROCm installs (unversioned, then 6 and 5).
std::vector<std::string> hip_candidates() {
  if (const char* env = std::getenv("AMD_HIP_LIBRARY"); env != nullptr && *env != '\0') return {env};
  return {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so"};
}

const LoadedHip& loaded_hip() {
  static const LoadedHip loaded = [] {
    LoadedHip out;
    // Never closed: the runtime keeps threads and atexit handlers that must find their code mapped.
    std::vector<std::pair<std::string, std::string>> refused;
    void* lib = sdk::open_first(hip_candidates(), &refused);
    if (lib == nullptr) {
      std::string tried;
      for (const auto& [name, why] : refused) tried += cat(tried.empty() ? "" : ", ", name);
      out.error = cat("cannot load the HIP runtime (tried ", tried, "; ", refused.empty() ? "" : refused[0].second,
                      "): install ROCm or set AMD_HIP_LIBRARY");
      return out;
    }
    static const char* const names[] = {"hipInit",
                                        "hipGetDeviceCount",
                                        "hipSetDevice",
                                        "hipDeviceGetName",
                                        "hipDeviceGetAttribute",
                                        "hipDeviceTotalMem",
                                        "hipGetDevicePropertiesR0600",
                                        "hipMalloc",
                                        "hipFree",
                                        "hipMemcpyHtoD",
                                        "hipMemcpyDtoH",
                                        "hipMemcpyDtoDAsync",
                                        "hipModuleLoadData",
                                        "hipModuleUnload",
                                        "hipModuleGetFunction",
                                        "hipModuleLaunchKernel",
                                        "hipStreamCreateWithFlags",
                                        "hipStreamDestroy",
                                        "hipStreamSynchronize",
                                        "hipDeviceSynchronize",
                                        "hipEventCreateWithFlags",
                                        "hipEventDestroy",
                                        "hipEventRecord",
                                        "hipEventQuery",
                                        "hipEventSynchronize",
                                        "hipEventElapsedTime",
                                        "hipGetErrorName",
                                        "hipMemcpyPeer"};
    if (std::string missing = sdk::resolve_api(lib, out.api, names); !missing.empty()) {
      out.error = cat("the HIP runtime has no ", missing, ": it is older than ROCm 6");
      return out;
    }
    if (const hipError_t r = out.api.hipInit(0); r != hipSuccess) {
      const char* name = out.api.hipGetErrorName(r);
      out.error = cat("hipInit failed: ", name ? name : "unknown error", " (", r, "): no usable AMD GPU");
    }
    return out;
  }();
  return loaded;
}

}  // namespace

const HipApi& hip() {
  const LoadedHip& loaded = loaded_hip();
  if (!loaded.error.empty()) throw Error(TG_ERR_UNAVAILABLE, loaded.error);
  return loaded.api;
}

void check_hip(hipError_t r, const char* call) {
  if (r == hipSuccess) return;
  const char* name = hip().hipGetErrorName(r);
  const tg_status_code code = r == 2 /* hipErrorOutOfMemory */ ? TG_ERR_OUT_OF_MEMORY
                              : r == 1 /* InvalidValue */ || r == 400 /* InvalidHandle */ ||
                                      r == 200 /* InvalidImage */ || r == 209 /* NoBinaryForGpu */ ||
                                      r == 701 /* LaunchOutOfResources */
                                  ? TG_ERR_INVALID_ARGUMENT
                                  : TG_ERR_INTERNAL;
  throw Error(code, cat(call, " failed: ", name ? name : "hipErrorUnknown", " (", r, ")"));
}

std::string default_arch() {
  const char* env = std::getenv("AMD_ARCH");
  return env != nullptr && *env != '\0' ? env : "gfx1100";
}

std::string base_arch(const std::string& arch) { return arch.substr(0, arch.find(':')); }

uint32_t wave_size(const std::string& arch) {
  const std::string base = base_arch(arch);
  // gfxN..., where the major version is every digit but the last two (gfx942 -> 9, gfx1100 -> 11)
  const int major = base.size() > 5 ? std::atoi(base.substr(3, base.size() - 5).c_str()) : 0;
  return major >= 10 ? 32 : 64;
}

void Device::bind() const { check_hip(hip().hipSetDevice(ordinal), "hipSetDevice"); }

// What the device slots need to know (tg/sdk/plugin_slots.hpp): how many devices, and how to open one.
struct DeviceHooks {
  using Device = amd::Device;
  static constexpr std::string_view plugin = "amd";
  static constexpr bool is_host = false;
  static uint32_t count();
  static std::shared_ptr<Device> open(uint32_t index);
};
using DeviceSlots = sdk::DeviceSlots<DeviceHooks>;

std::shared_ptr<Device> device_of(tg_device device) { return sdk::require(device, "device")->device; }

// No runtime or no GPU is zero devices (`tg devices` says "no devices present" and device_open's reason).
uint32_t DeviceHooks::count() {
  if (!loaded_hip().error.empty()) return 0;
  int count = 0;
  return hip().hipGetDeviceCount(&count) == hipSuccess && count > 0 ? static_cast<uint32_t>(count) : 0;
}

std::shared_ptr<Device> DeviceHooks::open(uint32_t index) {
  const HipApi& api = hip();
  int count = 0;
  if (const hipError_t r = api.hipGetDeviceCount(&count); r != hipSuccess && r != 100 /* hipErrorNoDevice */)
    check_hip(r, "hipGetDeviceCount");
  if (index >= static_cast<uint32_t>(count))
    throw Error(count == 0 ? TG_ERR_UNAVAILABLE : TG_ERR_INVALID_ARGUMENT,
                cat("no AMD device ", index, "; the HIP runtime reports ", count));
  auto device = std::make_shared<Device>();
  device->ordinal = static_cast<int>(index);
  char name[256] = {};
  check_hip(api.hipDeviceGetName(name, sizeof name - 1, device->ordinal), "hipDeviceGetName");
  int cus = 0;
  check_hip(api.hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device->ordinal),
            "hipDeviceGetAttribute");
  size_t memory = 0;
  check_hip(api.hipDeviceTotalMem(&memory, device->ordinal), "hipDeviceTotalMem");
  std::vector<char> props(kHipDevicePropBufferSize, '\0');
  check_hip(api.hipGetDevicePropertiesR0600(props.data(), device->ordinal), "hipGetDeviceProperties");
  const std::string gcn(props.data() + kHipDevicePropGcnArchNameOffset,
                        strnlen(props.data() + kHipDevicePropGcnArchNameOffset, 256));
  device->arch = base_arch(gcn);
  if (device->arch.rfind("gfx", 0) != 0)
    throw Error(TG_ERR_UNAVAILABLE, cat("AMD device ", index, " (", name, ") reports arch '", gcn, "', not gfx..."));
  device->memory_bytes = memory;
  device->description = cat(name, ", ", cus, " CUs, ", device->arch);
  return device;
}

tg_status_t QueueSlots::device_synchronize(tg_device device) noexcept {
  return sdk::guard("amd device_synchronize", [&] {
    const std::shared_ptr<Device> dev = device_of(device);
    dev->bind();
    check_hip(hip().hipDeviceSynchronize(), "hipDeviceSynchronize");
  });
}

const tg_plugin_api& plugin_api() noexcept {
  static const tg_plugin_api api =
      sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, AllocatorSlots, ProgramSlots, QueueSlots>("amd",
                                                                                                             "AMD");
  return api;
}

}  // namespace tg::amd

TG_SDK_PLUGIN_ENTRY(tg::amd::plugin_api());
