// The HOSTC plugin's private declarations. HOSTC is the SDK's example of a host-C plugin: kernels are rendered as
// ISO C11 by the SDK's C preset (tg/sdk/c11_renderer.hpp), compiled into a shared object by the system's C compiler
// (`cc`, or $HOSTC_CC), loaded with dlopen and run on the calling thread. Everything but the compiler call comes
// from the SDK:
//   Renderer  sdk::C11Renderer as it is                           (renderer.cpp)
//   Compiler  `cc -std=c11 -O2 -ffp-contract=off -fPIC -shared`   (compiler.cpp; a subprocess)
//   Program   sdk::Signature + sdk::SharedObject                   (program.cpp)
//   Allocator sdk::HostAllocatorSlots                              (this header)
//   HWQueue   sdk::HostQueue, whose exec calls the kernel          (hwqueue.cpp)
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/host_allocator.hpp>
#include <tg/sdk/host_queue.hpp>
#include <tg/sdk/plugin_slots.hpp>
#include <tg/sdk/program_signature.hpp>
#include <tg/sdk/shared_object.hpp>
#include <tg/sdk/status.hpp>

#include <memory>
#include <string>
#include <string_view>

struct tg_program_s;

namespace tg::hostc {

// The one device: this host.
struct Device {
  std::string name = "HOSTC";
  std::string description;  // "host C11 through cc"
  std::string arch = "c11";
  uint64_t memory_bytes = 0;  // physical RAM: the most one allocation may ask for
};

// What the C preset's kernels look like: work-items [gidx0_start, gidx0_end) of global dim 0.
using KernelFn = void (*)(const unsigned char* args, int64_t gidx0_start, int64_t gidx0_end);

// A loaded kernel. Shared by its handle and by queues that recorded an exec of it.
struct Program {
  std::shared_ptr<Device> device;
  std::string kernel_name;
  sdk::Signature signature;
  std::unique_ptr<sdk::SharedObject> code;
  KernelFn fn = nullptr;
  size_t args_size = 0;
};

// ---- one slot class per interface, for the table in plugin.cpp (tg/sdk/plugin_table.hpp) ---------------------
std::shared_ptr<Device> device_of(tg_device device);  // plugin.cpp; throws on NULL

struct RendererHooks;  // renderer.cpp
struct CompilerHooks;  // compiler.cpp
using RendererSlots = sdk::RendererSlots<RendererHooks>;
using CompilerSlots = sdk::CompilerSlots<CompilerHooks>;

struct AllocatorHooks {
  using Device = hostc::Device;
  static constexpr std::string_view plugin = "hostc";
  static std::shared_ptr<Device> device_of(tg_device device) { return hostc::device_of(device); }
};
using AllocatorSlots = sdk::HostAllocatorSlots<AllocatorHooks>;

struct ProgramHooks {  // program.cpp
  using Program = hostc::Program;
  static constexpr std::string_view plugin = "hostc";
  static std::shared_ptr<Program> load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                       sdk::Signature signature);
};
using ProgramSlots = sdk::ProgramSlots<ProgramHooks, tg_program_s>;

struct QueueHooks {
  using Device = hostc::Device;
  using Program = hostc::Program;
  static constexpr std::string_view plugin = "hostc";
  static constexpr std::string_view device_label = "HOSTC";
  static std::shared_ptr<Device> device_of(tg_device device) { return hostc::device_of(device); }
  static std::shared_ptr<Program> program_of(tg_program program) { return ProgramSlots::of(program); }
  static void run(Device& device, const Program& program, const unsigned char* args, uint64_t count);
};
using QueueSlots = sdk::HostQueueSlots<tg_hwqueue_s>;

}  // namespace tg::hostc

extern template struct tg::sdk::RendererSlots<tg::hostc::RendererHooks>;
extern template struct tg::sdk::CompilerSlots<tg::hostc::CompilerHooks>;

struct tg_device_s {
  std::shared_ptr<tg::hostc::Device> device;
};
struct tg_program_s {
  std::shared_ptr<tg::hostc::Program> program;
};
struct tg_hwqueue_s : tg::sdk::HostQueue<tg::hostc::QueueHooks> {
  using HostQueue::HostQueue;
};
