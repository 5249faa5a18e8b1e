// The HOSTC plugin's Program: the blob is a shared object; the SDK loads it from a private copy.
#include "hostc_plugin.hpp"

namespace tg::hostc {

std::shared_ptr<Program> ProgramHooks::load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                            sdk::Signature signature) {
  auto program = std::make_shared<Program>();
  program->device = device_of(device);
  program->kernel_name = kernel_name;
  program->args_size = signature.args_size();
  program->signature = std::move(signature);
  program->code = std::make_unique<sdk::SharedObject>(blob, size, "tg_hostc", program->kernel_name);
  program->fn = program->code->function<KernelFn>(kernel_name);
  return program;
}

}  // namespace tg::hostc
