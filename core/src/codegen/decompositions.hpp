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

// A LOAD whose dtype is wider than its uint8 buffer's (CustomKernel::load_packed): that many bytes at the byte
// index, little-endian, at any alignment.
inline bool is_packed_load(const ir::UOp& u) { return u.op == ir::Op::LOAD && u.dtype != u.src[0]->dtype; }
// The same value from byte loads, shifts and ORs, for renderers without packed loads of its dtype.
ir::UOpPtr packed_load_from_bytes(const ir::UOpPtr& load);

}  // namespace tg::codegen
