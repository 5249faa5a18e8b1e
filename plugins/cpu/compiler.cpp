// The CPU plugin's Compiler: hands the C source to libtg_cpu_clang.so (clang + LLVM, then the system linker; clang_compiler.cpp),
// opened beside this plugin on the first compile, and returns the shared object it makes as the blob.
#include <dlfcn.h>

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

// Opened once, from the directory this plugin was loaded from; never closed (LLVM does not unload cleanly).
const ClangLibrary& clang_library() {
  static const ClangLibrary lib = [] {
    ClangLibrary l;
    Dl_info info{};
    std::string dir = ".";
    if (dladdr(reinterpret_cast<void*>(&clang_library), &info) && info.dli_fname) {
      dir = info.dli_fname;
      dir = dir.substr(0, dir.find_last_of('/') == std::string::npos ? 0 : dir.find_last_of('/'));
    }
    const std::string path = dir + "/" TG_CPU_CLANG_LIBRARY;
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      l.error = cat("cannot open the CPU compiler ", path, ": ", e ? e : "unknown error");
      return l;
    }
    l.compile = reinterpret_cast<decltype(&tg_cpu_clang_compile)>(dlsym(h, "tg_cpu_clang_compile"));
    l.release = reinterpret_cast<decltype(&tg_cpu_clang_free)>(dlsym(h, "tg_cpu_clang_free"));
    if (!l.compile || !l.release) l.error = cat(path, " does not export tg_cpu_clang_compile and tg_cpu_clang_free");
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
