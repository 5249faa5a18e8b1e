// The SKELETON plugin's Program. Fill in: blob -> a launchable kernel, keeping a copy of its signature
// (tg/sdk/program_signature.hpp checks and lays it out; the exec's argument blob follows that layout).
#include "skeleton.hpp"

namespace tg::skeleton {

tg_status_t ProgramSlots::create(tg_device, const void*, size_t, const char*, const tg_kir_param*, uint32_t,
                                 tg_program*) noexcept {
  return sdk::guard("skeleton program_create", [] { not_implemented("program_create (blob -> launchable kernel)"); });
}
void ProgramSlots::destroy(tg_program) noexcept {}  // nothing was created

}  // namespace tg::skeleton
