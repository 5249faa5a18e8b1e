// libFuzzer target for what the server parses from clients: the bytes as a request body for every API (chat,
// completions, Anthropic's messages, responses: every failure must be an ApiError, never a crash or another
// exception), as a JSON schema (compiled, then matched against the bytes), and as model output streamed through
// the OutputParser in pieces whose sizes come from the input (the pieces must add up to what a whole feed gives).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "constrain/json_matcher.hpp"
#include "constrain/string_pattern.hpp"
#include "server/anthropic_api.hpp"
#include "server/openai_api.hpp"
#include "server/output_parser.hpp"
#include "server/responses_api.hpp"

using namespace tg::llm::server;

namespace {

// Events with neighbours of the same kind merged: how they are grouped depends on the pieces, what they say not.
std::vector<std::pair<int, std::string>> canonical(const std::vector<OutputEvent>& evs) {
  std::vector<std::pair<int, std::string>> out;
  for (const auto& e : evs) {
    const int k = static_cast<int>(e.kind);
    std::string t = e.kind == OutputEvent::Kind::ToolCall ? e.call.name + "\n" + e.call.arguments : e.text;
    if (!out.empty() && out.back().first == k && e.kind != OutputEvent::Kind::ToolCall)
      out.back().second += t;
    else
      out.push_back({k, std::move(t)});
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  RequestDefaults d;
  d.model_id = "m";
  auto body = nlohmann::json::parse(text, nullptr, false);
  if (!body.is_discarded()) {
    const auto ordered = nlohmann::ordered_json::parse(text);
    for (int api = 0; api < 4; ++api) try {
        if (api == 1) {
          (void)parse_completion_request(body, ordered, d);
          continue;
        }
        ChatRequest r = api == 0   ? parse_chat_request(body, ordered, d)
                        : api == 2 ? parse_messages_request(body, ordered, d)
                                   : parse_responses_request(body, ordered, d);
        (void)r.messages.dump();
        // a constraint that compiled takes the input's bytes without crashing (they rarely fit the schema)
        if (r.constraint) {
          tg::llm::constrain::JsonMatcher m(r.constraint->schema, r.constraint->before, r.constraint->after);
          for (char c : text) (void)m.feed(c);
          (void)m.accepting();
        }
      } catch (const ApiError& e) {
        if (e.status < 400 || e.status > 599 || e.body().dump().empty()) std::abort();
      }
    // the schema compiler on the input as a schema, and the matcher on the input's bytes: SchemaError or a matcher
    try {
      tg::llm::constrain::JsonMatcher m(tg::llm::constrain::compile_schema(ordered));
      for (char c : text) (void)m.feed(c);
      (void)m.key();
    } catch (const tg::llm::constrain::SchemaError&) {}
  }
  // the input as a string pattern, run over its own characters
  try {
    const tg::llm::constrain::StringPattern p(text);
    uint32_t state = p.start();
    for (unsigned char c : text) {
      (void)p.any_in(state, c, c + 0x100u);
      if (const uint32_t next = p.next(state, c); next != tg::llm::constrain::StringPattern::kDead) state = next;
    }
    (void)p.accepting(state);
  } catch (const tg::llm::constrain::SchemaError&) {}
  // output parsing: stops drawn from the input's first bytes, pieces of 1..8 bytes
  OutputParser::Options o;
  o.in_reasoning = size > 0 && (data[0] & 1);
  if (size > 4) o.stop = {text.substr(1, data[1] % 4), text.substr(2, 2)};
  OutputParser whole(o), pieces(o);
  std::vector<OutputEvent> a = whole.feed(text), b;
  auto fa = whole.finish();
  a.insert(a.end(), fa.begin(), fa.end());
  for (size_t at = 0; at < size;) {
    size_t n = 1 + data[at] % 8;
    auto ev = pieces.feed(text.substr(at, n));
    b.insert(b.end(), ev.begin(), ev.end());
    at += n;
  }
  auto fb = pieces.finish();
  b.insert(b.end(), fb.begin(), fb.end());
  if (canonical(a) != canonical(b)) std::abort();  // a split stream must parse as the whole does
  return 0;
}
