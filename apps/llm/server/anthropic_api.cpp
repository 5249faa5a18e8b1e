// Field rules follow Anthropic's Messages API reference: max_tokens required, temperature in [0, 1], system as a
// string or text blocks, stop_sequences, tools with input_schema, tool_choice auto / any / tool / none, thinking
// enabled / disabled (the templates' enable_thinking); tool_choice any / tool constrain the reply to one call.
#include "server/anthropic_api.hpp"

#include <random>

namespace tg::llm::server {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

json anthropic_error(const ApiError& e) {
  std::string type = e.status == 401   ? "authentication_error"
                     : e.status == 404 ? "not_found_error"
                     : e.status == 413 ? "request_too_large"
                     : e.status == 503 ? "overloaded_error"
                     : e.status >= 500 ? "api_error"
                                       : "invalid_request_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", e.what()}}}};
}

namespace {

// The text of a string or of a list of text blocks (system prompts, tool results).
std::string text_of(const json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) throw invalid_request("'" + where + "' must be a string or a list of text blocks", where);
  std::string text;
  for (const json& b : v) {
    if (!b.is_object() || b.value("type", "") != "text" || !b.contains("text") || !b["text"].is_string())
      throw invalid_request("'" + where + "' holds a block that is not {\"type\": \"text\", \"text\": ...}", where);
    text += b["text"].get<std::string>();
  }
  return text;
}

// One Anthropic message as the chat templates' messages: tool results become "tool" messages (before the
// message's text, as a user turn answers the calls first), tool_use blocks an assistant's tool_calls.
void add_message(const json& m, size_t i, ojson& out) {
  const std::string where = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) throw invalid_request("'" + where + "' must be an object", where);
  const json* role = field(m, "role");
  if (!role || !role->is_string() || (*role != "user" && *role != "assistant"))
    throw invalid_request("'" + where + ".role' must be user or assistant", where + ".role");
  const json* content = field(m, "content");
  if (!content) throw invalid_request("'" + where + ".content' is required", where + ".content");
  if (content->is_string()) {
    out.push_back({{"role", *role}, {"content", content->get<std::string>()}});
    return;
  }
  if (!content->is_array())
    throw invalid_request("'" + where + ".content' must be a string or a list of blocks", where + ".content");
  std::string text;
  ojson calls = ojson::array();
  for (size_t k = 0; k < content->size(); ++k) {
    const json& b = (*content)[k];
    const std::string at = where + ".content[" + std::to_string(k) + "]";
    const std::string type =
        b.is_object() && b.contains("type") && b["type"].is_string() ? b["type"].get<std::string>() : "";
    if (type == "text" && b.contains("text") && b["text"].is_string()) {
      text += b["text"].get<std::string>();
    } else if (type == "tool_use" && *role == "assistant" && b.contains("name") && b["name"].is_string()) {
      calls.push_back(
          {{"id", b.value("id", "")},
           {"type", "function"},
           {"function", {{"name", b["name"]}, {"arguments", ojson::parse(b.value("input", json::object()).dump())}}}});
    } else if (type == "tool_result" && *role == "user") {
      const json* c = field(b, "content");
      out.push_back({{"role", "tool"},
                     {"tool_call_id", b.value("tool_use_id", "")},
                     {"content", c ? text_of(*c, at + ".content") : ""}});
    } else if (type == "thinking" || type == "redacted_thinking") {
      // an earlier turn's reasoning: templates drop it from the history
    } else if (type == "image" || type == "document") {
      throw invalid_request("content blocks of type '" + type + "' are not supported: this model reads text", at);
    } else {
      throw invalid_request("'" + at + "' is not a text, tool_use (assistant) or tool_result (user) block", at);
    }
  }
  if (!calls.empty()) {
    out.push_back(
        {{"role", "assistant"}, {"content", text.empty() ? ojson(nullptr) : ojson(text)}, {"tool_calls", calls}});
  } else if (!text.empty() || *role == "assistant") {
    out.push_back({{"role", *role}, {"content", text}});
  }
}

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[25];
  std::snprintf(buf, sizeof buf, "%016llx%08x", static_cast<unsigned long long>(rng()), static_cast<unsigned>(rng()));
  return std::string(prefix) + buf;
}

}  // namespace

