// The architecture files' entry points; architectures.cpp lists them by general.architecture.
#pragma once

#include <functional>
#include <memory>

#include "model/blocks/ffn.hpp"
#include "model/decoder.hpp"

namespace tg::llm {

Decoder build_llama(ModelBuilder& b);
Decoder build_qwen2(ModelBuilder& b);
Decoder build_qwen3(ModelBuilder& b);
Decoder build_gemma3(ModelBuilder& b);
Decoder build_qwen35(ModelBuilder& b);
Decoder build_qwen35moe(ModelBuilder& b);
Decoder build_qwen3moe(ModelBuilder& b);
Decoder build_olmoe(ModelBuilder& b);
Decoder build_deepseek2(ModelBuilder& b);

// qwen35's hybrid stack with the FFN `ffn` makes for each layer (qwen35: dense, qwen35moe: experts)
Decoder qwen35_stack(ModelBuilder& b, const std::function<std::unique_ptr<FeedForward>(int64_t layer)>& ffn);

}  // namespace tg::llm
