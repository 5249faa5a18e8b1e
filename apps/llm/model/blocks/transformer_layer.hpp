// The pre-norm layer: x + mixer(norm(x)), then x + ffn(norm(x)); the mixer is attention or a recurrence, the FFN
// dense or a mixture of experts. Tensor-parallel, each half's partial output is summed over the ranks. With post-norms
// (gemma) each half's output is normed again before it joins the residual stream.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "model/blocks/attention.hpp"
#include "model/blocks/ffn.hpp"
#include "model/decoder.hpp"

namespace tg::llm {

class TransformerLayer final : public Layer {
 public:
  struct Spec {
    Activation ffn = Activation::silu;  // the dense FFN's gate (where the layer makes its own FFN)
    bool post_norms = false;            // post_attention_norm / post_ffw_norm after each half (gemma)
    const char* ffn_norm = "ffn_norm";  // the norm before the FFN (qwen35 calls it post_attention_norm)
  };
  TransformerLayer(ModelBuilder& b, int64_t layer, std::unique_ptr<Mixer> mixer, std::unique_ptr<FeedForward> ffn,
                   const Spec& spec);
  // with the dense gated FFN
  TransformerLayer(ModelBuilder& b, int64_t layer, std::unique_ptr<Mixer> mixer, const Spec& spec);
  Tensor forward(const Tensor& x, const Pass& p) override;

 private:
  double eps_;
  TensorParallel tp_;
  Tensor attn_norm_, ffn_norm_;
  std::optional<Tensor> post_attn_norm_, post_ffn_norm_;
  std::unique_ptr<Mixer> mixer_;
  std::unique_ptr<FeedForward> ffn_;
};

// A decoder of n_layers identical attention layers (llama, qwen2, qwen3).
Decoder transformer_stack(ModelBuilder& b, const AttentionSpec& attention, const TransformerLayer::Spec& spec = {});
// The same with the FFN `ffn` makes for each layer (qwen3moe, olmoe: experts).
Decoder transformer_stack(ModelBuilder& b, const AttentionSpec& attention,
                          const std::function<std::unique_ptr<FeedForward>(int64_t layer)>& ffn);

}  // namespace tg::llm