ChatRequest parse_messages_request(const json& b, const ojson& ob, const RequestDefaults& d) {
  if (!b.is_object()) throw invalid_request("the request body must be a JSON object");
  if (const json* m = field(b, "model"); m && !m->is_string())
    throw invalid_request("'model' must be a string", "model");
  ChatRequest r{};
  r.stream = boolean(b, "stream", false);
  r.sampling = d.sampling;
  r.sampling.temperature = number(b, "temperature", 0, 1, d.sampling.temperature);
  r.sampling.top_p = number(b, "top_p", 0, 1, d.sampling.top_p);
  r.sampling.top_k = integer(b, "top_k", 0, d.sampling.top_k);
  r.sampling.seed = std::random_device{}();
  if (!field(b, "max_tokens")) throw invalid_request("'max_tokens' is required", "max_tokens");
  r.max_tokens = integer(b, "max_tokens", 1, 0);
  if (const json* s = field(b, "stop_sequences")) {
    if (!s->is_array() || s->size() > 16)
      throw invalid_request("'stop_sequences' must be a list of at most 16 strings", "stop_sequences");
    for (const json& x : *s) {
      if (!x.is_string()) throw invalid_request("'stop_sequences' must be a list of strings", "stop_sequences");
      r.stop.push_back(x.get<std::string>());
    }
  }
  r.messages = ojson::array();
  if (const json* sys = field(b, "system"))
    r.messages.push_back({{"role", "system"}, {"content", text_of(*sys, "system")}});
  const json* msgs = field(b, "messages");
  if (!msgs || !msgs->is_array() || msgs->empty())
    throw invalid_request("'messages' must be a non-empty list of messages", "messages");
  for (size_t i = 0; i < msgs->size(); ++i) add_message((*msgs)[i], i, r.messages);
  bool use_tools = true;
  std::string forced;  // tool_choice any (every tool: "*") or tool (its name): the reply is one call
  if (const json* c = field(b, "tool_choice")) {
    const std::string type =
        c->is_object() && c->contains("type") && (*c)["type"].is_string() ? (*c)["type"].get<std::string>() : "";
    if (type == "tool" && (!c->contains("name") || !(*c)["name"].is_string()))
      throw invalid_request("tool_choice 'tool' needs a 'name'", "tool_choice");
    if (type != "auto" && type != "none" && type != "any" && type != "tool")
      throw invalid_request("'tool_choice' must be {\"type\": auto, any, tool (with a name) or none}", "tool_choice");
    use_tools = type != "none";
    if (type == "any" || type == "tool") forced = type == "any" ? "*" : (*c)["name"].get<std::string>();
  }
  if (field(b, "tools") && use_tools)
    r.tools = flat_tools(ob["tools"], "input_schema", false, "{\"name\": ..., \"input_schema\": {...}}");
  if (!forced.empty()) require_tool_call(r, forced == "*" ? "" : forced, field(b, "tool_choice")->dump());
  if (const json* th = field(b, "thinking")) {
    if (!th->is_object() || !th->contains("type") || ((*th)["type"] != "enabled" && (*th)["type"] != "disabled"))
      throw invalid_request("'thinking' must be {\"type\": \"enabled\" or \"disabled\"}", "thinking");
    r.template_kwargs = {{"enable_thinking", (*th)["type"] == "enabled"}};
  }
  return r;
}

namespace {

// Content blocks as they come: consecutive text (or thinking) extends the open block; a tool call is a block of
// its own.
class MessagesReply : public ReplyFormat {
 public:
  MessagesReply(std::string model, int64_t input_tokens)
      : model_(std::move(model)), id_(random_id("msg_")), input_tokens_(input_tokens) {}

  std::vector<std::string> open() override {
    json msg = message(json::array(), nullptr);
    msg["usage"] = {{"input_tokens", input_tokens_}, {"output_tokens", 0}};
    return {sse({{"type", "message_start"}, {"message", msg}}, "message_start")};
  }

