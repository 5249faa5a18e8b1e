// The gated delta net (Qwen3.5 / Qwen3-Next linear attention, llama.cpp's qwen35 graph): attn_qkv -> causal
// depthwise conv (its last K-1 input rows kept per slot) + SiLU -> q, k L2-normed (q by 1/sqrt(dk)), value heads
// tiled over key heads -> the gated delta rule per head (the (dv x dk) state kept per slot) -> RMSNorm(o) * SiLU(z)
// -> ssm_out. No positions, no KV cache: the state carries the sequence. Tensor-parallel, each rank takes a share
// of the key heads with the value heads that read them: the heads are independent until ssm_out (row-parallel).
#pragma once

#include <cstdint>

#include "model/decoder.hpp"
#include "model/model_builder.hpp"
#include "quant/quant.hpp"

namespace tg::llm {

struct DeltaNetShape {
  int64_t conv_kernel = 4;  // ssm.conv_kernel
  int64_t head_dim = 0;     // ssm.state_size: dk = dv
  int64_t key_heads = 0;    // ssm.group_count
  int64_t value_heads = 0;  // ssm.time_step_rank
};

class GatedDeltaNet final : public Mixer {
 public:
  GatedDeltaNet(ModelBuilder& b, int64_t layer, const DeltaNetShape& shape);
  Tensor forward(const Tensor& h, const Pass& p) override;

 private:
  struct Share;
  GatedDeltaNet(ModelBuilder& b, int64_t layer, const DeltaNetShape& whole, const Share& part);

  DeltaNetShape s_;  // this rank's heads
  double eps_;
  int64_t rows_per_slot_;
  const SequenceState* state_;
  QuantMatrix qkv_, z_, alpha_, beta_, out_;
  Tensor conv_w_, dt_bias_, a_, norm_, conv_state_, delta_state_;
};

}  // namespace tg::llm
