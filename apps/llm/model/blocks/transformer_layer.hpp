// The pre-norm transformer layer: x + attn(norm(x)), then x + ffn(norm(x)); with post-norms (gemma) each
// sub-layer's output is normed again before it joins the residual stream.
#pragma once

#include <optional>

#include "model/blocks/attention.hpp"
#include "model/blocks/ffn.hpp"
#include "model/decoder.hpp"

namespace tg::llm {

class TransformerLayer final : public Layer {
 public:
  struct Spec {
    AttentionSpec attention;
    Activation ffn = Activation::silu;
    bool post_norms = false;  // post_attention_norm / post_ffw_norm
  };
  TransformerLayer(ModelBuilder& b, int64_t layer, const Spec& spec);
  Tensor forward(const Tensor& x, const Pass& p) override;

 private:
  double eps_;
  Tensor attn_norm_, ffn_norm_;
  std::optional<Tensor> post_attn_norm_, post_ffn_norm_;
  Attention attn_;
  GatedFfn ffn_;
};

// A decoder of n_layers identical transformer layers (llama, qwen2, qwen3).
Decoder transformer_stack(ModelBuilder& b, const TransformerLayer::Spec& spec);

}  // namespace tg::llm
