// deepseek2: DeepSeek-V2 / V3, Moonlight, GLM-4.7-Flash (llama.cpp's src/models/deepseek2.cpp, its MLA path).
// Multi-head latent attention (mla_attention.hpp; RoPE on adjacent pairs of the rotated parts), then a dense FFN in
// the first leading_dense_block_count layers and a mixture of experts in the rest: softmax or sigmoid gates
// (expert_gating_func), exp_probs_b added to the scores that select, the picked weights renormalized where
// expert_weights_norm and scaled by expert_weights_scale, plus expert_shared_count shared experts (no gate).
// Group-limited routing (expert_group_count) and YaRN with DeepSeek's magnitude terms; refused with a message:
// files from before MLA (attn_kv_b), linear RoPE scaling.
#include <algorithm>
#include <cmath>

#include "model/arch/architectures.hpp"
#include "model/blocks/mla_attention.hpp"
#include "model/blocks/moe_ffn.hpp"
#include "model/blocks/transformer_layer.hpp"
#include "tg/error.hpp"

namespace tg::llm {

namespace {

MlaShape read_mla_shape(ModelBuilder& b) {
  const GGUFFile& f = b.file();
  const ModelConfig& c = b.config();
  if (!f.find(b.key("attention.key_length_mla")) || !f.find(b.key("attention.value_length_mla")))
    throw Error("tg-llm: " + f.path() + ": a deepseek2 file without " + b.key("attention.key_length_mla") +
                " (converted before MLA, with attn_kv_b) is not supported: convert it again with a current "
                "convert_hf_to_gguf.py");
  MlaShape s;
  s.q_lora = f.get_int(b.key("attention.q_lora_rank"), 0);
  s.kv_lora = f.get_int(b.key("attention.kv_lora_rank"));
  s.rope = c.rope_dims;
  s.nope = f.get_int(b.key("attention.key_length_mla")) - s.rope;
  s.v = f.get_int(b.key("attention.value_length_mla"));
  if (s.q_lora < 0 || s.kv_lora <= 0 || s.nope <= 0 || s.v <= 0 || c.head_dim != s.kv_lora + s.rope ||
      c.value_dim != s.kv_lora)
    throw Error("tg-llm: " + f.path() + ": implausible latent attention (kv_lora_rank " + std::to_string(s.kv_lora) +
                ", q_lora_rank " + std::to_string(s.q_lora) + ", per head " + std::to_string(s.nope) + " + " +
                std::to_string(s.rope) + " query and " + std::to_string(s.v) + " value dims, cache rows " +
                std::to_string(c.head_dim) + " / " + std::to_string(c.value_dim) + ")");
  s.scale = 1.0 / std::sqrt(static_cast<double>(s.nope + s.rope));
  RopeScaling& yarn = b.config().rope_scaling;
  if (yarn.type == RopeScaling::Type::linear)
    throw Error("tg-llm: " + f.path() + ": deepseek2 with linear RoPE scaling is not supported (none or yarn)");
  if (yarn.type == RopeScaling::Type::yarn) {
    // DeepSeek's YaRN: the converter writes rope.scaling.yarn_log_multiplier = 0.1 mscale_all_dim, and mscale =
    // mscale_all_dim (llama.cpp's TAG_DEEPSEEK2_YARN_LOG_MUL_FIX), so cos and sin keep attn_factor alone; the
    // scores take the magnitude squared: (attn_factor (1 + 0.1 mscale_all_dim ln factor))^2 / sqrt(head dims)
    const double log_mul = f.get_float(b.key("rope.scaling.yarn_log_multiplier"), 0.0) / 0.1;
    if (!std::isfinite(log_mul) || log_mul < 0)
      throw Error("tg-llm: " + f.path() + ": " + b.key("rope.scaling.yarn_log_multiplier") + " must be a number >= 0");
    yarn.mscale = yarn.mscale_all_dim = log_mul;
    const double m = yarn.magnitude() * (1.0 + 0.1 * log_mul * std::log(yarn.factor));
    s.scale *= m * m;
  }
  return s;
}

// DeepSeek-V3's group-limited routing (expert_group_count groups, the picks from the expert_group_used_count best)
void read_expert_groups(ModelBuilder& b, MoeShape& moe) {
  const GGUFFile& f = b.file();
  RoutingSpec& r = moe.routing;
  r.groups = std::max<int64_t>(1, f.get_int(b.key("expert_group_count"), 1));
  r.groups_used = f.get_int(b.key("expert_group_used_count"), r.groups);
  if (!groups_fit(r, moe.experts))
    throw Error("tg-llm: " + f.path() + ": " + b.key("expert_group_count") + " " + std::to_string(r.groups) + " / " +
                b.key("expert_group_used_count") + " " + std::to_string(r.groups_used) + " do not fit " +
                std::to_string(moe.experts) + " experts with " + std::to_string(r.k) + " a token");
}

}  // namespace

Decoder build_deepseek2(ModelBuilder& b) {
  const GGUFFile& f = b.file();
  const MlaShape mla = read_mla_shape(b);
  const int64_t dense = f.get_int(b.key("leading_dense_block_count"), 0);
  // llama.cpp's gates: 1 softmax, 2 sigmoid; without the key, softmax
  const int64_t gating = f.get_int(b.key("expert_gating_func"), 1);
  if (gating != 1 && gating != 2)
    throw Error("tg-llm: " + f.path() + ": " + b.key("expert_gating_func") + " " + std::to_string(gating) +
                " is not 1 (softmax) or 2 (sigmoid)");
  const RoutingSpec routing{.gate = gating == 2 ? RoutingSpec::Gate::sigmoid : RoutingSpec::Gate::softmax,
                            .normalize = false};
  std::optional<MoeShape> moe;
  if (dense < b.config().n_layers) {
    moe = read_moe_shape(b, routing, dense);
    moe->shared_d_ff = f.get_int(b.key("expert_shared_count"), 0) * moe->d_ff;
    read_expert_groups(b, *moe);
  }
  Decoder d;
  d.prefill_chunk = kMoePrefillChunk;
  for (int64_t il = 0; il < b.config().n_layers; ++il) {
    std::unique_ptr<FeedForward> ffn;
    if (il < dense)
      ffn = std::make_unique<GatedFfn>(b, il, Activation::silu);
    else
      ffn = std::make_unique<MoeFfn>(b, il, *moe);
    d.layers.push_back(std::make_unique<TransformerLayer>(b, il, std::make_unique<MlaAttention>(b, il, mla),
                                                          std::move(ffn), TransformerLayer::Spec{}));
  }
  return d;
}

}  // namespace tg::llm
