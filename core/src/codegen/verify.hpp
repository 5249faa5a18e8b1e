// verify_lowered: the ABI's KIR rules (tg/sdk/verify_kir.hpp) checked on what lowering produced, so a lowering bug
// is named at its source rather than by a renderer. The runtime calls it in debug and sanitizer builds, or with
// TG_CHECK_IR=1 (runtime/options.hpp).
#pragma once

#include "codegen/kir.hpp"

namespace tg::codegen {

// Throws tg::Error naming the kernel, the instruction and the broken rule.
void verify_lowered(const KirProgram& kir);

}  // namespace tg::codegen
