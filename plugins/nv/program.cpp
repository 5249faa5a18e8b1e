// The NV plugin's Program: a CUBIN loaded with cuModuleLoadData, its kernel function, and the parameter offsets
// that turn the packed argument blob into cuLaunchKernel's array of parameter pointers.
#include "nv_plugin.hpp"

namespace tg::nv {

using sdk::cat;
using sdk::Error;

Program::~Program() {
  if (module == nullptr) return;
  cuda().cuCtxSetCurrent(device->context);  // a destructor cannot report a failure; unloading is best effort
  cuda().cuModuleUnload(module);
}

std::shared_ptr<Program> program_of(tg_program program) { return sdk::require(program, "program")->program; }

tg_status_t program_create(tg_device device, const void* blob, size_t size, const char* kernel_name,
                           const tg_kir_param* params, uint32_t nparams, tg_program* out_program) {
  return sdk::guard("nv program_create", [&] {
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
    program->offsets.resize(nparams);
    program->args_size = tg_param_layout(params, nparams, program->offsets.data());
    if (size == 0) throw Error(TG_ERR_INVALID_ARGUMENT, cat("empty blob for kernel ", kernel_name));
    program->device->bind();
    check_cu(cuda().cuModuleLoadData(&program->module, blob), cat("cuModuleLoadData(", kernel_name, ")").c_str());
    check_cu(cuda().cuModuleGetFunction(&program->function, program->module, kernel_name),
             cat("cuModuleGetFunction(", kernel_name, ")").c_str());
    *out_program = new tg_program_s{std::move(program)};
  });
}

void program_destroy(tg_program program) {
  sdk::guard_void("nv program_destroy", [&] { delete program; });
}

}  // namespace tg::nv
