// tg::sdk::plugin_table: the plugin's tg_plugin_api built from one slot class per interface, so no plugin writes
// the table's rows by hand. Each class holds that interface's slots as static functions, named after the ABI's
// slot without its prefix:
//
//   Devices     count open close get_info            (sdk::DeviceSlots<Hooks>)
//   Renderers   create destroy get_caps render       (sdk::RendererSlots<Hooks>)
//   Compilers   create destroy compile blob_free     (sdk::CompilerSlots<Hooks>)
//   Allocators  alloc free copy_in copy_out, and (optional, ABI 1.7) copy_peer
//                                                    (sdk::HostAllocatorSlots<Hooks>, or the plugin's own)
//   Programs    create destroy                       (sdk::ProgramSlots<Hooks>)
//   Queues      create destroy exec copy signal timestamp submit wait read_timestamp, and (optional, ABI 1.1)
//               device_synchronize                  (sdk::HostQueueSlots<Handle>, or the plugin's own)
//
// and, optionally, a class with the other ABI 1.1 slots: `get_extension(name)`, `shutdown()`. A slot class may be a
// plugin's own struct whose members are its functions: `struct Allocators { static constexpr auto alloc =
// my_alloc; ... };`.
//
//   const tg_plugin_api& plugin_api() {
//     static const tg_plugin_api api = sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, AllocatorSlots,
//                                                        ProgramSlots, QueueSlots>("mydev", "MYDEV");
//     return api;
//   }
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/status.hpp>

namespace tg::sdk {

// The optional ABI 1.1 slots nobody provides.
struct NoLifecycle {};

template <class Devices, class Renderers, class Compilers, class Allocators, class Programs, class Queues,
          class Lifecycle = NoLifecycle>
tg_plugin_api plugin_table(const char* plugin_name, const char* device_name) {
  tg_plugin_api api{};
  api.struct_size = sizeof(tg_plugin_api);
  api.abi_major = TG_ABI_VERSION_MAJOR;
  api.abi_minor = TG_ABI_VERSION_MINOR;
  api.plugin_name = plugin_name;
  api.device_name = device_name;
  api.status_free = status_free;
  api.device_count = Devices::count;
  api.device_open = Devices::open;
  api.device_close = Devices::close;
  api.device_get_info = Devices::get_info;
  api.renderer_create = Renderers::create;
  api.renderer_destroy = Renderers::destroy;
  api.renderer_get_caps = Renderers::get_caps;
  api.renderer_render = Renderers::render;
  api.compiler_create = Compilers::create;
  api.compiler_destroy = Compilers::destroy;
  api.compiler_compile = Compilers::compile;
  api.blob_free = Compilers::blob_free;
  api.allocator_alloc = Allocators::alloc;
  api.allocator_free = Allocators::free;
  api.allocator_copy_in = Allocators::copy_in;
  api.allocator_copy_out = Allocators::copy_out;
  api.program_create = Programs::create;
  api.program_destroy = Programs::destroy;
  api.hwqueue_create = Queues::create;
  api.hwqueue_destroy = Queues::destroy;
  api.hwqueue_exec = Queues::exec;
  api.hwqueue_copy = Queues::copy;
  api.hwqueue_signal = Queues::signal;
  api.hwqueue_timestamp = Queues::timestamp;
  api.hwqueue_submit = Queues::submit;
  api.hwqueue_wait = Queues::wait;
  api.hwqueue_read_timestamp = Queues::read_timestamp;
  if constexpr (requires { Queues::device_synchronize; }) api.device_synchronize = Queues::device_synchronize;
  if constexpr (requires { Allocators::copy_peer; }) api.allocator_copy_peer = Allocators::copy_peer;
  if constexpr (requires { Lifecycle::get_extension; }) api.get_extension = Lifecycle::get_extension;
  if constexpr (requires { Lifecycle::shutdown; }) api.plugin_shutdown = Lifecycle::shutdown;
  return api;
}

}  // namespace tg::sdk
