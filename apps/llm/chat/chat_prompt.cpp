#include "chat/chat_prompt.hpp"

#include "chat/chat_template.hpp"

namespace tg::llm {

ChatPrompt chat_prompt(const Model& model, const Tokenizer& tok, const nlohmann::ordered_json& messages,
                       const nlohmann::ordered_json& tools, const nlohmann::ordered_json& kwargs) {
  if (kwargs.is_object())
    for (const char* k : {"messages", "tools", "documents", "add_generation_prompt"})
      if (kwargs.contains(k)) throw Error(std::string("chat template kwargs may not set '") + k + "'");
  std::string bos(tok.bos() >= 0 ? tok.token_text(tok.bos()) : ""),
      eos(tok.eos() >= 0 ? tok.token_text(tok.eos()) : "");
  // OpenAI's clients send a call's arguments as JSON text; chat templates (Qwen, Hermes, Llama 3.1) write them
  // with `| tojson`, which would quote the text a second time: they get the object (as llama.cpp's server does)
  nlohmann::ordered_json msgs = messages;
  for (auto& m : msgs)
    if (m.is_object() && m.contains("tool_calls") && m["tool_calls"].is_array())
      for (auto& call : m["tool_calls"])
        if (call.is_object() && call.contains("function") && call["function"].is_object() &&
            call["function"].contains("arguments") && call["function"]["arguments"].is_string()) {
          auto args = nlohmann::ordered_json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
          if (!args.is_discarded() && args.is_object()) call["function"]["arguments"] = std::move(args);
        }
  ChatPrompt p;
  if (auto* t = model.gguf().find("tokenizer.chat_template")) {
    try {
      p.text = render_chat(t->as_string(), msgs, true, tools, kwargs, bos, eos);
    } catch (const Error& e) {
      p.warning = std::string("the model's chat template failed (") + e.what() + "); using the " + model.config().arch +
                  " format";
    }
  }
  if (p.text.empty()) p.text = fallback_chat_format(model.config().arch, msgs, true);
  bool has_bos = !bos.empty() && p.text.rfind(bos, 0) == 0;  // the template wrote BOS itself
  p.tokens = tok.encode(p.text, !has_bos, true);
  return p;
}

}  // namespace tg::llm
