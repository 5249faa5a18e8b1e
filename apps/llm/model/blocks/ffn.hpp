// The dense gated FFN: down(act(gate(h)) * up(h)), with SiLU (llama, qwen) or GELU-tanh (gemma) as the gate.
#pragma once

#include <cstdint>

#include "model/model_builder.hpp"
#include "quant.hpp"

namespace tg::llm {

enum class Activation { silu, gelu_tanh };

class GatedFfn {
 public:
  // Loads blk.<layer>.ffn_{gate,up,down} (d_ff = config().d_ff).
  GatedFfn(ModelBuilder& b, int64_t layer, Activation act);
  // h (T, d_model), already normed -> (T, d_model)
  Tensor operator()(const Tensor& h) const;

 private:
  Activation act_;
  QuantMatrix gate_, up_, down_;
};

}  // namespace tg::llm
