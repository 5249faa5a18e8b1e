// The INTERP plugin's private declarations: the objects behind the ABI's opaque handles, the owned copy of a
// KIR kernel that travels as text (renderer -> compiler) and as a blob (compiler -> program), the decoded form the
// interpreter runs, and the slot functions each interface file defines for the table in plugin.cpp.
//
// How the five interfaces map onto an interpreter:
//   Renderer  KIR -> a text dump of the KIR, readable by people and parsed back by the Compiler (kir_text.cpp)
//   Compiler  text -> blob: the parsed KIR, checked and serialized (no machine code anywhere)
//   Program   blob -> KIR -> Code, a compact decoded form with resolved operand slots and jump targets
//   Allocator host memory; it also remembers every allocation so launches can bounds-check each access
//   HWQueue   recorded commands, run in order at submit; an exec runs Code once per work-item
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/host_allocator.hpp>
#include <tg/sdk/host_queue.hpp>
#include <tg/sdk/plugin_slots.hpp>
#include <tg/sdk/status.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

struct tg_program_s;

namespace tg::interp {

// One opened INTERP device. Shared by its handle and by every queue and program made from it.
struct Device {
  std::string name;  // what device_get_info reports: plugin.cpp fills these in
  std::string description;
  std::string arch;
  uint64_t memory_bytes = 0;  // physical RAM: the most one allocation may ask for

  // Every live allocation, address -> size, so a launch can give each buffer argument its bounds.
  std::mutex allocations_mutex;
  std::map<uint64_t, uint64_t> allocations;

  // The size of the allocation that starts at `addr` (a buffer argument); throws if it is not one of ours.
  uint64_t allocation_size(uint64_t addr, const std::string& what);
};

// A KIR kernel that owns its arrays; view() is the ABI struct pointing into them.
struct KirCopy {
  std::string name;
  std::vector<tg_kir_inst> insts;
  std::vector<int32_t> src_pool;
  std::vector<tg_kir_param> params;  // params[].name points into param_names
  std::vector<std::string> param_names;
  uint32_t global_dims = 0;

  static KirCopy of(const tg_kir_kernel& kernel);
  tg_kir_kernel view() const;
  void fix_names();  // after param_names changed: re-point params[].name
};

// KIR <-> text (kir_text.cpp). The text is the Renderer's "source": one line per instruction with every field,
// float constants as exact bit patterns, and a comment with the value as people read it.
std::string kir_to_text(const tg_kir_kernel& kernel);
KirCopy kir_from_text(const std::string& text);  // throws Error(TG_ERR_COMPILE) naming the line

// KIR <-> blob (compiler.cpp writes, program.cpp reads): a versioned little-endian serialization.
std::vector<char> kir_to_blob(const tg_kir_kernel& kernel);
KirCopy kir_from_blob(const void* blob, size_t size);  // throws Error(TG_ERR_INVALID_ARGUMENT)

// The decoded program (interpreter.cpp): checked once, then run many times.
struct Code;
// Checks the kernel (operands, scopes, dtypes, the ops and lanes the caps allow) and decodes it. Throws Error:
// TG_ERR_INVALID_ARGUMENT for malformed KIR, TG_ERR_UNSUPPORTED for what INTERP does not take.
std::shared_ptr<const Code> decode(const tg_kir_kernel& kernel);
// Runs work-items [0, count) of `code` with its parameters read from the packed `args` blob. Buffer arguments
// must be allocations of `device`; an access outside one throws Error naming the instruction.
void execute(const Code& code, Device& device, const unsigned char* args, uint64_t count);

// The capabilities INTERP declares: the CPU plugin's, so the core lowers every kernel for both the same way.
tg_renderer_caps interp_caps();

// A loaded kernel: its decoded code and signature. Shared by the handle and by queues that recorded an exec.
struct Program {
  std::shared_ptr<Device> device;
  std::shared_ptr<const Code> code;
  std::string kernel_name;
  size_t args_size = 0;  // bytes of the packed argument blob (tg_param_layout)
};

// ---- slot functions (one group per file) ------------------------------------------------------------------------
// plugin.cpp: the one device; its DeviceHooks (tg/sdk/plugin_slots.hpp) sit next to the table
std::shared_ptr<Device> device_of(tg_device device);  // throws on NULL

// renderer.cpp (KIR -> KIR text) and compiler.cpp (KIR text -> blob): each keeps its hooks and handle to itself
struct RendererHooks;
struct CompilerHooks;
using RendererSlots = sdk::RendererSlots<RendererHooks>;  // the table's renderer_* slots
using CompilerSlots = sdk::CompilerSlots<CompilerHooks>;  // the table's compiler_* slots and blob_free

// allocator.cpp: the SDK's host allocator, which tells INTERP of every allocation (for bounds-checked launches)
struct AllocatorHooks {
  using Device = interp::Device;
  static constexpr std::string_view plugin = "interp";
  static std::shared_ptr<Device> device_of(tg_device device) { return interp::device_of(device); }
  static void on_alloc(Device& device, uint64_t addr, uint64_t size);
  static void on_free(Device& device, uint64_t addr);
};
using AllocatorSlots = sdk::HostAllocatorSlots<AllocatorHooks>;  // the table's allocator_* slots

// program.cpp
struct ProgramHooks {
  using Program = interp::Program;
  static constexpr std::string_view plugin = "interp";
  static std::shared_ptr<Program> load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                       sdk::Signature signature);
};
using ProgramSlots = sdk::ProgramSlots<ProgramHooks, tg_program_s>;  // the table's program_* slots

// hwqueue.cpp: the SDK's host queue, told how this plugin finds its objects and runs one exec
struct QueueHooks {
  using Device = interp::Device;
  using Program = interp::Program;
  // Error messages read "interp hwqueue_exec: kernel k: INTERP runs one global dim and no local dims ..."
  static constexpr std::string_view plugin = "interp";
  static constexpr std::string_view device_label = "INTERP";
  static std::shared_ptr<Device> device_of(tg_device device) { return interp::device_of(device); }
  static std::shared_ptr<Program> program_of(tg_program program) { return ProgramSlots::of(program); }
  static void run(Device& device, const Program& program, const unsigned char* args, uint64_t count);
};
using QueueSlots = sdk::HostQueueSlots<tg_hwqueue_s>;  // the table's hwqueue_* slots

}  // namespace tg::interp

// Compiled where tg_renderer_s and tg_compiler_s are complete (renderer.cpp, compiler.cpp).
extern template struct tg::sdk::RendererSlots<tg::interp::RendererHooks>;
extern template struct tg::sdk::CompilerSlots<tg::interp::CompilerHooks>;

// The opaque handles, as this plugin defines them.
struct tg_device_s {
  std::shared_ptr<tg::interp::Device> device;
};
struct tg_program_s {
  std::shared_ptr<tg::interp::Program> program;
};
struct tg_hwqueue_s : tg::sdk::HostQueue<tg::interp::QueueHooks> {
  using HostQueue::HostQueue;
};
