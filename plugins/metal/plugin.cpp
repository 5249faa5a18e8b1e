// The METAL plugin's entry point and table, and its device: the system default MTLDevice. Without libobjc or
// Metal.framework (every platform but macOS), or without a Metal GPU, there are zero devices; device_open says why.
#include "metal_plugin.hpp"

#include <tg/sdk/plugin.hpp>
#include <tg/sdk/plugin_table.hpp>

namespace tg::metal {

using sdk::cat;
using sdk::Error;

// What the device slots need to know (tg/sdk/plugin_slots.hpp): one device at most, the system default.
struct DeviceHooks {
  using Device = metal::Device;
  static constexpr std::string_view plugin = "metal";
  static constexpr bool is_host = false;
  static uint32_t count() { return system_device() != nullptr ? 1 : 0; }
  static std::shared_ptr<Device> open(uint32_t index);
};
using DeviceSlots = sdk::DeviceSlots<DeviceHooks>;  // the table's device_* slots

std::shared_ptr<Device> device_of(tg_device device) { return sdk::require(device, "device")->device; }

std::shared_ptr<Device> DeviceHooks::open(uint32_t index) {
  if (!objc_error().empty())
    throw Error(TG_ERR_UNAVAILABLE,
                cat("no METAL device ", index, ": ", objc_error(), " (Metal exists only on macOS)"));
  id mtl = system_device();
  if (mtl == nullptr)
    throw Error(TG_ERR_UNAVAILABLE, cat("no METAL device ", index, ": MTLCreateSystemDefaultDevice returned nil"));
  if (index != 0) throw Error(TG_ERR_INVALID_ARGUMENT, cat("no METAL device ", index, "; there is one, METAL:0"));
  AutoreleasePool pool;
  auto device = std::make_shared<Device>();
  device->device = retained(mtl);
  device->memory_bytes = send<uint64_t>(mtl, "recommendedMaxWorkingSetSize");
  device->max_buffer_bytes = send<uint64_t>(mtl, "maxBufferLength");
  std::string name = from_ns_string(send(mtl, "name"));
  device->description = cat(name.empty() ? "unnamed Metal GPU" : name, ", Metal (MSL 3.1)");
  return device;
}

const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api =
      sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, AllocatorSlots, ProgramSlots, QueueSlots>("metal",
                                                                                                             "METAL");
  return api;
}

}  // namespace tg::metal

TG_SDK_PLUGIN_ENTRY(tg::metal::plugin_api());
