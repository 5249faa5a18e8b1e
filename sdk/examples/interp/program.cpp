// The INTERP plugin's Program: reads the KIR back out of a blob, checks that it matches the signature the core
// launches it with, and decodes it once into the compact form the HWQueue runs.
#include "interp_plugin.hpp"

namespace tg::interp {

using sdk::cat;
using sdk::Error;

std::shared_ptr<Program> program_of(tg_program program) { return sdk::require(program, "program")->program; }

tg_status_t program_create(tg_device device, const void* blob, size_t size, const char* kernel_name,
                           const tg_kir_param* params, uint32_t nparams, tg_program* out_program) {
  return sdk::guard("interp program_create", [&] {
    sdk::require(out_program, "out_program");
    sdk::require(blob, "blob");
    sdk::require(kernel_name, "kernel_name");
    if (nparams != 0) sdk::require(params, "params");
    KirCopy kernel = kir_from_blob(blob, size);
    if (kernel.name != kernel_name)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("the blob holds kernel ", kernel.name, ", not ", kernel_name));
    // The launch packs arguments by the caller's signature; the code reads them by the blob's. They must agree.
    if (nparams != kernel.params.size())
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel_name, " has ", kernel.params.size(),
                                               " parameters, the signature given has ", nparams));
    for (uint32_t p = 0; p < nparams; ++p) {
      const tg_kir_param& mine = kernel.params[p];
      if (params[p].kind != mine.kind || params[p].dtype != mine.dtype)
        throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel_name, ": parameter ", p, " is kind ", params[p].kind,
                                                 " dtype ", params[p].dtype, " in the signature, kind ", mine.kind,
                                                 " dtype ", mine.dtype, " in the blob"));
      if (params[p].name != nullptr) kernel.param_names[p] = params[p].name;
    }
    kernel.fix_names();
    auto program = std::make_shared<Program>();
    program->device = device_of(device);
    program->kernel_name = kernel_name;
    program->code = decode(kernel.view());
    std::vector<size_t> offsets(nparams);
    program->args_size = tg_param_layout(kernel.params.data(), nparams, offsets.data());
    *out_program = new tg_program_s{std::move(program)};
  });
}

void program_destroy(tg_program program) {
  sdk::guard_void("interp program_destroy", [&] { delete program; });
}

}  // namespace tg::interp
