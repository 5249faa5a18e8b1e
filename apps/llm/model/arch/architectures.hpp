// The architecture files' entry points; architectures.cpp lists them by general.architecture.
#pragma once

#include "model/decoder.hpp"

namespace tg::llm {

Decoder build_llama(ModelBuilder& b);
Decoder build_qwen2(ModelBuilder& b);
Decoder build_qwen3(ModelBuilder& b);
Decoder build_gemma3(ModelBuilder& b);
Decoder build_qwen35(ModelBuilder& b);
Decoder build_qwen3moe(ModelBuilder& b);
Decoder build_olmoe(ModelBuilder& b);

}  // namespace tg::llm
