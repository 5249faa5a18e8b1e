// qwen35: Qwen3.5 / Qwen3.6 dense hybrids (llama.cpp's src/models/qwen35.cpp). Every full_attention_interval-th
// layer ((il + 1) % interval == 0) is gated attention (attn_q emits each head's query and gate; output x
// sigmoid(gate); QK-norm; NEOX RoPE on rope.dimension_count values of each head); the others are gated delta
// nets. The FFN's norm is post_attention_norm; norm weights carry Qwen's +1 already; the multi-token-prediction
// blocks (nextn_predict_layers, at the end) are not run. qwen35moe (qwen35moe.cpp) is the same stack with experts.
#include "model/arch/architectures.hpp"
#include "model/blocks/gated_delta_net.hpp"
#include "model/blocks/transformer_layer.hpp"
#include "tg/error.hpp"

namespace tg::llm {

namespace {

// rope.dimension_sections (multi-section RoPE): for text every section takes the token's position, which is plain
// RoPE, unless a rotated pair falls in none of the first three sections (llama.cpp's interleaved layout gives it
// position 0 there). Refused rather than computed wrong.
void check_rope_sections(ModelBuilder& b) {
  const std::string key = b.key("rope.dimension_sections");
  const GGUFValue* value = b.file().find(key);
  if (!value) return;
  std::vector<int64_t> sec;
  value->for_each_element([&](const GGUFValue& e) { sec.push_back(e.as_int()); });
  int64_t total = 0;
  for (int64_t s : sec) total += s;
  const int64_t pairs = b.config().rope_dims / 2;
  if (sec.size() < 3 && pairs > 0)  // llama.cpp fills the missing sections with zeros: pairs left unrotated
    throw Error("tg-llm: " + b.file().path() + ": " + key + " has " + std::to_string(sec.size()) +
                " sections, not the 3 or 4 of text RoPE");
  for (int64_t i = 0; i < pairs && total > 0; ++i) {
    const int64_t s = i % total;
    if (!((s % 3 == 0 && s < 3 * sec[0]) || (s % 3 == 1 && s < 3 * sec[1]) || (s % 3 == 2 && s < 3 * sec[2])))
      throw Error("tg-llm: " + b.file().path() + ": " + key + " leaves RoPE pair " + std::to_string(i) +
                  " outside the text sections: not supported");
  }
}

}  // namespace

Decoder qwen35_stack(ModelBuilder& b, const std::function<std::unique_ptr<FeedForward>(int64_t layer)>& ffn) {
  ModelConfig& c = b.config();
  const GGUFFile& f = b.file();
  c.n_layers -= f.get_int(b.key("nextn_predict_layers"), 0);
  if (f.find(b.key("attention.recurrent_layers")))
    throw Error("tg-llm: " + f.path() + ": " + b.key("attention.recurrent_layers") +
                " (an explicit layer pattern) is not supported");
  const int64_t interval = f.get_int(b.key("full_attention_interval"), 4);
  const DeltaNetShape shape{.conv_kernel = f.get_int(b.key("ssm.conv_kernel")),
                            .head_dim = f.get_int(b.key("ssm.state_size")),
                            .key_heads = f.get_int(b.key("ssm.group_count")),
                            .value_heads = f.get_int(b.key("ssm.time_step_rank"))};
  if (c.n_layers <= 0 || interval <= 0 || shape.conv_kernel < 2 || shape.conv_kernel > 64 || shape.head_dim <= 0 ||
      shape.key_heads <= 0 || shape.value_heads <= 0 || shape.value_heads % shape.key_heads != 0 ||
      f.get_int(b.key("ssm.inner_size"), shape.value_heads * shape.head_dim) != shape.value_heads * shape.head_dim)
    throw Error("tg-llm: " + f.path() + ": implausible gated delta net hyper-parameters (conv kernel " +
                std::to_string(shape.conv_kernel) + ", state size " + std::to_string(shape.head_dim) +
                ", key/value heads " + std::to_string(shape.key_heads) + "/" + std::to_string(shape.value_heads) +
                ", full attention every " + std::to_string(interval) + " layers)");
  check_rope_sections(b);
  Decoder d;
  d.recurrent = true;
  const TransformerLayer::Spec spec{.ffn_norm = "post_attention_norm"};
  for (int64_t il = 0; il < c.n_layers; ++il) {
    std::unique_ptr<Mixer> mixer;
    if ((il + 1) % interval == 0)
      mixer = std::make_unique<Attention>(b, il, AttentionSpec{.neox = true, .qk_norm = true, .output_gate = true});
    else
      mixer = std::make_unique<GatedDeltaNet>(b, il, shape);
    d.layers.push_back(std::make_unique<TransformerLayer>(b, il, std::move(mixer), ffn(il), spec));
  }
  return d;
}

Decoder build_qwen35(ModelBuilder& b) {
  return qwen35_stack(b, [&](int64_t il) { return std::make_unique<GatedFfn>(b, il, Activation::silu); });
}

}  // namespace tg::llm
