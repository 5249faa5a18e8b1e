// The SKELETON plugin's devices and its table. Fill in: how many devices there are and how to open one (a handle
// of your own, `struct tg_device_s`), and what device_get_info reports (name = the DEV name, is_host = whether the
// host can read buffers directly). tg/sdk/plugin_slots.hpp's DeviceSlots writes these four slots from two hooks.
#include "skeleton.hpp"

#include <tg/sdk/plugin.hpp>
#include <tg/sdk/plugin_table.hpp>

namespace tg::skeleton {

tg_status_t DeviceSlots::count(uint32_t*) noexcept {
  return sdk::guard("skeleton device_count",
                    [] { not_implemented("device_count (how many devices this machine has)"); });
}
tg_status_t DeviceSlots::open(uint32_t, tg_device*) noexcept {
  return sdk::guard("skeleton device_open", [] { not_implemented("device_open (a handle for device <index>)"); });
}
void DeviceSlots::close(tg_device) noexcept {}  // nothing was opened
tg_status_t DeviceSlots::get_info(tg_device, tg_device_info*) noexcept {
  return sdk::guard("skeleton device_get_info",
                    [] { not_implemented("device_get_info (name, description, arch, memory)"); });
}

// The table, from the six slot classes. ABI 1.1's optional slots (device_synchronize, get_extension,
// plugin_shutdown) stay NULL: the core falls back.
const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api =
      sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, AllocatorSlots, ProgramSlots, QueueSlots>(
          "skeleton", "SKELETON");
  return api;
}

}  // namespace tg::skeleton

TG_SDK_PLUGIN_ENTRY(tg::skeleton::plugin_api());
