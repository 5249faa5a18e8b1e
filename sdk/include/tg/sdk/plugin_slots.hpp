// tg::sdk::DeviceSlots, RendererSlots and CompilerSlots: the device_*, renderer_* and compiler_* slots of a plugin
// table, with the null checks, guard()s and out-parameters written once. The plugin supplies only what differs, in a
// hooks struct per interface (like host_queue.hpp's QueueHooks), kept in the file of that interface:
//
//   struct DeviceHooks {                  // plugin.cpp, next to the table
//     using Device = my::Device;          // has `name`, `description`, `arch` (strings) and `memory_bytes`
//     static constexpr std::string_view plugin = "mydev";        // starts every message: "mydev device_open: ..."
//     static constexpr std::string_view device_label = "MYDEV";  // "no MYDEV device 1; there is one, MYDEV:0"
//     static constexpr bool is_host = true;                      // device_get_info's is_host
//     // (optional) how many devices there are; without it there is one, and device_open refuses any index but 0
//     static uint32_t count();
//     static std::shared_ptr<Device> open(uint32_t index);       // with count(): checks the index itself
//   };
//   struct RendererHooks {                // renderer.cpp
//     using Renderer = tg_renderer_s;     // has `std::string source`: the last render, returned borrowed
//     static constexpr std::string_view plugin = "mydev";
//     static constexpr std::string_view device_label = "MYDEV";  // "no renderer 'X' on MYDEV; it has C"
//     static constexpr std::string_view targets = "C";
//     static bool is_target(std::string_view upper);  // the target name upper-cased; "" when none was given
//     static std::unique_ptr<Renderer> create(tg_device device);
//     static tg_renderer_caps caps(const Renderer& renderer);
//     static std::string render(Renderer& renderer, const tg_kir_kernel& kernel);
//   };
//   struct CompilerHooks {                // compiler.cpp
//     using Compiler = tg_compiler_s;
//     static constexpr std::string_view plugin = "mydev";
//     static std::unique_ptr<Compiler> create(tg_device device);
//     static Blob compile(Compiler& compiler, const char* source, const char* kernel_name);  // kernel_name: maybe NULL
//   };
//
// The device handle is the plugin's `struct tg_device_s { std::shared_ptr<my::Device> device; };`. The renderer and
// compiler handles and hooks stay private to their files, so their slots are compiled there. The plugin's header
// says
//   struct RendererHooks;  using RendererSlots = tg::sdk::RendererSlots<RendererHooks>;
//   extern template struct tg::sdk::RendererSlots<my::RendererHooks>;   (and the same for the compiler)
// and renderer.cpp, below its hooks, says
//   template struct tg::sdk::RendererSlots<my::RendererHooks>;
// Then the table's rows read `.device_open = DeviceSlots::open`, `.renderer_render = RendererSlots::render`, ...
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/plugin.hpp>
#include <tg/sdk/program_signature.hpp>
#include <tg/sdk/status.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tg::sdk {

// A compiled program in malloc'ed memory, as compiler_compile hands it out (blob_free is std::free).
class Blob {
 public:
  static Blob allocate(size_t size) {
    Blob blob;
    blob.data_.reset(std::malloc(size));
    if (blob.data_ == nullptr) throw std::bad_alloc();
    blob.size_ = size;
    return blob;
  }
  static Blob copy_of(const std::vector<char>& bytes) {
    Blob blob = allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(blob.data(), bytes.data(), bytes.size());
    return blob;
  }

  void* data() const { return data_.get(); }
  size_t size() const { return size_; }
  void* release() { return data_.release(); }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
};

// The target name as renderer_create compares it: upper-cased, "" for NULL.
inline std::string upper_target(const char* target) {
  std::string t = target ? target : "";
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return t;
}

namespace plugin_slots_detail {

inline constexpr std::string_view kDeviceCount = "device_count", kDeviceOpen = "device_open",
                                  kDeviceClose = "device_close", kDeviceGetInfo = "device_get_info",
                                  kRendererCreate = "renderer_create", kRendererDestroy = "renderer_destroy",
                                  kRendererGetCaps = "renderer_get_caps", kRendererRender = "renderer_render",
                                  kCompilerCreate = "compiler_create", kCompilerDestroy = "compiler_destroy",
                                  kCompilerCompile = "compiler_compile", kProgramCreate = "program_create",
                                  kProgramDestroy = "program_destroy";

template <class Hooks>
concept HasCount = requires {
  { Hooks::count() } -> std::convertible_to<uint32_t>;
};

}  // namespace plugin_slots_detail

