// llama: Llama 2 / 3.x, SmolLM2 (llama.cpp's src/models/llama.cpp). Pre-norm attention and a SiLU-gated FFN;
// RoPE on adjacent pairs (llama.cpp's converter permutes q and k for it), scaled as the file says: Llama 3.1+'s
// frequency factors (rope_freqs.weight), linear or YaRN (config.cpp, rope.cpp).
#include "model/arch/architectures.hpp"
#include "model/blocks/transformer_layer.hpp"

namespace tg::llm {

Decoder build_llama(ModelBuilder& b) { return transformer_stack(b, {.neox = false}); }

}  // namespace tg::llm
