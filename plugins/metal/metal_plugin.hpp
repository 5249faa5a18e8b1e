// The METAL plugin's private declarations: the tensor cores its renderer claims (simdgroup matrices), the slot
// functions each interface file defines, and the one reason every runtime slot gives off macOS (the allocator,
// program and queue slots are the SDK's render-only ones, so they have no files of their own).
//
// The renderer (KIR -> Metal Shading Language) needs no device and works everywhere. Everything else needs the
// Metal runtime, which this build does not have: there are zero devices, and device_open, compiler_create, the
// allocator, program and queue slots each fail with TG_ERR_UNAVAILABLE saying so.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/plugin_handles.hpp>
#include <tg/sdk/plugin_slots.hpp>
#include <tg/sdk/status.hpp>
#include <tg/sdk/unavailable_slots.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

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

// The allocator, program and queue slots: each says the runtime it needs is missing (tg/sdk/unavailable_slots.hpp).
struct Unavailable {
  static constexpr std::string_view plugin = "metal";
  static constexpr std::string_view no_queue = "no Metal command queue";
  [[noreturn]] static void fail(const std::string& what) { throw_no_runtime(what.c_str()); }
};
using AllocatorSlots = sdk::UnavailableAllocatorSlots<Unavailable>;
using ProgramSlots = sdk::UnavailableProgramSlots<Unavailable>;
using QueueSlots = sdk::UnavailableQueueSlots<Unavailable>;

}  // namespace tg::metal

// Compiled where tg_renderer_s and tg_compiler_s are complete (renderer.cpp, compiler.cpp).
extern template struct tg::sdk::RendererSlots<tg::metal::RendererHooks>;
extern template struct tg::sdk::CompilerSlots<tg::metal::CompilerHooks>;

struct tg_device_s : tg::sdk::DeviceHandle<tg::metal::Device> {};
