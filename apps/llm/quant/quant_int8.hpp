// Products on byte dot products, as llama.cpp runs its integer formats: the activation is quantized per 32 values
// to int8 (Q8_0's rounding), each weight sub-block is read as bytes (ByteForm: unsigned as decoded, or signed as
// stored or decoded once per prefill product), and 4 bytes x 4 bytes accumulate in one DOT4 (vpdpbusd on x86 with
// VNNI; shifts and multiplies elsewhere, from the same kernel).
#pragma once

#include <optional>

#include "quant/quant.hpp"
#include "tg/custom_kernel.hpp"

namespace tg::llm {

// x quantized per 32 values: value i of block b is q[i] * d[b], |q| <= 127, with llama.cpp's quantize_row_q8_0
// arithmetic in float32 (d = max|x| / 127, q = roundf(x * (1 / d)), 0 for an all-zero block).
// With group 1 the layout is token-major; with group G > 1 (the tiled product) G tokens lie side by side, so a
// vector of G lanes reads word j of block b of G tokens in one load. Biased (grouped only): the bytes are q + 128,
// unsigned, for a product whose weights are the signed operand (ByteForm::signed_word).
struct Int8Activation {
  Tensor words;  // (T, cols / 4) int32: 4 consecutive q as bytes, the first in the low byte;
                 // group G: (T / G, cols / 32, 8, G)
  Tensor scale;  // (T, cols / 32) float32: d; group G: (T / G, cols / 32, G)
  // (T, cols / 32, 2), group G: (T / G, cols / 32, 2, G) int32: the sums of q (not q + 128) over each half-block
  std::optional<Tensor> sums;
  int64_t group = 1;
  bool biased = false;
  // group 1: (T, cols / 32) float32, d x the sum of each block's q (Q8_K's bsums, scaled): what a format's
  // minimum multiplies, once per block instead of once per lane
  std::optional<Tensor> block_sums;
};
// x: (T, cols) float32, cols a multiple of 32, T of group
Int8Activation quantize_int8(const Tensor& x, int64_t group = 1, bool biased = false);
// roundf(v) for a float32 expression v with |v| < 2^31, as int32 (shared with the q8_0 KV cache's writer)
KExpr round_half_away(const KExpr& v);
// max |x| over a REDUCE range of a float32 expression x (the q8 scale's numerator): the sign bit cleared and the bits
// compared as int32, which orders non-negative floats as the floats; exact, and one integer max per lane where a
// float max must keep NaN semantics (a helper call per lane on the CPU): quantize_int8 of 512 x 1024 values 0.86 ->
// 0.56 ms, of 512 x 3072 2.4 -> 1.8 ms
KExpr abs_max(CustomKernel& k, const KExpr& x, const KExpr& range);

// Whether w's format has a byte form (the integer formats, the IQ4 codebooks through a byte table lookup; not the
// floats).
bool has_int8_product(const QuantMatrix& w);
// y = x W^T with x quantized by quantize_int8 (once per ProductInput): (T, rows) float32. Below kTileTokens tokens
// (decode) each weight word is decoded once for all T tokens and the lanes run along the block; from there on
// (prefill) the lanes run along kTileTokens tokens and each row's words are broadcast to them (the weights decoded
// to signed bytes once per product first, for every byte format but Q8_0, stored signed, and Q6_K).
inline constexpr int64_t kTileTokens = 32;
Tensor int8_matmul(const QuantMatrix& w, ProductInput& in);
// The stacked experts' product of qmatmul_experts on byte dot products: the activation quantized once (shared by
// every expert and slot, and with the other products of `in`), each (token, slot) pair's words decoded from its
// expert's rows only.
struct Routed {
  int64_t experts, k;
  bool shared;  // every slot of a token reads the token's activation row (gate, up), else one row per pair (down)
  // the k slots' products summed by their routing weights into one row per token (down's epilogue): a token's work
  // item runs its slots' rows as one long row, folded once
  bool summed = false;
};
Tensor int8_matmul_experts(const QuantMatrix& w, const Routed& routed, ProductInput& in, const Tensor& ids);
// The summed form: x (T * k, cols) one row per pair, weights (T, k) -> (T, rows), sum over s of weights[t, s] x
// (expert ids[t, s]'s rows . x[t * k + s]).
Tensor int8_matmul_experts_summed(const QuantMatrix& w, int64_t experts, ProductInput& in, const Tensor& ids,
                                  const Tensor& weights);
// qmatmul_grouped on byte dot products: the tiled product, each token group reading its expert's rows.
struct GroupedExperts {
  int64_t experts;
  Tensor ids;  // (T / G,) int32
};
Tensor int8_matmul_grouped(const QuantMatrix& w, int64_t experts, ProductInput& in, const Tensor& ids);
// argmax over the rows of x W^T, (T,) int32, the first row on ties; NaN is never chosen. Below kTileTokens tokens
// of an integer format the logits are never stored: each block of rows keeps its best (the seed's q6_argmax);
// otherwise the product's argmax.
Tensor int8_argmax(const QuantMatrix& w, ProductInput& in);

}  // namespace tg::llm
