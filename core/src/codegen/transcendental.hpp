// Polynomial exp2, log2 and sin for renderers without them (float32 and float64), built from
// ADD/MUL/FDIV/CMPLT/WHERE/TRUNC/CAST/BITCAST/SHL/SHR/AND on the same float type and its same-size int.
#pragma once

#include <array>

#include "ir/uop.hpp"

namespace tg::codegen {

ir::UOpPtr xexp2(const ir::UOpPtr& x);
ir::UOpPtr xlog2(const ir::UOpPtr& x);
ir::UOpPtr xsin(const ir::UOpPtr& x);

// pi/2 as a sum of parts whose products with an integer q (|q| < 2^13 in float32) are exact: x - q*P1 - q*P2 - ...
// is x's remainder modulo pi/2 to about the last part's precision (Cody-Waite). xsin and Tensor::cos share them.
inline constexpr std::array<double, 5> kHalfPiParts32 = {0x1.92p+0, 0x1.fb4p-12, 0x1.444p-24, 0x1.68cp-39,
                                                         0x1.1a6264p-54};
inline constexpr std::array<double, 5> kHalfPiParts64 = {0x1.921fb4p+0, 0x1.4442dp-24, 0x1.846988p-48, 0x1.8cc518p-72,
                                                         -0x1.fc8f8cbb5bf6cp-97};

}  // namespace tg::codegen
