// The NV plugin's Compiler: CUDA C++ -> a CUBIN for one arch, with NVRTC loaded at run time. The arch is the
// device's (sm_90 on an H200) or, with no device, NV_ARCH (default sm_90), so kernels compile on machines
// without a GPU. A failed compile returns NVRTC's log.
#include "nv_plugin.hpp"

#include <cstdlib>
#include <cstring>

struct tg_compiler_s {
  std::shared_ptr<tg::nv::Device> device;  // NULL for a device-less compiler
  std::string arch;
};

namespace tg::nv {

using sdk::cat;
using sdk::Error;

namespace {

struct NvrtcProgramRef {
  nvrtcProgram program = nullptr;
  ~NvrtcProgramRef() {
    if (program != nullptr) nvrtc().nvrtcDestroyProgram(&program);
  }
};

void check_nvrtc(nvrtcResult r, const char* call) {
  if (r == 0) return;
  const char* name = nvrtc().nvrtcGetErrorString(r);
  throw Error(TG_ERR_INTERNAL, cat(call, " failed: ", name ? name : "unknown error", " (", r, ")"));
}

std::string program_log(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtc().nvrtcGetProgramLogSize(program, &size) != 0 || size == 0) return "(no log)";
  std::string log(size, '\0');
  if (nvrtc().nvrtcGetProgramLog(program, log.data()) != 0) return "(no log)";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

bool is_arch(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5) return false;
  for (size_t i = 3; i < arch.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(arch[i])) &&
        !(i + 1 == arch.size() && (arch[i] == 'a' || arch[i] == 'f')))
      return false;
  return true;
}

}  // namespace

// The compiler slots' hooks (tg/sdk/plugin_slots.hpp).
struct CompilerHooks {
  using Compiler = tg_compiler_s;
  static constexpr std::string_view plugin = "nv";
  static std::unique_ptr<Compiler> create(tg_device device);
  static sdk::Blob compile(Compiler& compiler, const char* source, const char* kernel_name);
};

std::unique_ptr<tg_compiler_s> CompilerHooks::create(tg_device device) {
  std::shared_ptr<Device> dev = device != nullptr ? device_of(device) : nullptr;
  std::string arch = dev ? dev->arch : default_arch();
  if (!is_arch(arch)) throw Error(TG_ERR_INVALID_ARGUMENT, cat("NV_ARCH=", arch, " is not an arch like sm_90"));
  nvrtc();  // a missing NVRTC is reported when the compiler is made, not at the first kernel
  return std::unique_ptr<tg_compiler_s>(new tg_compiler_s{std::move(dev), std::move(arch)});
}

// --fmad=false: a*b+c stays two roundings, so results do not depend on whether the core sent MULACC.
// Division and sqrt are IEEE by NVRTC's defaults (-prec-div=true, -prec-sqrt=true, no -use_fast_math).
sdk::Blob CompilerHooks::compile(tg_compiler_s& compiler, const char* source, const char* kernel_name) {
  const std::string name = kernel_name && *kernel_name ? kernel_name : "kernel";
  const NvrtcApi& api = nvrtc();
  NvrtcProgramRef program;
  check_nvrtc(api.nvrtcCreateProgram(&program.program, source, (name + ".cu").c_str(), 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  const std::string arch_option = "--gpu-architecture=" + compiler.arch;
  const char* options[] = {arch_option.c_str(), "--fmad=false", "--std=c++17", "-default-device"};
  const nvrtcResult r = api.nvrtcCompileProgram(program.program, 4, options);
  if (r != 0)
    throw Error(TG_ERR_COMPILE, cat("NVRTC cannot compile kernel ", name, " for ", compiler.arch, " (",
                                    api.nvrtcGetErrorString(r), "):\n", program_log(program.program)));
  size_t size = 0;
  check_nvrtc(api.nvrtcGetCUBINSize(program.program, &size), "nvrtcGetCUBINSize");
  if (size == 0) throw Error(TG_ERR_INTERNAL, cat("NVRTC returned an empty CUBIN for kernel ", name));
  sdk::Blob blob = sdk::Blob::allocate(size);
  check_nvrtc(api.nvrtcGetCUBIN(program.program, static_cast<char*>(blob.data())), "nvrtcGetCUBIN");
  return blob;
}

}  // namespace tg::nv

template struct tg::sdk::CompilerSlots<tg::nv::CompilerHooks>;
