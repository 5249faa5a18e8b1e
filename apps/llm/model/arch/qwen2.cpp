// qwen2: Qwen2 / Qwen2.5 (llama.cpp's src/models/qwen2.cpp). Llama's layer with biases on q, k and v, and RoPE
// on halves (NEOX).
#include "model/arch/architectures.hpp"
#include "model/blocks/transformer_layer.hpp"

namespace tg::llm {

Decoder build_qwen2(ModelBuilder& b) { return transformer_stack(b, {.neox = true, .qkv_bias = true}); }

}  // namespace tg::llm
