// The INTERP plugin's entry point and table, and its one device: an interpreter that runs KIR on the host.
#include "interp_plugin.hpp"

#include <tg/sdk/plugin.hpp>

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

const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api = {
      .struct_size = sizeof(tg_plugin_api),
      .abi_major = TG_ABI_VERSION_MAJOR,
      .abi_minor = TG_ABI_VERSION_MINOR,
      .plugin_name = "interp",
      .device_name = "INTERP",
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
      .hwqueue_create = QueueSlots::create,
      .hwqueue_destroy = QueueSlots::destroy,
      .hwqueue_exec = QueueSlots::exec,
      .hwqueue_copy = QueueSlots::copy,
      .hwqueue_signal = QueueSlots::signal,
      .hwqueue_timestamp = QueueSlots::timestamp,
      .hwqueue_submit = QueueSlots::submit,
      .hwqueue_wait = QueueSlots::wait,
      .hwqueue_read_timestamp = QueueSlots::read_timestamp,
      // ABI 1.1's optional slots: the ones left out are NULL (get_extension: no extensions; plugin_shutdown:
      // nothing to release before unloading)
      .device_synchronize = QueueSlots::device_synchronize,
  };
  return api;
}

}  // namespace tg::interp

TG_SDK_PLUGIN_ENTRY(tg::interp::plugin_api());
