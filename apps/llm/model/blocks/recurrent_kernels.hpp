// The custom kernels of recurrent layers, over B sequences of Tq tokens each (a prefill chunk: B = 1; a decode
// batch: Tq = 1). Each sequence's state lives in its slot of a realized state tensor, which the kernel reads
// (as zero at position 0) and writes back in place. `seqs` is SequenceState::sequence_table: (B, 3) int32 first
// cache row, position and real tokens (those past them pad the chunk and leave the state as it is); the slot is
// the row / rows_per_slot. States are float32 or float16 (computed in
// float32).
#pragma once

#include <cstdint>

#include "tg/tensor.hpp"

namespace tg::llm {

// Causal depthwise convolution over time: x (B * Tq, C) float32, w (C, K) float32 (tap K-1 multiplies the current
// token) -> (B * Tq, C), the K-1 rows before each sequence read from `state` (slots * (K-1), C), which then holds
// the sequence's last K-1 real rows of x.
Tensor causal_conv(const Tensor& x, const Tensor& w, const Tensor& state, const Tensor& seqs, int64_t rows_per_slot);

// The gated delta rule, per value head j of nv (reading key head j mod nk) and per token in order, with S_j a
// (dv x dk) matrix: S = alpha S; delta = beta (v - S k); S += delta k^T; o = S q. q, k (B * Tq, nk, dk), v
// (B * Tq, nv, dv), alpha and beta (B * Tq, nv), all float32; state (slots * nv * dv, dk), each head's S stored
// transposed (S^T, dk x dv) -> o (B * Tq, nv, dv). Rows of S are independent: one work item per (sequence, head,
// block of 16 rows), the rows in lanes.
Tensor gated_delta(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& alpha, const Tensor& beta,
                   const Tensor& state, const Tensor& seqs, int64_t rows_per_slot);

}  // namespace tg::llm
