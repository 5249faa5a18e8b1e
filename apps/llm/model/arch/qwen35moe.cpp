// qwen35moe: Qwen3.5 / Qwen3.6 MoE hybrids (Qwen3.6-35B-A3B; llama.cpp's src/models/qwen35moe.cpp). qwen35's
// stack of gated delta nets and gated attention, with a mixture of experts in every layer: softmax over all
// experts, the top k renormalized, plus a shared expert scaled per token by sigmoid(ffn_gate_inp_shexp . h).
#include "model/arch/architectures.hpp"
#include "model/blocks/moe_ffn.hpp"

namespace tg::llm {

Decoder build_qwen35moe(ModelBuilder& b) {
  const MoeShape moe = read_moe_shape(b, {.gate = RoutingSpec::Gate::softmax, .normalize = true});
  Decoder d = qwen35_stack(b, [&](int64_t il) { return std::make_unique<MoeFfn>(b, il, moe); });
  d.prefill_chunk = kMoePrefillChunk;
  return d;
}

}  // namespace tg::llm
