// The SKELETON plugin: the shape of every tg device plugin, one file per interface, with every slot answering
// "not implemented: <what>". Copy this directory, rename it (CMakeLists.txt, "skeleton", "SKELETON"), run
// `tg-conformance build/lib/tg/plugins/libtg_plugin_<name>.so`, and fill in slots until no test says "not
// implemented". The other examples show finished plugins: hostc (C through the SDK's C preset, host memory, the
// SDK's host queue) and interp (an interpreter). sdk/README.md explains the ABI; plugin_abi.h is the contract.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/status.hpp>

#include <string>

namespace tg::skeleton {

// What every stub throws, so the status names the slot and what filling it in means.
[[noreturn]] inline void not_implemented(const char* what) {
  throw sdk::Error(TG_ERR_UNSUPPORTED, std::string("not implemented: ") + what);
}

// One slot class per interface, each in its own file; plugin.cpp builds the table from them (tg/sdk/plugin_table.hpp).
struct DeviceSlots {  // plugin.cpp
  static tg_status_t count(uint32_t* out_count) noexcept;
  static tg_status_t open(uint32_t index, tg_device* out_device) noexcept;
  static void close(tg_device device) noexcept;
  static tg_status_t get_info(tg_device device, tg_device_info* out_info) noexcept;
};
struct RendererSlots {  // renderer.cpp: KIR -> source text, and the capabilities that tell the core what to send
  static tg_status_t create(tg_device device, const char* target, tg_renderer* out_renderer) noexcept;
  static void destroy(tg_renderer renderer) noexcept;
  static tg_status_t get_caps(tg_renderer renderer, tg_renderer_caps* out_caps) noexcept;
  static tg_status_t render(tg_renderer renderer, const tg_kir_kernel* kernel, const char** out_source) noexcept;
};
struct CompilerSlots {  // compiler.cpp: source -> blob
  static tg_status_t create(tg_device device, tg_compiler* out_compiler) noexcept;
  static void destroy(tg_compiler compiler) noexcept;
  static tg_status_t compile(tg_compiler compiler, const char* source, const char* kernel_name, void** out_blob,
                             size_t* out_size) noexcept;
  static void blob_free(void* blob) noexcept;
};
struct AllocatorSlots {  // allocator.cpp: device memory
  static tg_status_t alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) noexcept;
  static void free(tg_device device, const tg_buffer_desc* buffer) noexcept;
  static tg_status_t copy_in(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                             uint64_t size) noexcept;
  static tg_status_t copy_out(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset,
                              uint64_t size) noexcept;
};
struct ProgramSlots {  // program.cpp: blob -> something launchable
  static tg_status_t create(tg_device device, const void* blob, size_t size, const char* kernel_name,
                            const tg_kir_param* params, uint32_t nparams, tg_program* out_program) noexcept;
  static void destroy(tg_program program) noexcept;
};
struct QueueSlots {  // hwqueue.cpp: launches, copies, signals, timestamps
  static tg_status_t create(tg_device device, tg_hwqueue* out_queue) noexcept;
  static void destroy(tg_hwqueue queue) noexcept;
  static tg_status_t exec(tg_hwqueue queue, tg_program program, const void* args, size_t args_size,
                          const tg_launch_dims* dims) noexcept;
  static tg_status_t copy(tg_hwqueue queue, const tg_buffer_desc* dst, uint64_t dst_offset, const tg_buffer_desc* src,
                          uint64_t src_offset, uint64_t size) noexcept;
  static tg_status_t signal(tg_hwqueue queue, uint64_t value) noexcept;
  static tg_status_t timestamp(tg_hwqueue queue, uint64_t* out_slot) noexcept;
  static tg_status_t submit(tg_hwqueue queue) noexcept;
  static tg_status_t wait(tg_hwqueue queue, uint64_t value, uint64_t timeout_ns) noexcept;
  static tg_status_t read_timestamp(tg_hwqueue queue, uint64_t slot, uint64_t* out_ns) noexcept;
};

}  // namespace tg::skeleton
