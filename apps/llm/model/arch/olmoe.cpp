// olmoe: OLMoE (OLMoE-1B-7B; llama.cpp's src/models/olmoe.cpp). Attention with an RMS-norm over all heads' q and
// k at once (not per head), NEOX RoPE; a mixture of experts in every layer: softmax over all experts, the top k's
// probabilities used as they are (no renormalization: OLMoE's norm_topk_prob is false).
#include "model/arch/architectures.hpp"
#include "model/blocks/moe_ffn.hpp"
#include "model/blocks/transformer_layer.hpp"

namespace tg::llm {

Decoder build_olmoe(ModelBuilder& b) {
  const MoeShape moe = read_moe_shape(b, {.gate = RoutingSpec::Gate::softmax, .normalize = false});
  Decoder d = transformer_stack(b, {.neox = true, .qk_norm_whole = true},
                                [&](int64_t il) { return std::make_unique<MoeFfn>(b, il, moe); });
  d.prefill_chunk = kMoePrefillChunk;
  return d;
}

}  // namespace tg::llm
