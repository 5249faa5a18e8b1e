// Rewrites of ops a renderer does not take whole into ops it does.
#pragma once

#include "ir/pattern_matcher.hpp"
#include "tg/plugin_abi.h"

namespace tg::codegen {

// Equivalent graphs for ops a renderer does not take whole, built from other ops (whose sources may still need
// decomposing), one named rule each: 16-bit floats computed in float32, SUB/NEG/RECIP/MULACC/FMA/int MAX spelled
// with other ops, DOT4/LUT16 from shifts, masks and selects, EXP2/LOG2/SIN as polynomials (transcendental.hpp),
// TILE_MMA as the loops it means. The Emitter asks it only for a node whose op the renderer's caps leave out.
const ir::PatternMatcher& pm_decompositions();
// The first rule's graph for u, or nullptr when tg knows none (a float MAX, SQRT, IDIV...).
ir::UOpPtr decompose(const ir::UOpPtr& u);
// The rules for one renderer: a node is rewritten only where the caps leave its op out (for its math dtype), which
// is what the pipeline's `decompose` step applies to the whole kernel graph.
ir::PatternMatcher pm_decompositions_for(const tg_renderer_caps& caps);

// A LOAD whose dtype is wider than its uint8 buffer's (CustomKernel::load_packed): that many bytes at the byte
// index, little-endian, at any alignment. (A vector LOAD of a buffer's own dtype is not packed.)
inline bool is_packed_load(const ir::UOp& u) {
  return u.op == ir::Op::LOAD && u.dtype.scalar != u.src[0]->dtype.scalar;
}
// The same value from byte loads, shifts and ORs, for renderers without packed loads of its dtype.
ir::UOpPtr packed_load_from_bytes(const ir::UOpPtr& load);

}  // namespace tg::codegen
