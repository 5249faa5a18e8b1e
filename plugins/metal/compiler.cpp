// The METAL plugin's Compiler: MSL -> a Metal library needs the Metal compiler (MTLDevice newLibraryWithSource with
// MTLLanguageVersion3_1, for bfloat, and fast math off so that division and NaN follow IEEE as KIR says), which
// exists only on macOS. Here compiler_create says so; CI checks the rendered MSL with clang++ and a shim header
// instead (tests/unit/plugin/metal).
#include "metal_plugin.hpp"

struct tg_compiler_s {};

namespace tg::metal {

struct CompilerHooks {
  using Compiler = tg_compiler_s;
  static constexpr std::string_view plugin = "metal";
  static std::unique_ptr<Compiler> create(tg_device /*device*/) { throw_no_runtime("the Metal compiler"); }
  static sdk::Blob compile(Compiler& /*compiler*/, const char* /*source*/, const char* kernel_name) {
    throw_no_runtime(sdk::cat("cannot compile kernel ", kernel_name ? kernel_name : "(unnamed)").c_str());
  }
};

}  // namespace tg::metal

template struct tg::sdk::CompilerSlots<tg::metal::CompilerHooks>;
