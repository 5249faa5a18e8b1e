// The NV plugin's Program: a CUBIN loaded with cuModuleLoadData, its kernel function, and a copy of the signature
// (tg/sdk/program_signature.hpp) whose offsets turn the packed argument blob into cuLaunchKernel's array of
// parameter pointers. The slots around it are the SDK's ProgramSlots.
#include "nv_plugin.hpp"

namespace tg::nv {

using sdk::cat;
using sdk::Error;

Program::~Program() {
  if (module == nullptr) return;
  cuda().cuCtxSetCurrent(device->context);  // a destructor cannot report a failure; unloading is best effort
  cuda().cuModuleUnload(module);
}

std::shared_ptr<Program> ProgramHooks::load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                            sdk::Signature signature) {
  auto program = std::make_shared<Program>();
  program->device = device_of(device);
  program->kernel_name = kernel_name;
  signature.refuse_images(kernel_name, "NV");
  program->args_size = signature.args_size();
  program->signature = std::move(signature);
  if (size == 0) throw Error(TG_ERR_INVALID_ARGUMENT, cat("empty blob for kernel ", kernel_name));
  program->device->bind();
  check_cu(cuda().cuModuleLoadData(&program->module, blob), cat("cuModuleLoadData(", kernel_name, ")").c_str());
  check_cu(cuda().cuModuleGetFunction(&program->function, program->module, kernel_name),
           cat("cuModuleGetFunction(", kernel_name, ")").c_str());
  return program;
}

}  // namespace tg::nv
