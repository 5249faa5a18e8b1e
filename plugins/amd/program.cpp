// The AMD plugin's Program: a code object loaded with hipModuleLoadData, its kernel function, and the size of the
// packed argument blob its kernarg segment takes.
#include "amd_plugin.hpp"

#include <cstring>

namespace tg::amd {

using sdk::cat;
using sdk::Error;

Program::~Program() {
  if (module == nullptr) return;
  try {
    device->bind();  // a destructor cannot report a failure; unloading is best effort
  } catch (...) {}
  hip().hipModuleUnload(module);
}

std::shared_ptr<Program> ProgramHooks::load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                            sdk::Signature signature) {
  auto program = std::make_shared<Program>();
  program->device = device_of(device);
  program->kernel_name = kernel_name;
  program->args_size = signature.args_size();  // the kernarg segment is the packed blob
  if (size < 4 || std::memcmp(blob,
                              "\x7f"
                              "ELF",
                              4) != 0)
    throw Error(TG_ERR_INVALID_ARGUMENT,
                cat("the blob for kernel ", kernel_name, " is not an AMDGPU code object (ELF)"));
  program->device->bind();
  check_hip(hip().hipModuleLoadData(&program->module, blob), cat("hipModuleLoadData(", kernel_name, ")").c_str());
  check_hip(hip().hipModuleGetFunction(&program->function, program->module, kernel_name),
            cat("hipModuleGetFunction(", kernel_name, ")").c_str());
  return program;
}

}  // namespace tg::amd
