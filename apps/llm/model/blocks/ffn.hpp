// The FFN half of a layer, and the dense gated FFN: down(act(gate(h)) * up(h)), with SiLU (llama, qwen) or
// GELU-tanh (gemma) as the gate.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "model/model_builder.hpp"
#include "model/pass.hpp"
#include "quant/quant.hpp"

namespace tg::llm {

enum class Activation { silu, gelu_tanh };

// h (T, d_model), already normed -> (T, d_model): the dense FFN, or a mixture of experts (moe_ffn.hpp).
class FeedForward {
 public:
  virtual ~FeedForward() = default;
  virtual Tensor operator()(const Tensor& h, const Pass& p) const = 0;
};

class GatedFfn final : public FeedForward {
 public:
  // Loads blk.<layer>.ffn_{gate,up,down}<suffix> (d_ff rows; config().d_ff unless given); tensor-parallel, this
  // rank's columns (whole blocks of ffn_down), and the partial output of its columns.
  GatedFfn(ModelBuilder& b, int64_t layer, Activation act, const std::string& suffix = "", int64_t d_ff = 0);
  Tensor operator()(const Tensor& h, const Pass& p) const override;

 private:
  GatedFfn(ModelBuilder& b, int64_t layer, Activation act, const std::string& suffix, int64_t d_ff,
           std::pair<int64_t, int64_t> cols);
  Activation act_;
  QuantMatrix gate_, up_, down_;
};

}  // namespace tg::llm
