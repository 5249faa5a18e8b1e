// qwen3moe: Qwen3 MoE (Qwen3-30B-A3B; llama.cpp's src/models/qwen3moe.cpp). Qwen3's attention (QK-norm per head,
// NEOX RoPE) and a mixture of experts in every layer: softmax over all experts, the top k renormalized.
#include "model/arch/architectures.hpp"
#include "model/blocks/moe_ffn.hpp"
#include "model/blocks/transformer_layer.hpp"

namespace tg::llm {

Decoder build_qwen3moe(ModelBuilder& b) {
  const MoeShape moe = read_moe_shape(b, {.gate = RoutingSpec::Gate::softmax, .normalize = true});
  Decoder d = transformer_stack(b, {.neox = true, .qk_norm = true},
                                [&](int64_t il) { return std::make_unique<MoeFfn>(b, il, moe); });
  d.prefill_chunk = kMoePrefillChunk;
  return d;
}

}  // namespace tg::llm
