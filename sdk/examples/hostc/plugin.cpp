// The HOSTC plugin's entry point and table, and its one device: this host, running C11 kernels compiled by `cc`.
#include "hostc_plugin.hpp"

#include <tg/sdk/plugin.hpp>
#include <tg/sdk/plugin_table.hpp>

#include <unistd.h>

#include <cstdlib>

namespace tg::hostc {

std::shared_ptr<Device> device_of(tg_device device) { return sdk::require(device, "device")->device; }

struct DeviceHooks {
  using Device = hostc::Device;
  static constexpr std::string_view plugin = "hostc";
  static constexpr std::string_view device_label = "HOSTC";
  static constexpr bool is_host = true;  // buffers are host memory

  static std::shared_ptr<Device> open(uint32_t /*index: always 0*/) {
    auto device = std::make_shared<Device>();
    // the description is part of the compile cache's key: everything that changes the machine code goes in it
    const char* cc = std::getenv("HOSTC_CC");
    const char* flags = std::getenv("HOSTC_CFLAGS");
    device->description = sdk::cat("host C11 through ", cc && *cc ? cc : "cc",
                                   flags && *flags ? sdk::cat(" ", flags) : "", " (one thread)");
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    device->memory_bytes =
        pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
    return device;
  }
};
using DeviceSlots = sdk::DeviceSlots<DeviceHooks>;

const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api =
      sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, AllocatorSlots, ProgramSlots, QueueSlots>("hostc",
                                                                                                             "HOSTC");
  return api;
}

}  // namespace tg::hostc

TG_SDK_PLUGIN_ENTRY(tg::hostc::plugin_api());
