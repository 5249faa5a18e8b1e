// Reduce lowering: every REDUCE becomes one accumulator, spelled in the statements a hand-written kernel uses
// (DEFINE_REG, STORE, END, AFTER), so the linearizer only writes loops, loads, stores and ALU ops:
//   acc = DEFINE_REG (one element of the REDUCE's dtype: w lanes for a vector REDUCE; its sources, the unrolled
//         ranges the value reads, give each written-out copy its own register)
//   STORE(acc, 0, identity)                                              before the loops (the linearizer: END's
//   carried inits) END(STORE(acc, 0, LOAD(AFTER(acc, init), 0) (op) value), loops...)  one step per iteration result =
//   LOAD(AFTER(acc, END), 0)
// The step is ir::reduce_combine for every op (MIN of floats -max(-acc, -v), of integers a select), then the FMA rules
// (fma.hpp).
#pragma once

#include "ir/pattern_matcher.hpp"
#include "ir/uop.hpp"
#include "tg/plugin_abi.h"

namespace tg::codegen {

// Every REDUCE of the graph as an accumulator (above), outer reductions first (their values vectorized first). Vector
// REDUCEs over the loops of the first one the statements reach (a register tile's rows, several outputs of one loop)
// share one END: one loop nest whose loads they share are loaded once per iteration.
ir::UOpPtr lower_reduces(const ir::UOpPtr& sink, const tg_renderer_caps& caps);

}  // namespace tg::codegen
