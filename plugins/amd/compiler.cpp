// The AMD plugin's Compiler: hands the HIP C++ source to libtg_amd_clang.so (clang + LLVM's AMDGPU backend, then
// ld.lld; amdgpu_compiler.cpp), opened beside this plugin on the first compile, and returns the code object it makes
// as the blob. The arch is the device's or, with no device, AMD_ARCH (default gfx1100), so kernels compile on
// machines without a GPU or ROCm. A failed compile returns clang's (or the linker's) diagnostics.
#include "amd_plugin.hpp"
#include "amdgpu_compiler.h"

#include <tg/sdk/companion_library.hpp>

#include <cctype>
#include <string>
#include <vector>

struct tg_compiler_s {
  std::shared_ptr<tg::amd::Device> device;  // NULL for a device-less compiler
  std::string arch;
};

namespace tg::amd {

using sdk::cat;
using sdk::Error;

namespace {

struct ClangLibrary {
  decltype(&tg_amd_clang_compile) compile = nullptr;
  decltype(&tg_amd_clang_free) release = nullptr;
  std::string error;  // why it did not open
};

// Opened once, beside this plugin, at the first compile (tg/sdk/companion_library.hpp).
const ClangLibrary& clang_library() {
  static const ClangLibrary lib = [] {
    sdk::CompanionLibrary so(reinterpret_cast<const void*>(&clang_library), TG_AMD_CLANG_LIBRARY, "the AMD compiler");
    ClangLibrary l;
    l.compile = so.function<decltype(&tg_amd_clang_compile)>("tg_amd_clang_compile");
    l.release = so.function<decltype(&tg_amd_clang_free)>("tg_amd_clang_free");
    l.error = so.error();
    return l;
  }();
  return lib;
}

// gfx and at least three hex digits: gfx942, gfx1100, gfx90a.
bool is_arch(const std::string& arch) {
  if (arch.rfind("gfx", 0) != 0 || arch.size() < 6) return false;
  for (size_t i = 3; i < arch.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(arch[i]))) return false;
  return true;
}

}  // namespace

// The compiler slots' hooks (tg/sdk/plugin_slots.hpp).
struct CompilerHooks {
  using Compiler = tg_compiler_s;
  static constexpr std::string_view plugin = "amd";
  static std::unique_ptr<Compiler> create(tg_device device);
  static sdk::Blob compile(Compiler& compiler, const char* source, const char* kernel_name);
};

std::unique_ptr<tg_compiler_s> CompilerHooks::create(tg_device device) {
  std::shared_ptr<Device> dev = device != nullptr ? device_of(device) : nullptr;
  std::string arch = dev ? dev->arch : base_arch(default_arch());
  if (!is_arch(arch))
    throw Error(TG_ERR_INVALID_ARGUMENT, cat("AMD_ARCH=", arch, " is not an AMDGPU arch like gfx1100 or gfx942"));
  return std::unique_ptr<tg_compiler_s>(new tg_compiler_s{std::move(dev), std::move(arch)});
}

sdk::Blob CompilerHooks::compile(tg_compiler_s& compiler, const char* source, const char* kernel_name) {
  const ClangLibrary& lib = clang_library();
  if (!lib.compile) throw Error(TG_ERR_UNAVAILABLE, lib.error);
  void* bytes = nullptr;
  size_t size = 0;
  char* message = nullptr;
  const int rc = lib.compile(source, kernel_name, compiler.arch.c_str(), &bytes, &size, &message);
  const std::string why = message ? message : "";
  lib.release(message);
  if (rc != TG_AMD_CLANG_OK) throw Error(rc == TG_AMD_CLANG_COMPILE ? TG_ERR_COMPILE : TG_ERR_INTERNAL, why);
  std::vector<char> copy(static_cast<char*>(bytes), static_cast<char*>(bytes) + size);
  lib.release(bytes);
  return sdk::Blob::copy_of(copy);
}

}  // namespace tg::amd

template struct tg::sdk::CompilerSlots<tg::amd::CompilerHooks>;