// The four device slots. `Handle` is the plugin's tg_device_s, which holds `std::shared_ptr<Device> device`.
template <class Hooks, class Handle = tg_device_s>
struct DeviceSlots {
  static_assert(std::is_same_v<Handle*, tg_device>, "Handle must be the plugin's tg_device_s");
  using Device = typename Hooks::Device;

  static tg_status_t count(uint32_t* out_count) noexcept {
    return guard(slot_where<Hooks::plugin, plugin_slots_detail::kDeviceCount>, [&] {
      require(out_count, "out_count");
      if constexpr (plugin_slots_detail::HasCount<Hooks>)
        *out_count = Hooks::count();
      else
        *out_count = 1;
    });
  }

  static tg_status_t open(uint32_t index, Handle** out_device) noexcept {
    return guard(slot_where<Hooks::plugin, plugin_slots_detail::kDeviceOpen>, [&] {
      require(out_device, "out_device");
      if constexpr (!plugin_slots_detail::HasCount<Hooks>) {
        if (index != 0)
          throw Error(TG_ERR_INVALID_ARGUMENT, cat("no ", Hooks::device_label, " device ", index, "; there is one, ",
                                                   Hooks::device_label, ":0"));
      }
      *out_device = new Handle{Hooks::open(index)};
    });
  }

  static void close(Handle* device) noexcept {
    guard_void(slot_where<Hooks::plugin, plugin_slots_detail::kDeviceClose>, [&] { delete device; });
  }

  static tg_status_t get_info(Handle* device, tg_device_info* out_info) noexcept {
    return guard(slot_where<Hooks::plugin, plugin_slots_detail::kDeviceGetInfo>, [&] {
      const std::shared_ptr<Device> dev = require(device, "device")->device;
      tg_device_info info{};
      info.struct_size = sizeof(info);
      info.name = dev->name.c_str();
      info.description = dev->description.c_str();
      info.arch = dev->arch.c_str();
      info.memory_bytes = dev->memory_bytes;
      info.is_host = Hooks::is_host ? 1 : 0;
      write_versioned(out_info, info, "out_info");
    });
  }
};

// The four renderer slots. Hooks may be incomplete where the table names them: the class mentions only ABI types,
// and the slots, defined below it, are compiled where `extern template` sends them (see the top of this file).
template <class Hooks>
struct RendererSlots {
  static tg_status_t create(tg_device device, const char* target, tg_renderer* out_renderer) noexcept;
  static void destroy(tg_renderer renderer) noexcept;
  static tg_status_t get_caps(tg_renderer renderer, tg_renderer_caps* out_caps) noexcept;
  static tg_status_t render(tg_renderer renderer, const tg_kir_kernel* kernel, const char** out_source) noexcept;
};

template <class Hooks>
tg_status_t RendererSlots<Hooks>::create(tg_device device, const char* target, tg_renderer* out_renderer) noexcept {
  static_assert(std::is_same_v<typename Hooks::Renderer*, tg_renderer>, "Renderer must be tg_renderer_s");
  return guard(slot_where<Hooks::plugin, plugin_slots_detail::kRendererCreate>, [&] {
    require(out_renderer, "out_renderer");
    std::unique_ptr<typename Hooks::Renderer> renderer = Hooks::create(device);
    if (!Hooks::is_target(upper_target(target)))
      throw Error(TG_ERR_UNSUPPORTED,
                  cat("no renderer '", target, "' on ", Hooks::device_label, "; it has ", Hooks::targets));
    *out_renderer = renderer.release();
  });
}

template <class Hooks>
void RendererSlots<Hooks>::destroy(tg_renderer renderer) noexcept {
  guard_void(slot_where<Hooks::plugin, plugin_slots_detail::kRendererDestroy>,
             [&] { delete static_cast<typename Hooks::Renderer*>(renderer); });
}

