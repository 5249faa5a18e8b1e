// The INTERP plugin's Program: reads the KIR back out of a blob, checks that it matches the signature the core
// launches it with (already checked and copied by the SDK's ProgramSlots), and decodes it once into the compact
// form the HWQueue runs.
#include "interp_plugin.hpp"

namespace tg::interp {

using sdk::cat;
using sdk::Error;

std::shared_ptr<Program> ProgramHooks::load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                            sdk::Signature signature) {
  KirCopy kernel = kir_from_blob(blob, size);
  if (kernel.name != kernel_name)
    throw Error(TG_ERR_INVALID_ARGUMENT, cat("the blob holds kernel ", kernel.name, ", not ", kernel_name));
  // The launch packs arguments by the caller's signature; the code reads them by the blob's. They must agree.
  if (signature.size() != kernel.params.size())
    throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel_name, " has ", kernel.params.size(),
                                             " parameters, the signature given has ", signature.size()));
  for (uint32_t p = 0; p < signature.size(); ++p) {
    const tg_kir_param& given = signature.params()[p];
    const tg_kir_param& mine = kernel.params[p];
    if (given.kind != mine.kind || given.dtype != mine.dtype)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("kernel ", kernel_name, ": parameter ", p, " is kind ", given.kind, " dtype ", given.dtype,
                      " in the signature, kind ", mine.kind, " dtype ", mine.dtype, " in the blob"));
    kernel.param_names[p] = given.name;
  }
  kernel.fix_names();
  auto program = std::make_shared<Program>();
  program->device = device_of(device);
  program->kernel_name = kernel_name;
  program->code = decode(kernel.view());
  program->args_size = signature.args_size();
  return program;
}

}  // namespace tg::interp
