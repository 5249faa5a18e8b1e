// The QCOM plugin's Program: a compiled binary loaded with clCreateProgramWithBinary and built for the device,
// its one kernel, and a copy of the signature that says how to turn the packed argument blob into
// clSetKernelArg calls.
#include "qcom_plugin.hpp"

namespace tg::qcom {

using sdk::cat;
using sdk::Error;

Program::~Program() {
  if (process_exiting()) return;
  std::lock_guard lock(build_mutex());
  if (kernel != nullptr) cl().clReleaseKernel(kernel);
  if (program != nullptr) cl().clReleaseProgram(program);
}

std::shared_ptr<Program> ProgramHooks::load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                            sdk::Signature signature) {
  auto program = std::make_shared<Program>();
  program->device = device_of(device);
  program->kernel_name = kernel_name;
  program->args_size = signature.args_size();
  program->signature = std::move(signature);

  const ClApi& api = cl();
  const Device& dev = *program->device;
  std::lock_guard lock(build_mutex());
  const auto* binary = static_cast<const unsigned char*>(blob);
  cl_int binary_status = CL_SUCCESS, err = CL_SUCCESS;
  program->program = api.clCreateProgramWithBinary(dev.context, 1, &dev.id, &size, &binary, &binary_status, &err);
  if (err == CL_INVALID_BINARY || binary_status == CL_INVALID_BINARY)
    throw Error(TG_ERR_INVALID_ARGUMENT,
                cat("the blob for kernel ", kernel_name, " is not a program binary for ", dev.arch));
  check_cl(err, "clCreateProgramWithBinary");
  check_cl(api.clBuildProgram(program->program, 1, &dev.id, build_options(dev).c_str(), nullptr, nullptr),
           cat("clBuildProgram (from binary) of kernel ", kernel_name).c_str());
  finish_queues_after_driver_state(/*program_load=*/true);
  program->kernel = api.clCreateKernel(program->program, kernel_name, &err);
  check_cl(err, cat("clCreateKernel(", kernel_name, ")").c_str());
  return program;
}

}  // namespace tg::qcom
