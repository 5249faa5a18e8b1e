#include "chat_prompt.hpp"

#include "chat_template.hpp"

namespace tg::llm {

ChatPrompt chat_prompt(const Model& model, const Tokenizer& tok, const nlohmann::ordered_json& messages,
                       const nlohmann::ordered_json& tools, const nlohmann::ordered_json& kwargs) {
  if (kwargs.is_object())
    for (const char* k : {"messages", "tools", "documents", "add_generation_prompt"})
      if (kwargs.contains(k)) throw Error(std::string("chat template kwargs may not set '") + k + "'");
  std::string bos(tok.bos() >= 0 ? tok.token_text(tok.bos()) : ""), eos(tok.eos() >= 0 ? tok.token_text(tok.eos()) : "");
  ChatPrompt p;
  if (auto* t = model.gguf().find("tokenizer.chat_template")) {
    try {
      p.text = render_chat(t->as_string(), messages, true, tools, kwargs, bos, eos);
    } catch (const Error& e) {
      p.warning = std::string("the model's chat template failed (") + e.what() + "); using the " + model.config().arch + " format";
    }
  }
  if (p.text.empty()) p.text = fallback_chat_format(model.config().arch, messages, true);
  bool has_bos = !bos.empty() && p.text.rfind(bos, 0) == 0;  // the template wrote BOS itself
  p.tokens = tok.encode(p.text, !has_bos, true);
  return p;
}

}  // namespace tg::llm
