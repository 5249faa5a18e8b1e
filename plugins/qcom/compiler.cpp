// The QCOM plugin's Compiler: OpenCL C source -> the driver's program binary for the device
// (clBuildProgram, then clGetProgramInfo(CL_PROGRAM_BINARIES)); a failed build returns the driver's build log.
#include "qcom_plugin.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

struct tg_compiler_s {
  std::shared_ptr<tg::qcom::Device> device;
};

namespace tg::qcom {

using sdk::cat;
using sdk::Error;

namespace {

std::string build_log(const Device& device, cl_program program) {
  size_t size = 0;
  if (cl().clGetProgramBuildInfo(program, device.id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS)
    return "(no build log)";
  std::string log(size, '\0');
  if (cl().clGetProgramBuildInfo(program, device.id, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) != CL_SUCCESS)
    return "(no build log)";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log.empty() ? "(empty build log)" : log;
}

// Releases a cl_program however the compile ends.
struct ProgramRef {  // destroyed while build_mutex() is still held (declared after the lock)
  cl_program program = nullptr;
  ~ProgramRef() {
    if (program != nullptr) cl().clReleaseProgram(program);
  }
};

}  // namespace

// KIR's FDIV and SQRT are IEEE operations; OpenCL allows 2.5/3 ulp for float32 unless asked otherwise.
std::string build_options(const Device& device) {
  return device.correctly_rounded_sqrt ? "-cl-fp32-correctly-rounded-divide-sqrt" : "";
}

// The compiler slots' hooks (tg/sdk/plugin_slots.hpp).
struct CompilerHooks {
  using Compiler = tg_compiler_s;
  static constexpr std::string_view plugin = "qcom";
  static std::unique_ptr<Compiler> create(tg_device device);
  static sdk::Blob compile(Compiler& compiler, const char* source, const char* kernel_name);
};

std::unique_ptr<tg_compiler_s> CompilerHooks::create(tg_device device) {
  return std::unique_ptr<tg_compiler_s>(new tg_compiler_s{device_of(device)});
}

sdk::Blob CompilerHooks::compile(tg_compiler_s& compiler, const char* source, const char* kernel_name) {
  const Device& device = *compiler.device;
  const std::string name = kernel_name && *kernel_name ? kernel_name : "kernel";
  const ClApi& api = cl();
  std::lock_guard lock(build_mutex());
  cl_int err = CL_SUCCESS;
  // PoCL names a program's build directory in its shared kernel cache (~/.cache/pocl/kcache) by a hash of the
  // source: two processes building the same kernel at once raced there and one got a binary without its bitcode,
  // which aborts PoCL when loaded. A first line naming this process keeps concurrent builders apart.
  const std::string salted = cat("/* tg: built by process ", getpid(), " */\n", source);
  const char* text = salted.c_str();
  const size_t length = salted.size();
  ProgramRef program{api.clCreateProgramWithSource(device.context, 1, &text, &length, &err)};
  check_cl(err, "clCreateProgramWithSource");
  err = api.clBuildProgram(program.program, 1, &device.id, build_options(device).c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS)
    throw Error(err == CL_BUILD_PROGRAM_FAILURE ? TG_ERR_COMPILE : TG_ERR_INTERNAL,
                cat("OpenCL cannot compile kernel ", name, " (clBuildProgram failed: ", cl_error_name(err), "):\n",
                    build_log(device, program.program)));
  finish_queues_after_driver_state(/*program_load=*/false);
  // One device in the program, so one binary.
  size_t binary_size = 0;
  check_cl(api.clGetProgramInfo(program.program, CL_PROGRAM_BINARY_SIZES, sizeof binary_size, &binary_size, nullptr),
           "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)");
  if (binary_size == 0)
    throw Error(TG_ERR_INTERNAL, cat("the OpenCL driver returned an empty binary for kernel ", name));
  sdk::Blob blob = sdk::Blob::allocate(binary_size);
  auto* binary = static_cast<unsigned char*>(blob.data());
  check_cl(api.clGetProgramInfo(program.program, CL_PROGRAM_BINARIES, sizeof binary, &binary, nullptr),
           "clGetProgramInfo(CL_PROGRAM_BINARIES)");
  return blob;
}

}  // namespace tg::qcom

template struct tg::sdk::CompilerSlots<tg::qcom::CompilerHooks>;
