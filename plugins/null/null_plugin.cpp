// The NULL plugin: NULL:0 .. NULL:15, devices on which everything but the kernels themselves happens. Kernels are
// lowered and rendered as C11 (the SDK's preset), "compiled" into their source text and launched as no-ops;
// buffers are host memory, so copies to and from NULL move real bytes while kernel outputs stay as allocated.
// Tests use it to count what a graph costs (kernels, copies, collectives) without running it.
#include <tg/plugin_abi.h>
#include <tg/sdk/c11_renderer.hpp>
#include <tg/sdk/host_allocator.hpp>
#include <tg/sdk/host_machine.hpp>
#include <tg/sdk/host_queue.hpp>
#include <tg/sdk/plugin.hpp>
#include <tg/sdk/plugin_slots.hpp>
#include <tg/sdk/plugin_table.hpp>
#include <tg/sdk/program_signature.hpp>
#include <tg/sdk/status.hpp>

#include <cstring>
#include <memory>
#include <string>

struct tg_program_s;

namespace tg::null {

constexpr uint32_t kInstances = 16;

struct Device {
  std::string name = "NULL";
  std::string description = "schedules and renders, never runs a kernel";
  std::string arch = "null";
  uint64_t memory_bytes = uint64_t{1} << 40;  // nothing is computed, so nothing bounds a plan but the host's memory
};

struct Program {
  std::string kernel_name;
  sdk::Signature signature;
  size_t args_size = 0;
};

}  // namespace tg::null

struct tg_device_s {
  std::shared_ptr<tg::null::Device> device;
};
struct tg_program_s {
  std::shared_ptr<tg::null::Program> program;
};
struct tg_renderer_s {
  tg::sdk::C11Renderer renderer;
  std::string source;
};
struct tg_compiler_s {};

namespace tg::null {

std::shared_ptr<Device> device_of(tg_device device) { return sdk::require(device, "device")->device; }

struct DeviceHooks {
  using Device = null::Device;
  static constexpr std::string_view plugin = "null";
  static constexpr std::string_view device_label = "NULL";
  static constexpr bool is_host = true;
  static uint32_t count() { return kInstances; }
  static std::shared_ptr<Device> open(uint32_t index) {
    if (index >= kInstances)
      throw sdk::Error(TG_ERR_INVALID_ARGUMENT, sdk::cat("no NULL device ", index, "; there are ", kInstances));
    return std::make_shared<Device>();
  }
};

struct RendererHooks {
  using Renderer = tg_renderer_s;
  static constexpr std::string_view plugin = "null";
  static constexpr std::string_view device_label = "NULL";
  static constexpr std::string_view targets = "C";
  static bool is_target(std::string_view upper) { return upper.empty() || upper == "C"; }
  static std::unique_ptr<Renderer> create(tg_device) { return std::make_unique<Renderer>(); }
  static tg_renderer_caps caps(const Renderer&) {
    tg_renderer_caps caps = sdk::C11Renderer::preset_caps();
    sdk::describe_host_machine(caps, false);
    return caps;
  }
  static std::string render(Renderer& r, const tg_kir_kernel& kernel) { return r.renderer.render_kernel(kernel); }
};

// The "binary" is the source: rendering is the last step that can fail, so it is the one worth checking.
struct CompilerHooks {
  using Compiler = tg_compiler_s;
  static constexpr std::string_view plugin = "null";
  static std::unique_ptr<Compiler> create(tg_device) { return std::make_unique<Compiler>(); }
  static sdk::Blob compile(Compiler&, const char* source, const char*) {
    return sdk::Blob::copy_of(std::vector<char>(source, source + std::strlen(source)));
  }
};

struct AllocatorHooks {
  using Device = null::Device;
  static constexpr std::string_view plugin = "null";
  static std::shared_ptr<Device> device_of(tg_device device) { return null::device_of(device); }
};

struct ProgramHooks {
  using Program = null::Program;
  static constexpr std::string_view plugin = "null";
  static std::shared_ptr<Program> load(tg_device, const void*, size_t, const char* kernel_name,
                                       sdk::Signature signature) {
    auto program = std::make_shared<Program>();
    program->kernel_name = kernel_name ? kernel_name : "kernel";
    program->args_size = signature.args_size();
    program->signature = std::move(signature);
    return program;
  }
};
using ProgramSlots = sdk::ProgramSlots<ProgramHooks, tg_program_s>;

struct QueueHooks {
  using Device = null::Device;
  using Program = null::Program;
  static constexpr std::string_view plugin = "null";
  static constexpr std::string_view device_label = "NULL";
  static std::shared_ptr<Device> device_of(tg_device device) { return null::device_of(device); }
  static std::shared_ptr<Program> program_of(tg_program program) { return ProgramSlots::of(program); }
  static void run(Device&, const Program&, const unsigned char*, uint64_t) {}  // never runs
};

}  // namespace tg::null

struct tg_hwqueue_s : tg::sdk::HostQueue<tg::null::QueueHooks> {
  using HostQueue::HostQueue;
};

namespace tg::null {

const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api =
      sdk::plugin_table<sdk::DeviceSlots<DeviceHooks>, sdk::RendererSlots<RendererHooks>,
                        sdk::CompilerSlots<CompilerHooks>, sdk::HostAllocatorSlots<AllocatorHooks>, ProgramSlots,
                        sdk::HostQueueSlots<tg_hwqueue_s>>("null", "NULL");
  return api;
}

}  // namespace tg::null

TG_SDK_PLUGIN_ENTRY(tg::null::plugin_api());
