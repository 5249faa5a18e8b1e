// The CPU plugin's Program: the blob is a shared object (libtg_cpu_clang.so makes it), loaded from a private copy
// (tg/sdk/shared_object.hpp), so equal kernel names never clash and destroying the program unmaps its code. The
// dynamic loader resolves libc/libm (memset, exp2f, ...) from this process.
#include "cpu_plugin.hpp"

namespace tg::cpu {

std::shared_ptr<Program> ProgramHooks::load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                            sdk::Signature signature) {
  auto program = std::make_shared<Program>();
  program->device = device_of(device);
  program->kernel_name = kernel_name;
  program->args_size = signature.args_size();  // the exec blob's size is checked against it
  program->signature = std::move(signature);
  program->code = std::make_unique<sdk::SharedObject>(blob, size, "tg_cpu", program->kernel_name);
  program->fn = program->code->function<KernelFn>(kernel_name);
  return program;
}

}  // namespace tg::cpu
