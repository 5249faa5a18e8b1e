// The METAL plugin's private declarations: the tensor cores its renderer claims (simdgroup matrices), the slot
// functions each interface file defines, and the one reason every runtime slot gives off macOS.
//
// The renderer (KIR -> Metal Shading Language) needs no device and works everywhere. Everything else needs the
// Metal runtime, which this build does not have: there are zero devices, and device_open, compiler_create, the
// allocator, program and queue slots each fail with TG_ERR_UNAVAILABLE saying so.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/plugin_slots.hpp>
#include <tg/sdk/status.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace tg::metal {

// An opened Metal device. Never made in this build (there are none); the handle type exists so the device slots
// are the SDK's.
struct Device {
  std::string name = "METAL";
  std::string description, arch;
  uint64_t memory_bytes = 0;
};

// Why a slot that needs the Metal runtime cannot run: thrown as TG_ERR_UNAVAILABLE.
[[noreturn]] void throw_no_runtime(const char* what);

// ---- tensor cores: simdgroup_multiply_accumulate on 8x8 simdgroup matrices -----------------------------------
// A simdgroup of 32 threads holds each 8x8 matrix two elements per thread (thread_elements()[0..1]): lane l holds
// row (l >> 1 & 3) + 4 (l >> 4 & 1), columns 2 (l & 1) + 4 (l >> 3 & 1) + e for e = 0, 1. A, B and C share it.
inline constexpr uint8_t kSimdgroupMap[16] = {TG_TC_LANE(1), TG_TC_LANE(2), TG_TC_LANE(4),
                                              TG_TC_ELEM(0), TG_TC_LANE(0), TG_TC_LANE(3)};

// ---- slot functions (one group per file) ------------------------------------------------------------------------
// renderer.cpp (KIR -> MSL, no device needed) and compiler.cpp: each keeps its hooks and handle to itself.
struct RendererHooks;
struct CompilerHooks;
using RendererSlots = sdk::RendererSlots<RendererHooks>;
using CompilerSlots = sdk::CompilerSlots<CompilerHooks>;

// allocator.cpp
struct AllocatorSlots {
  static tg_status_t alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) noexcept;
  static void free(tg_device device, const tg_buffer_desc* buffer) noexcept;
  static tg_status_t copy_in(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                             uint64_t size) noexcept;
  static tg_status_t copy_out(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset,
                              uint64_t size) noexcept;
};

// program.cpp
struct ProgramSlots {
  static tg_status_t create(tg_device device, const void* blob, size_t size, const char* kernel_name,
                            const tg_kir_param* params, uint32_t nparams, tg_program* out_program) noexcept;
  static void destroy(tg_program program) noexcept;
};

// hwqueue.cpp
struct QueueSlots {
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

}  // namespace tg::metal

// Compiled where tg_renderer_s and tg_compiler_s are complete (renderer.cpp, compiler.cpp).
extern template struct tg::sdk::RendererSlots<tg::metal::RendererHooks>;
extern template struct tg::sdk::CompilerSlots<tg::metal::CompilerHooks>;

struct tg_device_s {
  std::shared_ptr<tg::metal::Device> device;
};
