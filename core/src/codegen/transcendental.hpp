// Polynomial exp2, log2 and sin for renderers without them (float32 and float64), built from
// ADD/MUL/FDIV/CMPLT/WHERE/TRUNC/CAST/BITCAST/SHL/SHR/AND on the same float type and its same-size int.
#pragma once

#include "ir/uop.hpp"

namespace tg::codegen {

ir::UOpPtr xexp2(const ir::UOpPtr& x);
ir::UOpPtr xlog2(const ir::UOpPtr& x);
ir::UOpPtr xsin(const ir::UOpPtr& x);

}  // namespace tg::codegen
