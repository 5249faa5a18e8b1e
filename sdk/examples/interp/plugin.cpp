// The INTERP plugin's entry point and table, and its one device: an interpreter that runs KIR on the host.
#include "interp_plugin.hpp"

#include <tg/sdk/plugin.hpp>

#include <unistd.h>

namespace tg::interp {

using sdk::cat;
using sdk::Error;

namespace {

uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
}

}  // namespace

std::shared_ptr<Device> device_of(tg_device device) { return sdk::require(device, "device")->device; }

tg_status_t device_count(uint32_t* out_count) {
  return sdk::guard("interp device_count", [&] { *sdk::require(out_count, "out_count") = 1; });
}

tg_status_t device_open(uint32_t index, tg_device* out_device) {
  return sdk::guard("interp device_open", [&] {
    sdk::require(out_device, "out_device");
    if (index != 0) throw Error(TG_ERR_INVALID_ARGUMENT, cat("no INTERP device ", index, "; there is one, INTERP:0"));
    auto device = std::make_shared<Device>();
    device->memory_bytes = physical_memory();
    *out_device = new tg_device_s{std::move(device)};
  });
}

void device_close(tg_device device) {
  sdk::guard_void("interp device_close", [&] { delete device; });
}

tg_status_t device_get_info(tg_device device, tg_device_info* out_info) {
  return sdk::guard("interp device_get_info", [&] {
    const Device& dev = *device_of(device);
    tg_device_info info{};
    info.struct_size = sizeof(info);
    info.name = "INTERP";
    info.description = "KIR interpreter (reference device: one thread, bounds-checked memory)";
    info.arch = "kir";
    info.memory_bytes = dev.memory_bytes;
    info.is_host = 1;  // buffers are host memory
    sdk::write_versioned(out_info, info, "out_info");
  });
}

const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api = {
      .struct_size = sizeof(tg_plugin_api),
      .abi_major = TG_ABI_VERSION_MAJOR,
      .abi_minor = TG_ABI_VERSION_MINOR,
      .plugin_name = "interp",
      .device_name = "INTERP",
      .status_free = sdk::status_free,
      .device_count = device_count,
      .device_open = device_open,
      .device_close = device_close,
      .device_get_info = device_get_info,
      .renderer_create = renderer_create,
      .renderer_destroy = renderer_destroy,
      .renderer_get_caps = renderer_get_caps,
      .renderer_render = renderer_render,
      .compiler_create = compiler_create,
      .compiler_destroy = compiler_destroy,
      .compiler_compile = compiler_compile,
      .blob_free = blob_free,
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
  };
  return api;
}

}  // namespace tg::interp

TG_SDK_PLUGIN_ENTRY(tg::interp::plugin_api());
