// verify_lowered: the ABI's KIR rules (tg/sdk/verify_kir.hpp) checked on what lowering produced, in debug and
// sanitizer builds (or with TG_CHECK_KIR=1), so a lowering bug is named at its source rather than by a renderer.
#pragma once

#include "codegen/kir.hpp"

namespace tg::codegen {

// Whether verify_lowered checks anything in this build and environment.
bool kir_checks_enabled();

// Throws tg::Error naming the kernel, the instruction and the broken rule.
void verify_lowered(const KirProgram& kir);

}  // namespace tg::codegen
