// The METAL plugin's entry point and table, and its devices: none in this build, which has no Metal runtime (the
// renderer alone works, with no device). `tg devices` reports "no devices present"; device_open says why.
#include "metal_plugin.hpp"

#include <tg/sdk/plugin.hpp>

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
  static const tg_plugin_api api = {
      .struct_size = sizeof(tg_plugin_api),
      .abi_major = TG_ABI_VERSION_MAJOR,
      .abi_minor = TG_ABI_VERSION_MINOR,
      .plugin_name = "metal",
      .device_name = "METAL",
      .status_free = sdk::status_free,
      .device_count = DeviceSlots::count,
      .device_open = DeviceSlots::open,
      .device_close = DeviceSlots::close,
      .device_get_info = DeviceSlots::get_info,
      .renderer_create = RendererSlots::create,
      .renderer_destroy = RendererSlots::destroy,
      .renderer_get_caps = RendererSlots::get_caps,
      .renderer_render = RendererSlots::render,
      .compiler_create = CompilerSlots::create,
      .compiler_destroy = CompilerSlots::destroy,
      .compiler_compile = CompilerSlots::compile,
      .blob_free = CompilerSlots::blob_free,
      .allocator_alloc = allocator_alloc,
      .allocator_free = allocator_free,
      .allocator_copy_in = allocator_copy_in,
      .allocator_copy_out = allocator_copy_out,
      .program_create = program_create,
      .program_destroy = program_destroy,
      .hwqueue_create = hwqueue_create,
      .hwqueue_destroy = hwqueue_destroy,
      .hwqueue_exec = hwqueue_exec,
      .hwqueue_copy = hwqueue_copy,
      .hwqueue_signal = hwqueue_signal,
      .hwqueue_timestamp = hwqueue_timestamp,
      .hwqueue_submit = hwqueue_submit,
      .hwqueue_wait = hwqueue_wait,
      .hwqueue_read_timestamp = hwqueue_read_timestamp,
  };
  return api;
}

}  // namespace tg::metal

TG_SDK_PLUGIN_ENTRY(tg::metal::plugin_api());
