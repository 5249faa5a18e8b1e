// The METAL plugin's Compiler: the blob is the MSL source itself (Metal compiles it again when the program is
// made, on the device that runs it), but compile hands it to Metal first (newLibraryWithSource, MSL 3.1, fast math
// off), so a source Metal refuses is a compile error carrying Metal's diagnostics. A device-less compiler uses the
// system default device; without Metal (off macOS) there is no compiler, and compiler_create says why.
#include "metal_plugin.hpp"

#include <cstring>

struct tg_compiler_s {
  std::shared_ptr<tg::metal::Device> device;  // NULL for a device-less compiler
  tg::metal::id mtl_device = nullptr;         // the device's MTLDevice, or the system default
};

namespace tg::metal {

using sdk::cat;
using sdk::Error;

struct CompilerHooks {
  using Compiler = tg_compiler_s;
  static constexpr std::string_view plugin = "metal";
  static std::unique_ptr<Compiler> create(tg_device device);
  static sdk::Blob compile(Compiler& compiler, const char* source, const char* kernel_name);
};

std::unique_ptr<tg_compiler_s> CompilerHooks::create(tg_device device) {
  auto compiler = std::make_unique<tg_compiler_s>();
  if (device != nullptr) {
    compiler->device = device_of(device);
    compiler->mtl_device = compiler->device->device.get();
    return compiler;
  }
  objc();  // throws TG_ERR_UNAVAILABLE naming the missing library
  compiler->mtl_device = system_device();
  if (compiler->mtl_device == nullptr)
    throw Error(TG_ERR_UNAVAILABLE, "the Metal compiler needs a device: MTLCreateSystemDefaultDevice returned nil");
  return compiler;
}

sdk::Blob CompilerHooks::compile(tg_compiler_s& compiler, const char* source, const char* kernel_name) {
  const std::string name = kernel_name && *kernel_name ? kernel_name : "(unnamed)";
  const size_t size = std::strlen(source);
  if (size == 0) throw Error(TG_ERR_COMPILE, cat("empty MSL source for kernel ", name, ": it defines no kernel"));
  new_library(compiler.mtl_device, source, name);  // checked, then dropped: program_create builds its own
  sdk::Blob blob = sdk::Blob::allocate(size);
  std::memcpy(blob.data(), source, size);
  return blob;
}

}  // namespace tg::metal

template struct tg::sdk::CompilerSlots<tg::metal::CompilerHooks>;