  std::vector<std::string> frames(const JobEvent& e) override {
    std::vector<std::string> out;
    if (e.kind == JobEvent::Kind::Done) {
      done_ = e;
      return out;
    }
    if (e.kind != JobEvent::Kind::Output) return out;
    const OutputEvent& o = e.output;
    if (o.kind == OutputEvent::Kind::ToolCall) {
      close_block(out);
      json block = tool_use(o.call);
      json input = block["input"];
      block["input"] = json::object();
      out.push_back(
          sse({{"type", "content_block_start"}, {"index", index_}, {"content_block", block}}, "content_block_start"));
      out.push_back(sse({{"type", "content_block_delta"},
                         {"index", index_},
                         {"delta", {{"type", "input_json_delta"}, {"partial_json", input.dump()}}}},
                        "content_block_delta"));
      out.push_back(sse({{"type", "content_block_stop"}, {"index", index_++}}, "content_block_stop"));
      return out;
    }
    const bool thinking = o.kind == OutputEvent::Kind::Reasoning;
    const std::string type = thinking ? "thinking" : "text";
    if (open_ != type) {
      close_block(out);
      json block = thinking ? json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                            : json{{"type", "text"}, {"text", ""}};
      out.push_back(
          sse({{"type", "content_block_start"}, {"index", index_}, {"content_block", block}}, "content_block_start"));
      open_ = type;
    }
    json delta = thinking ? json{{"type", "thinking_delta"}, {"thinking", o.text}}
                          : json{{"type", "text_delta"}, {"text", o.text}};
    out.push_back(sse({{"type", "content_block_delta"}, {"index", index_}, {"delta", delta}}, "content_block_delta"));
    return out;
  }

  std::vector<std::string> close() override {
    std::vector<std::string> out;
    close_block(out);
    out.push_back(sse({{"type", "message_delta"},
                       {"delta", {{"stop_reason", stop_reason()}, {"stop_sequence", stop_sequence()}}},
                       {"usage", {{"output_tokens", done_.usage.completion_tokens}}}},
                      "message_delta"));
    out.push_back(sse({{"type", "message_stop"}}, "message_stop"));
    return out;
  }

  void absorb(const JobEvent& e) override {
    if (e.kind == JobEvent::Kind::Done) done_ = e;
    if (e.kind != JobEvent::Kind::Output) return;
    const OutputEvent& o = e.output;
    if (o.kind == OutputEvent::Kind::ToolCall) {
      blocks_.push_back(tool_use(o.call));
      return;
    }
    const bool thinking = o.kind == OutputEvent::Kind::Reasoning;
    const char* key = thinking ? "thinking" : "text";
    if (blocks_.empty() || blocks_.back()["type"] != key)
      blocks_.push_back(thinking ? json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                                 : json{{"type", "text"}, {"text", ""}});
    blocks_.back()[key] = blocks_.back()[key].get<std::string>() + o.text;
  }

  json reply() override {
    json msg = message(blocks_, stop_reason());
    msg["usage"] = {{"input_tokens", done_.usage.prompt_tokens - done_.usage.cached_tokens},
                    {"cache_read_input_tokens", done_.usage.cached_tokens},
                    {"output_tokens", done_.usage.completion_tokens}};
    return msg;
  }

  json error_body(const ApiError& e) const override { return anthropic_error(e); }
  std::vector<std::string> failed(const ApiError& e) override { return {sse(anthropic_error(e), "error")}; }

 private:
  json message(json content, json stop) const {
    return {{"id", id_},
            {"type", "message"},
            {"role", "assistant"},
            {"model", model_},
            {"content", std::move(content)},
            {"stop_reason", std::move(stop)},
            {"stop_sequence", stop_sequence()}};
  }
  json tool_use(const ToolCall& c) const {
    json input = json::parse(c.arguments, nullptr, false);
    if (input.is_discarded() || !input.is_object()) input = json::object();
    return {{"type", "tool_use"}, {"id", random_id("toolu_")}, {"name", c.name}, {"input", input}};
  }
  std::string stop_reason() const {
    if (!done_.stop_sequence.empty()) return "stop_sequence";
    return done_.finish_reason == "length"       ? "max_tokens"
           : done_.finish_reason == "tool_calls" ? "tool_use"
                                                 : "end_turn";
  }
  json stop_sequence() const { return done_.stop_sequence.empty() ? json(nullptr) : json(done_.stop_sequence); }
  void close_block(std::vector<std::string>& out) {
    if (open_.empty()) return;
    out.push_back(sse({{"type", "content_block_stop"}, {"index", index_++}}, "content_block_stop"));
    open_.clear();
  }

  std::string model_, id_;
  int64_t input_tokens_;
  JobEvent done_ = JobEvent::done("stop");
  json blocks_ = json::array();
  std::string open_;  // the streamed block still open: "text", "thinking" or none
  int index_ = 0;
};

}  // namespace

std::unique_ptr<ReplyFormat> messages_reply(std::string model, int64_t input_tokens) {
  return std::make_unique<MessagesReply>(std::move(model), input_tokens);
}

}  // namespace tg::llm::server
