// The DSP plugin's private declarations: the objects behind the ABI's opaque handles (device, program), the
// registry of its allocations, the qemu-hexagon launch and the slot functions each interface file defines.
//
// The DSP is Hexagon (v67 with 128-byte HVX). Kernels are rendered to freestanding C, compiled by clang-19 and
// linked by ld.lld-19 with the mock runtime (runtime/*.c) into a static Linux program, and every launch runs that
// program under qemu-hexagon, which reads the kernel's buffers and scalars on stdin and writes the buffers it
// stored to back on stdout. A real Hexagon through FastRPC is detected but not driven.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/plugin_handles.hpp>

#include <memory>

namespace tg::dsp {
struct Device;
struct Program;
}  // namespace tg::dsp

// The device and program handles, complete before the SDK's slot templates that reach into them.
struct tg_device_s : tg::sdk::DeviceHandle<tg::dsp::Device> {};
struct tg_program_s : tg::sdk::ProgramHandle<tg::dsp::Program> {};

#include <tg/sdk/host_allocator.hpp>
#include <tg/sdk/host_queue.hpp>
#include <tg/sdk/plugin_slots.hpp>
#include <tg/sdk/program_signature.hpp>
#include <tg/sdk/status.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tg::dsp {

// The Hexagon version the compiler targets: the newest qemu 7.2's hexagon model runs (it refuses v68+ ELFs).
inline constexpr const char* kArch = "hexagonv67";
// Buffers live in host memory, but a launch maps every one it uses into the emulated 32-bit address space: one
// allocation may not exceed this (and the buffers of one launch together must fit beside qemu's own mappings).
inline constexpr uint64_t kMaxAllocation = uint64_t{2} << 30;

// Host allocations by address, so that a launch finds the allocation (and its extent) behind a buffer address in
// the argument blob. Buffers are host memory the plugin allocated; the core sees is_host = 0, so it never hands
// a launch memory the plugin does not know the size of. One registry for the process: addresses are unique in it,
// and a buffer allocated through one device handle may be launched through another.
class Allocations {
 public:
  static Allocations& get();
  void add(uint64_t addr, uint64_t size);
  void remove(uint64_t addr);
  // The allocation [base, base+size) containing addr (an address one past the end counts: an empty view);
  // false when there is none.
  bool find(uint64_t addr, uint64_t* base, uint64_t* size) const;

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> by_base_;
};

// One opened DSP device. Shared by its handle and by every queue and program made from it.
struct Device {
  std::string name = "DSP";
  std::string description;  // says it is the qemu-hexagon mock, and whether a FastRPC device was seen
  std::string arch = kArch;
  uint64_t memory_bytes = kMaxAllocation;
  std::string qemu;      // the qemu-hexagon binary launches run
  double timeout_s = 0;  // a launch running longer is killed (DSP_TIMEOUT_S)
};

// A loaded kernel: its Hexagon program in a memfd (closed with the program), and its signature.
struct Program {
  std::shared_ptr<Device> device;
  int fd = -1;  // the memfd holding the executable ELF; qemu-hexagon runs /proc/<pid>/fd/<fd>
  std::string kernel_name;
  sdk::Signature signature;  // a checked copy, laid out
  size_t args_size = 0;      // bytes of the packed argument blob

  ~Program();
};

// Runs work-items [0, count) of the program under qemu-hexagon with the packed argument blob `args` (launch.cpp).
void launch(Device& device, const Program& program, const unsigned char* args, uint64_t count);

// The qemu-hexagon binary: QEMU_HEXAGON when set, else qemu-hexagon-static or qemu-hexagon on PATH. Throws
// TG_ERR_UNAVAILABLE with the reason when there is none (plugin.cpp).
std::string find_qemu();
// An executable on PATH (or a path with a slash that is executable); "" when there is none.
std::string find_executable(const std::string& name);

// ---- slot functions (one group per file) ------------------------------------------------------------------------
std::shared_ptr<Device> device_of(tg_device device);  // plugin.cpp; throws on NULL

struct RendererHooks;  // renderer.cpp: KIR -> Hexagon C
struct CompilerHooks;  // compiler.cpp: C -> a static Hexagon ELF (clang-19, ld.lld-19)
using RendererSlots = sdk::RendererSlots<RendererHooks>;
using CompilerSlots = sdk::CompilerSlots<CompilerHooks>;

// allocator.cpp: the SDK's host allocator; every allocation is registered (Allocations) for the launches
struct AllocatorHooks {
  using Device = dsp::Device;
  static constexpr std::string_view plugin = "dsp";
  static std::shared_ptr<Device> device_of(tg_device device) { return dsp::device_of(device); }
  static void on_alloc(Device& device, uint64_t addr, uint64_t size);
  static void on_free(Device& device, uint64_t addr);
};
using AllocatorSlots = sdk::HostAllocatorSlots<AllocatorHooks>;  // the table's allocator_* slots

// program.cpp: a checked signature in, the program's executable written out
struct ProgramHooks {
  using Program = dsp::Program;
  static constexpr std::string_view plugin = "dsp";
  static std::shared_ptr<Program> load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                       sdk::Signature signature);
};
using ProgramSlots = sdk::ProgramSlots<ProgramHooks, tg_program_s>;  // the table's program_* slots

// hwqueue.cpp: the SDK's host queue; an exec is one qemu-hexagon run
struct QueueHooks {
  using Device = dsp::Device;
  using Program = dsp::Program;
  static constexpr std::string_view plugin = "dsp";
  static constexpr std::string_view device_label = "the DSP";
  static std::shared_ptr<Device> device_of(tg_device device) { return dsp::device_of(device); }
  static std::shared_ptr<Program> program_of(tg_program program) { return ProgramSlots::of(program); }
  static void run(Device& device, const Program& program, const unsigned char* args, uint64_t count) {
    launch(device, program, args, count);
  }
};
using QueueSlots = sdk::HostQueueSlots<tg_hwqueue_s>;

}  // namespace tg::dsp

extern template struct tg::sdk::RendererSlots<tg::dsp::RendererHooks>;
extern template struct tg::sdk::CompilerSlots<tg::dsp::CompilerHooks>;

struct tg_hwqueue_s : tg::sdk::HostQueue<tg::dsp::QueueHooks> {
  using HostQueue::HostQueue;
};
