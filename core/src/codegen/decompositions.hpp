// Rewrites of ops a renderer does not take whole into ops it does.
#pragma once

#include <functional>

#include "ir/pattern_matcher.hpp"

namespace tg::codegen {

using SupportsFn = std::function<bool(ir::Op, DType)>;

// An equivalent graph for u built from ops `supports` accepts (sources may still need decomposing), or
// nullptr when tg knows none: 16-bit floats computed in float32, SUB/RECIP/MULACC/int MAX spelled with other
// ops, EXP2/LOG2/SIN as polynomials (see transcendental.hpp).
ir::UOpPtr decompose(const ir::UOpPtr& u, const SupportsFn& supports);

}  // namespace tg::codegen
