// The METAL plugin's entry point and table, and its devices: none in this build, which has no Metal runtime (the
// renderer alone works, with no device). `tg devices` reports "no devices present"; device_open says why.
#include "metal_plugin.hpp"

#include <tg/sdk/plugin.hpp>
#include <tg/sdk/plugin_table.hpp>

namespace tg::metal {

using sdk::cat;
using sdk::Error;

void throw_no_runtime(const char* what) {
#if defined(__APPLE__)
  throw Error(TG_ERR_UNAVAILABLE, cat(what, ": this build of the metal plugin is render-only (its Metal runtime, "
                                            "through the Objective-C runtime, is not written yet)"));
#else
  throw Error(TG_ERR_UNAVAILABLE, cat(what, ": the Metal runtime exists only on macOS (this build renders MSL only)"));
#endif
}

// What the device slots need to know (tg/sdk/plugin_slots.hpp): there are no devices to open.
struct DeviceHooks {
  using Device = metal::Device;
  static constexpr std::string_view plugin = "metal";
  static constexpr bool is_host = false;
  static uint32_t count() { return 0; }
  static std::shared_ptr<Device> open(uint32_t index) { throw_no_runtime(cat("no METAL device ", index).c_str()); }
};
using DeviceSlots = sdk::DeviceSlots<DeviceHooks>;  // the table's device_* slots

const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api = sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, AllocatorSlots,
                                                     ProgramSlots, QueueSlots>("metal", "METAL");
  return api;
}

}  // namespace tg::metal

TG_SDK_PLUGIN_ENTRY(tg::metal::plugin_api());
