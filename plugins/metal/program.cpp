// The METAL plugin's Program: a compute pipeline state made from a Metal library needs the Metal runtime, so
// program_create says it is missing.
#include "metal_plugin.hpp"

namespace tg::metal {

tg_status_t ProgramSlots::create(tg_device /*device*/, const void* /*blob*/, size_t /*size*/, const char* kernel_name,
                                 const tg_kir_param* /*params*/, uint32_t /*nparams*/, tg_program* /*out_program*/) noexcept {
  return sdk::guard("metal program_create", [&] {
    throw_no_runtime(sdk::cat("cannot load kernel ", kernel_name ? kernel_name : "(unnamed)").c_str());
  });
}

void ProgramSlots::destroy(tg_program /*program*/) noexcept {}  // no program is ever made

}  // namespace tg::metal
