// The SKELETON plugin's Compiler. Fill in: source -> a blob the Program can load (machine code, an object file,
// or anything your runtime takes). compiler_compile is called from several threads at once: keep per-call state
// on the stack. tg/sdk/plugin_slots.hpp's CompilerSlots writes these slots from a hooks struct.
#include "skeleton.hpp"

#include <cstdlib>

namespace tg::skeleton {

tg_status_t CompilerSlots::create(tg_device, tg_compiler*) noexcept {
  return sdk::guard("skeleton compiler_create", [] { not_implemented("compiler_create (a compiler for the device)"); });
}
void CompilerSlots::destroy(tg_compiler) noexcept {}  // nothing was created
tg_status_t CompilerSlots::compile(tg_compiler, const char*, const char*, void**, size_t*) noexcept {
  return sdk::guard("skeleton compiler_compile", [] { not_implemented("compiler_compile (source -> blob)"); });
}
void CompilerSlots::blob_free(void* blob) noexcept { std::free(blob); }  // blobs come from malloc

}  // namespace tg::skeleton
