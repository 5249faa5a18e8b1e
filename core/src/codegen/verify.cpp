// The core's use of the shared KIR verifier: checks every lowered program in debug and sanitizer builds.
#include "codegen/verify.hpp"

#include "ir/spec.hpp"
#include "tg/error.hpp"
#include "tg/sdk/verify_kir.hpp"

namespace tg::codegen {

bool kir_checks_enabled() { return ir::ir_checks_enabled(); }

void verify_lowered(const KirProgram& kir) {
  if (!kir_checks_enabled()) return;
  const tg_kir_kernel view = kir.view();
  if (auto broken = sdk::verify_kir(&view)) throw Error("tg: lowering produced malformed KIR (a bug in tg): " + *broken);
}

}  // namespace tg::codegen
