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
  } catch (...) {
  }
  hip().hipModuleUnload(module);
}

std::shared_ptr<Program> program_of(tg_program program) { return sdk::require(program, "program")->program; }

tg_status_t program_create(tg_device device, const void* blob, size_t size, const char* kernel_name,
                           const tg_kir_param* params, uint32_t nparams, tg_program* out_program) {
  return sdk::guard("amd program_create", [&] {
    sdk::require(out_program, "out_program");
    sdk::require(blob, "blob");
    sdk::require(kernel_name, "kernel_name");
    if (nparams != 0) sdk::require(params, "params");
    auto program = std::make_shared<Program>();
    program->device = device_of(device);
    program->kernel_name = kernel_name;
    for (uint32_t p = 0; p < nparams; ++p)
      if (params[p].kind > TG_PARAM_VAR || params[p].dtype >= TG_DTYPE_COUNT)
        throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel_name, ": parameter ", p, " has kind ",
                                                 params[p].kind, " and dtype ", params[p].dtype));
    std::vector<size_t> offsets(nparams);
    program->args_size = tg_param_layout(params, nparams, offsets.data());
    if (size < 4 || std::memcmp(blob, "\x7f" "ELF", 4) != 0)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("the blob for kernel ", kernel_name, " is not an AMDGPU code object (ELF)"));
    program->device->bind();
    check_hip(hip().hipModuleLoadData(&program->module, blob), cat("hipModuleLoadData(", kernel_name, ")").c_str());
    check_hip(hip().hipModuleGetFunction(&program->function, program->module, kernel_name),
              cat("hipModuleGetFunction(", kernel_name, ")").c_str());
    *out_program = new tg_program_s{std::move(program)};
  });
}

void program_destroy(tg_program program) {
  sdk::guard_void("amd program_destroy", [&] { delete program; });
}

}  // namespace tg::amd
