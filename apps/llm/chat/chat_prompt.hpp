// A conversation as the model's prompt: the GGUF's chat template (or the family's known format when there is
// none or it fails), tokenized with control tokens parsed and BOS added unless the template wrote it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tg::llm {

struct ChatPrompt {
  std::string text;
  std::vector<int32_t> tokens;
  std::string warning;  // set when the template failed and the fallback format was used
};

// tools / kwargs: null or as render_chat takes them. A kwarg naming messages, tools or add_generation_prompt is
// a tg::Error (the request's own fields win), not a template failure.
ChatPrompt chat_prompt(const Model& model, const Tokenizer& tok, const nlohmann::ordered_json& messages,
                       const nlohmann::ordered_json& tools = nullptr, const nlohmann::ordered_json& kwargs = nullptr);

}  // namespace tg::llm
