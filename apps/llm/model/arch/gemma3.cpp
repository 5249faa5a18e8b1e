// gemma3: Gemma 3 (llama.cpp's src/models/gemma3.cpp). Five sliding-window layers to one global (the global ones
// with the file's RoPE base, the local ones with base 10000, as llama.cpp hard-codes it), QK-norm, norms after
// attention and FFN as well as before (RoPE scaling, as Gemma 3 4B+ files carry, only on the global layers), a
// GELU-tanh-gated FFN, and embeddings scaled by sqrt(d_model).
#include <cmath>

#include "model/arch/architectures.hpp"
#include "model/blocks/transformer_layer.hpp"

namespace tg::llm {

Decoder build_gemma3(ModelBuilder& b) {
  constexpr int64_t kPattern = 6;  // llama.cpp's set_swa_pattern(6): layer il % 6 == 5 is global
  constexpr double kLocalBase = 10000;
  ModelConfig& c = b.config();
  c.sliding_window = b.file().get_int(b.key("attention.sliding_window"), 0);
  Decoder d;
  d.embed_scale = std::sqrt(static_cast<double>(c.d_model));
  for (int64_t il = 0; il < c.n_layers; ++il) {
    const bool local = c.sliding_window > 0 && il % kPattern != kPattern - 1;
    c.layer_is_local[static_cast<size_t>(il)] = local;
    const AttentionSpec attn{.neox = true,
                             .qk_norm = true,
                             .rope_base = local ? kLocalBase : 0,
                             .rope_scaled = !local,
                             .window = local ? c.sliding_window : 0};
    d.layers.push_back(
        std::make_unique<TransformerLayer>(b, il, std::make_unique<Attention>(b, il, attn),
                                           TransformerLayer::Spec{.ffn = Activation::gelu_tanh, .post_norms = true}));
  }
  return d;
}

}  // namespace tg::llm
