// olmoe: OLMoE (OLMoE-1B-7B; llama.cpp's src/models/olmoe.cpp). Attention with an RMS-norm over all heads' q and
// k at once (not per head), NEOX RoPE; a mixture of experts in every layer: softmax over all experts, the top k's
// probabilities used as they are (no renormalization: OLMoE's norm_topk_prob is false).
#include "model/arch/architectures.hpp"
#include "model/blocks/moe_ffn.hpp"
#include "model/blocks/transformer_layer.hpp"

namespace tg::llm {

Decoder build_olmoe(ModelBuilder& b) {
  const MoeShape moe = read_moe_shape(b, {.gate = RoutingSpec::Gate::softmax, .normalize = false});
  Decoder d;
  d.prefill_chunk = kMoePrefillChunk;
  for (int64_t il = 0; il < b.config().n_layers; ++il)
    d.layers.push_back(std::make_unique<TransformerLayer>(b, il, std::make_unique<Attention>(b, il, AttentionSpec{.neox = true, .qk_norm_whole = true}),
                                                          std::make_unique<MoeFfn>(b, il, moe), TransformerLayer::Spec{}));
  return d;
}

}  // namespace tg::llm
