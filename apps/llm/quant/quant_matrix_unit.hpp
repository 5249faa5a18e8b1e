// Prefill products on the host's matrix unit (x86 AMX through CustomKernel::tile_mma): the weights decoded once per
// product to bfloat16 tiles, the activation rounded to bfloat16 tiles, and C = W . x^T in float32 over the whole
// row, 32 rows x 32 tokens a statement. The integer formats take it (no per-block scale work is left in the loop;
// on the int8 unit it would be: the float32 scales of each 32-value block need C stored and rescaled per block,
// which measured slower than bfloat16 here), as their int8 products round the activation to 8 bits a value
// anyway. The float formats keep float32 products: bfloat16 would drop F32's and F16's low bits (a synthetic F32
// model's logits moved by 1.2e-2 of their scale, against 1e-6 in float32).
#pragma once

#include "quant/quant.hpp"

namespace tg::llm {

// Tokens from which a product runs on the matrix unit, where the device has one (below, the int8 or float kernels).
inline constexpr int64_t kMatrixUnitTokens = 32;
// Whether qmatmul of w by T tokens on w's device runs on its matrix unit: an integer format, a bfloat16 unit,
// T >= kMatrixUnitTokens, rows and cols multiples of 32.
bool takes_matrix_unit(const QuantMatrix& w, int64_t T);
// y = x W^T on the matrix unit: x (T, cols) float32 -> (T, rows) float32. The activation's bfloat16 tiles are made
// once per ProductInput (q, k and v of one norm share them).
Tensor tile_matmul(const QuantMatrix& w, ProductInput& in);

}  // namespace tg::llm
