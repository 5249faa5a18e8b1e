// The CPU plugin's Compiler: hands the C source to libtg_cpu_clang.so (clang + LLVM, then the system linker;
// clang_compiler.cpp), opened beside this plugin on the first compile, and returns the shared object it makes as the
// blob.
#include <tg/sdk/companion_library.hpp>

#include <mutex>
#include <string>

#include "clang_compiler.h"
#include "cpu_plugin.hpp"

struct tg_compiler_s {
  std::shared_ptr<tg::cpu::Device> device;
};

namespace tg::cpu {

using sdk::cat;
using sdk::Error;

namespace {

struct ClangLibrary {
  decltype(&tg_cpu_clang_compile) compile = nullptr;
  decltype(&tg_cpu_clang_free) release = nullptr;
  std::string error;  // why it did not open
};

// Opened once, beside this plugin, at the first compile (tg/sdk/companion_library.hpp).
const ClangLibrary& clang_library() {
  static const ClangLibrary lib = [] {
    sdk::CompanionLibrary so(reinterpret_cast<const void*>(&clang_library), TG_CPU_CLANG_LIBRARY, "the CPU compiler");
    ClangLibrary l;
    l.compile = so.function<decltype(&tg_cpu_clang_compile)>("tg_cpu_clang_compile");
    l.release = so.function<decltype(&tg_cpu_clang_free)>("tg_cpu_clang_free");
    l.error = so.error();
    return l;
  }();
  return lib;
}

}  // namespace

// The compiler slots' hooks (tg/sdk/plugin_slots.hpp).
struct CompilerHooks {
  using Compiler = tg_compiler_s;
  static constexpr std::string_view plugin = "cpu";

  static std::unique_ptr<Compiler> create(tg_device device) {
    return std::unique_ptr<Compiler>(new Compiler{device_of(device)});
  }
  static sdk::Blob compile(Compiler& /*compiler*/, const char* source, const char* kernel_name) {
    const ClangLibrary& lib = clang_library();
    if (!lib.compile) throw Error(TG_ERR_UNAVAILABLE, lib.error);
    void* bytes = nullptr;
    size_t size = 0;
    char* message = nullptr;
    const int rc = lib.compile(source, kernel_name, &bytes, &size, &message);
    const std::string why = message ? message : "";
    lib.release(message);
    if (rc != TG_CPU_CLANG_OK) throw Error(rc == TG_CPU_CLANG_COMPILE ? TG_ERR_COMPILE : TG_ERR_INTERNAL, why);
    std::vector<char> copy(static_cast<char*>(bytes), static_cast<char*>(bytes) + size);
    lib.release(bytes);
    return sdk::Blob::copy_of(copy);
  }
};

}  // namespace tg::cpu

template struct tg::sdk::CompilerSlots<tg::cpu::CompilerHooks>;
