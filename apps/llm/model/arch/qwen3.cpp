// qwen3: Qwen3 dense (llama.cpp's src/models/qwen3.cpp). Llama's layer with an RMS-norm of q and k per head
// before RoPE on halves (NEOX).
#include "model/arch/architectures.hpp"
#include "model/blocks/transformer_layer.hpp"

namespace tg::llm {

Decoder build_qwen3(ModelBuilder& b) { return transformer_stack(b, {.neox = true, .qk_norm = true}); }

}  // namespace tg::llm
