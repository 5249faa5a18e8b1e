// The INTERP plugin's entry point and table, and its one device: an interpreter that runs KIR on the host.
#include "interp_plugin.hpp"

#include <tg/sdk/plugin.hpp>
#include <tg/sdk/plugin_table.hpp>

#include <unistd.h>

namespace tg::interp {

namespace {

uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
}

}  // namespace

std::shared_ptr<Device> device_of(tg_device device) { return sdk::require(device, "device")->device; }

// What the device slots need to know (tg/sdk/plugin_slots.hpp): there is one device, and how to open it.
struct DeviceHooks {
  using Device = interp::Device;
  static constexpr std::string_view plugin = "interp";        // starts every message: "interp device_open: ..."
  static constexpr std::string_view device_label = "INTERP";  // "no INTERP device 1; there is one, INTERP:0"
  static constexpr bool is_host = true;                       // buffers are host memory

  static std::shared_ptr<Device> open(uint32_t /*index: always 0*/) {
    auto device = std::make_shared<Device>();
    device->name = "INTERP";
    device->description = "KIR interpreter (reference device: one thread, bounds-checked memory)";
    device->arch = "kir";
    device->memory_bytes = physical_memory();
    return device;
  }
};
using DeviceSlots = sdk::DeviceSlots<DeviceHooks>;  // the table's device_* slots

// The table: one slot class per interface (tg/sdk/plugin_table.hpp). ABI 1.1's optional slots it does not name are
// NULL (get_extension: no extensions; plugin_shutdown: nothing to release before unloading); device_synchronize
// comes with the host queue.
const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api =
      sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, AllocatorSlots, ProgramSlots, QueueSlots>("interp",
                                                                                                             "INTERP");
  return api;
}

}  // namespace tg::interp

TG_SDK_PLUGIN_ENTRY(tg::interp::plugin_api());
