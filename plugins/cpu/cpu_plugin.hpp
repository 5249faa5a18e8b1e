// The CPU plugin's private declarations: the objects behind the ABI's opaque handles that more than one file
// needs (device, program), and the slot functions each interface file defines for the table in plugin.cpp.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/host_allocator.hpp>
#include <tg/sdk/host_queue.hpp>
#include <tg/sdk/plugin_handles.hpp>
#include <tg/sdk/plugin_slots.hpp>
#include <tg/sdk/program_signature.hpp>
#include <tg/sdk/shared_object.hpp>
#include <tg/sdk/status.hpp>

#include <oneapi/tbb/task_arena.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

struct tg_program_s;

namespace tg::cpu {

// A rendered kernel: runs work-items [gidx0_start, gidx0_end) with parameters unpacked from the packed blob.
using KernelFn = void (*)(const unsigned char* args, long long gidx0_start, long long gidx0_end);

// One opened CPU device. Shared (shared_ptr) by its handle and by every queue and program made from it, so
// closing the device early never leaves them dangling.
struct Device {
  std::string name = "CPU";
  std::string description;                 // "znver4, 16 cores (avx2 avx512f ...)"
  std::string arch;                        // the CPU's name as GCC's __builtin_cpu_is knows it ("sapphirerapids")
  uint64_t memory_bytes = 0;               // physical RAM
  unsigned threads = 1;                    // CPU_COUNT, default the hardware concurrency
  std::unique_ptr<tbb::task_arena> arena;  // `threads` wide; kernel launches split across it
};

// A loaded kernel: its entry point, a copy of its signature, and what keeps its code alive. Shared by the
// program handle and by queues that recorded an exec of it, so the code lives until the last use runs.
struct Program {
  std::shared_ptr<Device> device;
  std::string kernel_name;
  sdk::Signature signature;                 // a checked copy, laid out
  std::unique_ptr<sdk::SharedObject> code;  // the kernel's shared object, unmapped with the program
  KernelFn fn = nullptr;
  size_t args_size = 0;  // bytes of the packed argument blob (tg_param_layout)
};

// Runs work-items [0, count) of `fn`: inline for one item or one thread, else one contiguous chunk per thread.
void run_kernel(Device& device, KernelFn fn, const unsigned char* args, uint64_t count);

// ---- slot functions (one group per file) ------------------------------------------------------------------------
// plugin.cpp: the host CPU, the one device; its DeviceHooks (tg/sdk/plugin_slots.hpp) sit next to the table
std::shared_ptr<Device> device_of(tg_device device);  // throws on NULL

// renderer.cpp (KIR -> C) and compiler.cpp (C -> a shared object, through libtg_cpu_clang.so): each keeps its hooks and
// handle to itself
struct RendererHooks;
struct CompilerHooks;
using RendererSlots = sdk::RendererSlots<RendererHooks>;  // the table's renderer_* slots
using CompilerSlots = sdk::CompilerSlots<CompilerHooks>;  // the table's compiler_* slots and blob_free

// allocator.cpp: the SDK's host allocator, with allocations of its own (large buffers are their own mappings,
// returned to the system when freed); copies are the SDK's
struct AllocatorHooks {
  using Device = cpu::Device;
  static constexpr std::string_view plugin = "cpu";
  static std::shared_ptr<Device> device_of(tg_device device) { return cpu::device_of(device); }
};
struct AllocatorSlots : sdk::HostAllocatorSlots<AllocatorHooks> {
  static tg_status_t alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) noexcept;
  static void free(tg_device device, const tg_buffer_desc* buffer) noexcept;
};

// program.cpp: a checked signature in, a loaded shared object out
struct ProgramHooks {
  using Program = cpu::Program;
  static constexpr std::string_view plugin = "cpu";
  static std::shared_ptr<Program> load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                       sdk::Signature signature);
};
using ProgramSlots = sdk::ProgramSlots<ProgramHooks, tg_program_s>;  // the table's program_* slots

// hwqueue.cpp: the SDK's host queue, told how this plugin finds its objects and runs one exec
struct QueueHooks {
  using Device = cpu::Device;
  using Program = cpu::Program;
  // Error messages read "cpu hwqueue_exec: kernel k: the CPU runs one global dim and no local dims ..."
  static constexpr std::string_view plugin = "cpu";
  static constexpr std::string_view device_label = "the CPU";
  static std::shared_ptr<Device> device_of(tg_device device) { return cpu::device_of(device); }
  static std::shared_ptr<Program> program_of(tg_program program) { return ProgramSlots::of(program); }
  static void run(Device& device, const Program& program, const unsigned char* args, uint64_t count);
};
using QueueSlots = sdk::HostQueueSlots<tg_hwqueue_s>;  // the table's hwqueue_* slots

}  // namespace tg::cpu

// Compiled where tg_renderer_s and tg_compiler_s are complete (renderer.cpp, compiler.cpp).
extern template struct tg::sdk::RendererSlots<tg::cpu::RendererHooks>;
extern template struct tg::sdk::CompilerSlots<tg::cpu::CompilerHooks>;

// The opaque handles, as this plugin defines them.
struct tg_device_s : tg::sdk::DeviceHandle<tg::cpu::Device> {};
struct tg_program_s : tg::sdk::ProgramHandle<tg::cpu::Program> {};
struct tg_hwqueue_s : tg::sdk::HostQueue<tg::cpu::QueueHooks> {
  using HostQueue::HostQueue;
};
