// FMA by caps: an accumulator's step acc + x * y (a register's value plus a product) is one FMA where the renderer
// takes FMA for its dtype: one rounding, and a matmul's inner loop issues one instruction per multiply-add. Other sums
// of products keep both roundings (elementwise results stay those of the ops as written). lower_reduces applies the
// rules to each accumulator's step (reduce_lowering.hpp).
#pragma once

#include "ir/pattern_matcher.hpp"
#include "tg/plugin_abi.h"

namespace tg::codegen {

ir::PatternMatcher pm_fma_for(const tg_renderer_caps& caps);

}  // namespace tg::codegen
