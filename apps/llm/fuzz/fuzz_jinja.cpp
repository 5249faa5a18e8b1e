// libFuzzer target for the chat-template engine (a GGUF's tokenizer.chat_template is untrusted text): the bytes
// up to the first NUL are a template, the rest a JSON context (an object is the whole context, an array the
// messages; anything else falls back to a fixed conversation). Parsing and rendering either succeed or throw
// tg::Error: any other exception, a crash, a hang or a memory blow-up is a finding.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "chat/chat_template.hpp"

using Json = nlohmann::ordered_json;

namespace {

Json fixed_context() {
  static const Json ctx = tg::llm::chat_context(
      Json::parse(R"([{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
          {"role": "assistant", "content": "a", "tool_calls": [{"function": {"name": "f", "arguments": {"k": 1}}}]},
          {"role": "tool", "content": "1"}, {"role": "user", "content": [{"type": "text", "text": "t"}]}])"),
      true, Json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])"),
      Json{{"enable_thinking", false}}, "<s>", "</s>");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* bytes = reinterpret_cast<const char*>(data);
  const char* nul = static_cast<const char*>(std::memchr(bytes, 0, size));
  const std::string source(bytes, nul != nullptr ? static_cast<size_t>(nul - bytes) : size);
  const std::string context = nul != nullptr ? std::string(nul + 1, bytes + size) : std::string();
  try {
    Json ctx = Json::parse(context, nullptr, false);
    if (ctx.is_array())
      ctx = tg::llm::chat_context(ctx, true, nullptr, nullptr, "<s>", "</s>");
    else if (!ctx.is_object())
      ctx = fixed_context();
    tg::llm::ChatTemplate t = tg::llm::ChatTemplate::parse(source);
    (void)t.render(ctx);
  } catch (const tg::Error&) {}
  return 0;
}
