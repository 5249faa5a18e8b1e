// ChatTemplate: parse once, render many times; render_chat builds transformers' apply_chat_template
// context; fallback_chat_format writes the fixed formats of models that ship without a template.
#include "chat/chat_template.hpp"

#include "jinja/jinja_interpreter.hpp"
#include "jinja/jinja_lexer.hpp"
#include "jinja/jinja_parser.hpp"

namespace tg::llm {

struct ChatTemplate::Program {
  std::string source;
  jinja::Body body;
};

ChatTemplate ChatTemplate::parse(const std::string& source) {
  auto p = std::make_shared<Program>();
  p->source = source;
  p->body = jinja::parse(jinja::tokenize(source, jinja::LexerOptions{}));
  jinja::check_names(p->body);
  return ChatTemplate(std::move(p));
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context) const {
  jinja::Value ctx;
  try {
    ctx = jinja::Value::from_json(context);
  } catch (const jinja::ValueError& e) {
    throw tg::Error(std::string("chat template: bad context: ") + e.what());
  }
  return jinja::render_program(program_->body, ctx, jinja::RenderLimits{});
}

const std::string& ChatTemplate::source() const { return program_->source; }

nlohmann::ordered_json chat_context(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                    const nlohmann::ordered_json& tools, const nlohmann::ordered_json& kwargs,
                                    const std::string& bos_token, const std::string& eos_token) {
  if (!messages.is_array())
    throw tg::Error("chat template: messages must be a JSON array, not " + std::string(messages.type_name()));
  if (!kwargs.is_null() && !kwargs.is_object())
    throw tg::Error("chat template: kwargs must be a JSON object, not " + std::string(kwargs.type_name()));
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  ctx["messages"] = messages;
  ctx["tools"] = tools;  // None when absent: templates test `tools is not none` as well as `if tools`
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = add_generation_prompt;
  ctx["bos_token"] = bos_token;
  ctx["eos_token"] = eos_token;
  if (kwargs.is_object()) {
    for (const auto& [key, value] : kwargs.items()) {
      // transformers passes these as named arguments, so a duplicate is an error there too.
      if (key == "messages" || key == "tools" || key == "documents" || key == "add_generation_prompt")
        throw tg::Error("chat template: kwarg '" + key + "' would override the argument of that name");
      ctx[key] = value;
    }
  }
  return ctx;
}

std::string render_chat(const std::string& tmpl, const nlohmann::ordered_json& messages, bool add_generation_prompt,
                        const nlohmann::ordered_json& tools, const nlohmann::ordered_json& kwargs,
                        const std::string& bos_token, const std::string& eos_token) {
  return ChatTemplate::parse(tmpl).render(
      chat_context(messages, add_generation_prompt, tools, kwargs, bos_token, eos_token));
}

namespace {

std::string field(const nlohmann::ordered_json& m, const char* key) {
  if (!m.is_object() || !m.contains(key)) return "";
  const auto& v = m[key];
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) return v.is_null() ? "" : v.dump();
  std::string text;  // OpenAI-style content parts: keep the text ones
  for (const auto& part : v)
    if (part.is_object() && part.value("type", "") == "text" && part.contains("text") && part["text"].is_string())
      text += part["text"].get<std::string>();
  return text;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n\r\f\v"), e = s.find_last_not_of(" \t\n\r\f\v");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string gemma3_format(const nlohmann::ordered_json& messages, bool add_generation_prompt) {
  std::string out, system;
  bool first_user = true;
  for (const auto& m : messages) {
    std::string role = field(m, "role"), content = trim(field(m, "content"));
    if (role == "system") {
      system += content + "\n\n";
      continue;
    }
    if (role == "assistant") role = "model";
    if (role == "user" && first_user) {
      content = system + content;
      first_user = false;
    }
    out += "<start_of_turn>" + role + "\n" + content + "<end_of_turn>\n";
  }
  if (add_generation_prompt) out += "<start_of_turn>model\n";
  return out;
}

std::string llama3_format(const nlohmann::ordered_json& messages, bool add_generation_prompt) {
  std::string out;
  for (const auto& m : messages)
    out +=
        "<|start_header_id|>" + field(m, "role") + "<|end_header_id|>\n\n" + trim(field(m, "content")) + "<|eot_id|>";
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string chatml_format(const nlohmann::ordered_json& messages, bool add_generation_prompt) {
  std::string out;
  for (const auto& m : messages) out += "<|im_start|>" + field(m, "role") + "\n" + field(m, "content") + "<|im_end|>\n";
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace

std::string fallback_chat_format(const std::string& architecture, const nlohmann::ordered_json& messages,
                                 bool add_generation_prompt) {
  if (!messages.is_array())
    throw tg::Error("chat format: messages must be a JSON array, not " + std::string(messages.type_name()));
  if (architecture == "gemma3" || architecture == "gemma2" || architecture == "gemma")
    return gemma3_format(messages, add_generation_prompt);
  if (architecture == "llama") return llama3_format(messages, add_generation_prompt);
  return chatml_format(messages, add_generation_prompt);  // qwen2, qwen3 and the generic default
}

}  // namespace tg::llm