template <class Hooks>
tg_status_t RendererSlots<Hooks>::get_caps(tg_renderer renderer, tg_renderer_caps* out_caps) noexcept {
  return guard(slot_where<Hooks::plugin, plugin_slots_detail::kRendererGetCaps>, [&] {
    typename Hooks::Renderer* r = require(renderer, "renderer");
    write_versioned(out_caps, Hooks::caps(*r), "out_caps");
  });
}

template <class Hooks>
tg_status_t RendererSlots<Hooks>::render(tg_renderer renderer, const tg_kir_kernel* kernel,
                                         const char** out_source) noexcept {
  return guard(slot_where<Hooks::plugin, plugin_slots_detail::kRendererRender>, [&] {
    typename Hooks::Renderer* r = require(renderer, "renderer");
    require(kernel, "kernel");
    require(out_source, "out_source");
    r->source = Hooks::render(*r, *kernel);
    *out_source = r->source.c_str();
  });
}

// The compiler slots and blob_free. Defined below the class, like RendererSlots.
template <class Hooks>
struct CompilerSlots {
  static tg_status_t create(tg_device device, tg_compiler* out_compiler) noexcept;
  static void destroy(tg_compiler compiler) noexcept;
  static tg_status_t compile(tg_compiler compiler, const char* source, const char* kernel_name, void** out_blob,
                             size_t* out_size) noexcept;
  static void blob_free(void* blob) noexcept { std::free(blob); }
};

template <class Hooks>
tg_status_t CompilerSlots<Hooks>::create(tg_device device, tg_compiler* out_compiler) noexcept {
  static_assert(std::is_same_v<typename Hooks::Compiler*, tg_compiler>, "Compiler must be tg_compiler_s");
  return guard(slot_where<Hooks::plugin, plugin_slots_detail::kCompilerCreate>, [&] {
    require(out_compiler, "out_compiler");
    *out_compiler = Hooks::create(device).release();
  });
}

template <class Hooks>
void CompilerSlots<Hooks>::destroy(tg_compiler compiler) noexcept {
  guard_void(slot_where<Hooks::plugin, plugin_slots_detail::kCompilerDestroy>,
             [&] { delete static_cast<typename Hooks::Compiler*>(compiler); });
}

template <class Hooks>
tg_status_t CompilerSlots<Hooks>::compile(tg_compiler compiler, const char* source, const char* kernel_name,
                                          void** out_blob, size_t* out_size) noexcept {
  return guard(slot_where<Hooks::plugin, plugin_slots_detail::kCompilerCompile>, [&] {
    typename Hooks::Compiler* c = require(compiler, "compiler");
    require(source, "source");
    require(out_blob, "out_blob");
    require(out_size, "out_size");
    Blob blob = Hooks::compile(*c, source, kernel_name);
    *out_size = blob.size();
    *out_blob = blob.release();
  });
}

// The two program slots. The plugin's handle is `struct tg_program_s { std::shared_ptr<my::Program> program; };`
// and its hooks load a blob whose signature the slot has already checked and copied (tg/sdk/program_signature.hpp):
//   struct ProgramHooks {
//     using Program = my::Program;
//     static constexpr std::string_view plugin = "mydev";
//     static std::shared_ptr<Program> load(tg_device device, const void* blob, size_t size, const char* kernel_name,
//                                          Signature signature);
//   };
template <class Hooks, class Handle = tg_program_s>
struct ProgramSlots {
  static_assert(std::is_same_v<Handle*, tg_program>, "Handle must be the plugin's tg_program_s");
  using Program = typename Hooks::Program;

  static tg_status_t create(tg_device device, const void* blob, size_t size, const char* kernel_name,
                            const tg_kir_param* params, uint32_t nparams, Handle** out_program) noexcept {
    return guard(slot_where<Hooks::plugin, plugin_slots_detail::kProgramCreate>, [&] {
      require(out_program, "out_program");
      require(blob, "blob");
      Signature signature(kernel_name, params, nparams);
      *out_program = new Handle{Hooks::load(device, blob, size, kernel_name, std::move(signature))};
    });
  }
  static void destroy(Handle* program) noexcept {
    guard_void(slot_where<Hooks::plugin, plugin_slots_detail::kProgramDestroy>, [&] { delete program; });
  }
  // The program behind a handle; throws on NULL.
  static std::shared_ptr<Program> of(Handle* program) { return require(program, "program")->program; }
};

}  // namespace tg::sdk
