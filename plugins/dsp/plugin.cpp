// The DSP plugin's entry point and table, and its one device: Hexagon v67 + HVX, emulated by qemu-hexagon (the mock
// DSP). A FastRPC device node (a real Hexagon behind a Snapdragon's kernel driver) is detected and named, but
// running kernels through FastRPC is not implemented: the device says so and uses the mock.
#include "dsp_plugin.hpp"

#include <tg/sdk/plugin.hpp>
#include <tg/sdk/plugin_table.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tg::dsp {

using sdk::cat;
using sdk::Error;

namespace {

constexpr double kDefaultTimeoutS = 600;  // qemu runs a big kernel slowly; a hung one must still end

bool is_executable_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

double timeout_seconds() {
  const char* env = std::getenv("DSP_TIMEOUT_S");
  if (env == nullptr || *env == '\0') return kDefaultTimeoutS;
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(env, &end);
  if (*end != '\0' || errno != 0 || !(s > 0) || !std::isfinite(s))
    throw Error(TG_ERR_INVALID_ARGUMENT, cat("DSP_TIMEOUT_S=", env, " is not a positive number of seconds"));
  return s;
}

// The FastRPC device nodes of a real Hexagon (the downstream adsprpc driver, then the upstream fastrpc one).
std::string fastrpc_node() {
  for (const char* node : {"/dev/adsprpc-smd", "/dev/fastrpc-cdsp", "/dev/fastrpc-adsp", "/dev/fastrpc-sdsp"})
    if (::access(node, F_OK) == 0) return node;
  return "";
}

}  // namespace

std::string find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    if (is_executable_file(dir + "/" + name)) return dir + "/" + name;
    start = end + 1;
  }
  return "";
}

std::string find_qemu() {
  const char* env = std::getenv("QEMU_HEXAGON");
  if (env != nullptr && *env != '\0') {
    const std::string found = find_executable(env);
    if (found.empty())
      throw Error(TG_ERR_UNAVAILABLE,
                  cat("QEMU_HEXAGON=", env, " is not an executable file; the DSP runs kernels under qemu-hexagon"));
    return found;
  }
  for (const char* name : {"qemu-hexagon-static", "qemu-hexagon"}) {
    const std::string found = find_executable(name);
    if (!found.empty()) return found;
  }
  throw Error(TG_ERR_UNAVAILABLE,
              "no qemu-hexagon-static or qemu-hexagon on PATH (Debian: qemu-user-static; or set QEMU_HEXAGON): the DSP "
              "device is the qemu-hexagon mock");
}

std::shared_ptr<Device> device_of(tg_device device) { return sdk::require(device, "device")->device; }

struct DeviceHooks {
  using Device = dsp::Device;
  static constexpr std::string_view plugin = "dsp";
  static constexpr std::string_view device_label = "DSP";
  // Buffers are host memory, but a kernel reads only what a launch sends it: the core must go through the
  // allocator (its copies), never hand a launch host memory the plugin did not allocate (see Allocations).
  static constexpr bool is_host = false;

  // No qemu-hexagon: no device (device_open says why).
  static uint32_t count() {
    try {
      find_qemu();
      return 1;
    } catch (const Error&) {
      return 0;
    }
  }
  static std::shared_ptr<Device> open(uint32_t index) {
    auto device = std::make_shared<Device>();
    device->qemu = find_qemu();
    if (index != 0) throw Error(TG_ERR_INVALID_ARGUMENT, cat("no DSP device ", index, "; there is one, DSP:0"));
    device->timeout_s = timeout_seconds();
    const std::string node = fastrpc_node();
    device->description =
        cat("Hexagon ", kArch, " + HVX 128B, mock: kernels run under ", device->qemu,
            node.empty() ? std::string(" (no FastRPC device)")
                         : cat(" (FastRPC device ", node,
                               " found, but running on a real Hexagon through FastRPC is not implemented)"));
    return device;
  }
};
using DeviceSlots = sdk::DeviceSlots<DeviceHooks>;

const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api =
      sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, AllocatorSlots, ProgramSlots, QueueSlots>("dsp",
                                                                                                             "DSP");
  return api;
}

}  // namespace tg::dsp

TG_SDK_PLUGIN_ENTRY(tg::dsp::plugin_api());
