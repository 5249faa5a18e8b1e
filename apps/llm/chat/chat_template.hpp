// Chat templates: render a GGUF's `tokenizer.chat_template` (Jinja) the way Hugging Face transformers'
// apply_chat_template does, plus fixed prompt formats for models that ship without a template.
//
// Values are nlohmann::ordered_json so that objects keep the caller's key order, which tojson prints (a
// plain nlohmann::json converts implicitly, with its keys sorted). Errors are tg::Error with the template's
// line:column: "chat template:3:14: expected '%}' after the 'if' condition, got ')'".
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "tg/error.hpp"

namespace tg::llm {

class ChatTemplate {
 public:
  // Parses with transformers' environment (trim_blocks and lstrip_blocks on, a trailing newline dropped).
  // Throws tg::Error for syntax errors and for unknown filters or tests.
  static ChatTemplate parse(const std::string& source);

  // Renders with `context` (a JSON object) as the template's variables. Besides them the template sees
  // raise_exception(msg) (throws tg::Error carrying msg), strftime_now(fmt), namespace(), range(), dict().
  std::string render(const nlohmann::ordered_json& context) const;

  const std::string& source() const;

 private:
  struct Program;
  explicit ChatTemplate(std::shared_ptr<const Program> p) : program_(std::move(p)) {}
  std::shared_ptr<const Program> program_;  // immutable after parse, so copies share it
};

// apply_chat_template's context: messages, tools (None when null), documents (None),
// add_generation_prompt, bos_token, eos_token, then `kwargs` (e.g. enable_thinking, date_string), which may
// override bos_token/eos_token but not messages, tools, documents or add_generation_prompt (tg::Error).
std::string render_chat(const std::string& tmpl, const nlohmann::ordered_json& messages, bool add_generation_prompt,
                        const nlohmann::ordered_json& tools = nullptr, const nlohmann::ordered_json& kwargs = nullptr,
                        const std::string& bos_token = "", const std::string& eos_token = "");
nlohmann::ordered_json chat_context(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                    const nlohmann::ordered_json& tools = nullptr,
                                    const nlohmann::ordered_json& kwargs = nullptr, const std::string& bos_token = "",
                                    const std::string& eos_token = "");

// The prompt format of `architecture` (GGUF general.architecture) for a model without a template:
// gemma3 (<start_of_turn>, system folded into the first user turn, assistant as "model"), llama (Llama 3
// header ids), qwen2/qwen3 and anything else ChatML (<|im_start|>). No BOS token is written: the tokenizer
// adds it as the GGUF's add_bos_token says. Message content may be a string or a list of {type: text} parts.
std::string fallback_chat_format(const std::string& architecture, const nlohmann::ordered_json& messages,
                                 bool add_generation_prompt);

}  // namespace tg::llm
