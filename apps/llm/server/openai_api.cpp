// Field rules follow OpenAI's API reference (types, ranges, max_tokens vs max_completion_tokens, stop as a string
// or a list, stream_options.include_usage); top_k and min_p are accepted as llama.cpp's server accepts them.
#include "server/openai_api.hpp"

#include <algorithm>
#include <chrono>
#include <random>

namespace tg::llm::server {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

json ApiError::body() const {
  json e = {{"message", what()},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code.empty() ? json(nullptr) : json(code)}};
  return {{"error", e}};
}

ApiError invalid_request(const std::string& message, const std::string& param) {
  return ApiError(400, "invalid_request_error", message, param);
}

const json* field(const json& b, const char* key) {
  auto it = b.find(key);
  return it == b.end() || it->is_null() ? nullptr : &*it;
}

double number(const json& b, const char* key, double lo, double hi, double def) {
  const json* v = field(b, key);
  if (!v) return def;
  if (!v->is_number()) throw invalid_request(std::string("'") + key + "' must be a number", key);
  double x = v->get<double>();
  if (!(x >= lo && x <= hi))
    throw invalid_request(std::string("'") + key + "' must be between " + json(lo).dump() + " and " + json(hi).dump(),
                          key);
  return x;
}

int64_t integer(const json& b, const char* key, int64_t lo, int64_t def) {
  const json* v = field(b, key);
  if (!v) return def;
  if (!v->is_number_integer()) throw invalid_request(std::string("'") + key + "' must be an integer", key);
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw invalid_request(std::string("'") + key + "' is too large", key);
  int64_t x = v->get<int64_t>();
  if (x < lo) throw invalid_request(std::string("'") + key + "' must be at least " + std::to_string(lo), key);
  return x;
}

bool boolean(const json& b, const char* key, bool def) {
  const json* v = field(b, key);
  if (!v) return def;
  if (!v->is_boolean()) throw invalid_request(std::string("'") + key + "' must be a boolean", key);
  return v->get<bool>();
}

constrain::Node compiled(const ojson& schema, const std::string& param) {
  try {
    return constrain::compile_schema(schema);
  } catch (const constrain::SchemaError& e) {
    throw invalid_request(std::string("unsupported schema in '") + param + "': " + e.what(), param);
  }
}

// {"type": "text"}: none; "json_object": any object; "json_schema": {"json_schema": {"name", "schema", "strict"}}
std::optional<ConstraintSpec> response_format(const ojson& rf) {
  const std::string type =
      rf.is_object() && rf.contains("type") && rf["type"].is_string() ? rf["type"].get<std::string>() : "";
  if (type == "text") return std::nullopt;
  if (type == "json_object") return ConstraintSpec{constrain::any_object(), {}, {}};
  if (type != "json_schema")
    throw invalid_request("'response_format.type' must be text, json_object or json_schema", "response_format");
  if (!rf.contains("json_schema") || !rf["json_schema"].is_object() || !rf["json_schema"].contains("schema"))
    throw invalid_request("'response_format.json_schema.schema' is required", "response_format");
  return ConstraintSpec{compiled(rf["json_schema"]["schema"], "response_format"), {}, {}};
}

// tool_choice "required" (any of the tools) or {"type": "function", "function": {"name"}}: the output is one
// call in the Hermes format the output parser reads, <tool_call>{"name": ..., "arguments": {...}}</tool_call>,
// its arguments constrained to the tool's parameters.
ConstraintSpec tool_call_constraint(const ojson& tools, const std::string& only) {
  std::vector<constrain::Node> options;
  for (const ojson& t : tools) {
    const std::string name = t["function"]["name"].get<std::string>();
    if (!only.empty() && name != only) continue;
    // each tool's parameters compile as their own schema: their "#" and $defs are theirs, not the wrapper's
    const constrain::Node params = compiled(
        t["function"].contains("parameters") ? t["function"]["parameters"] : ojson{{"type", "object"}}, "tools");
    options.push_back(constrain::closed_object({{"name", constrain::constant(name)}, {"arguments", params}}));
  }
  if (options.empty())
    throw invalid_request("'tool_choice' names the function '" + only + "', which 'tools' does not define",
                          "tool_choice");
  // each tool is one path of the matcher until its name is written: OpenAI's own bound on tools keeps them all
  if (options.size() > constrain::JsonMatcher::kMaxPaths)
    throw invalid_request(
        "a required tool call chooses among at most " + std::to_string(constrain::JsonMatcher::kMaxPaths) + " tools",
        "tools");
  return ConstraintSpec{options.size() == 1 ? options[0] : constrain::one_of(options), "<tool_call>", "</tool_call>"};
}

void check_model(const json& b, const RequestDefaults& d) {
  const json* m = field(b, "model");
  if (!m) return;
  if (!m->is_string()) throw invalid_request("'model' must be a string", "model");
  if (m->get<std::string>() != d.model_id)
    throw ApiError(404, "invalid_request_error",
                   "The model '" + m->get<std::string>() + "' does not exist; this server serves '" + d.model_id + "'",
                   "model", "model_not_found");
}

ojson flat_tools(const ojson& tools, const char* schema_key, bool typed, const std::string& shape) {
  if (!tools.is_array()) throw invalid_request("'tools' must be a list", "tools");
  ojson out = ojson::array();
  for (const ojson& tool : tools) {
    if (!tool.is_object() || (typed && tool.value("type", "") != "function") || !tool.contains("name") ||
        !tool["name"].is_string())
      throw invalid_request("each tool must be " + shape, "tools");
    out.push_back({{"type", "function"},
                   {"function",
                    {{"name", tool["name"]},
                     {"description", tool.value("description", "")},
                     {"parameters", tool.contains(schema_key) ? tool[schema_key] : ojson::object()}}}});
  }
  return out.empty() ? ojson(nullptr) : out;
}

void require_tool_call(ChatRequest& r, const std::string& only, const std::string& choice) {
  if (r.tools.is_null()) throw invalid_request("'tool_choice' " + choice + " needs 'tools'", "tool_choice");
  if (r.constraint)
    throw invalid_request("a response format and a required tool call cannot both constrain the reply", "tool_choice");
  r.constraint = tool_call_constraint(r.tools, only);
  r.tool_call = true;
}

namespace {

constexpr int64_t kMaxTopLogprobs = 20;  // OpenAI's bound for top_logprobs
constexpr int64_t kMaxChoices = 128;     // OpenAI's bound for n (this server's: its --parallel slots)

GenerationRequest parse_common(const json& b, const ojson& ob, const RequestDefaults& d) {
  if (!b.is_object()) throw invalid_request("the request body must be a JSON object");
  check_model(b, d);
  GenerationRequest r;
  r.stream = boolean(b, "stream", false);
  if (const json* so = field(b, "stream_options")) {
    if (!so->is_object()) throw invalid_request("'stream_options' must be an object", "stream_options");
    r.include_usage = boolean(*so, "include_usage", false);
  }
  r.sampling = d.sampling;
  r.sampling.temperature = number(b, "temperature", 0, 2, d.sampling.temperature);
  r.sampling.top_p = number(b, "top_p", 0, 1, d.sampling.top_p);
  r.sampling.min_p = number(b, "min_p", 0, 1, d.sampling.min_p);
  r.sampling.top_k = integer(b, "top_k", 0, d.sampling.top_k);
  if (field(b, "seed"))
    r.sampling.seed = static_cast<uint64_t>(integer(b, "seed", INT64_MIN, 0));
  else
    r.sampling.seed = std::random_device{}();
  r.n = static_cast<int>(std::min<int64_t>(integer(b, "n", 1, 1), kMaxChoices + 1));
  if (r.n > kMaxChoices) throw invalid_request("'n' must be at most " + std::to_string(kMaxChoices), "n");
  r.max_tokens = integer(b, "max_tokens", 1, d.max_tokens);
  r.max_tokens = integer(b, "max_completion_tokens", 1, r.max_tokens);
  if (const json* s = field(b, "stop")) {
    if (s->is_string()) {
      r.stop.push_back(s->get<std::string>());
    } else if (s->is_array() && s->size() <= 16) {
      for (const auto& x : *s) {
        if (!x.is_string()) throw invalid_request("'stop' must be a string or a list of strings", "stop");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      throw invalid_request("'stop' must be a string or a list of at most 16 strings", "stop");
    }
  }
  if (field(b, "response_format")) r.constraint = response_format(ob["response_format"]);
  return r;
}

// A message's content as the template sees it: a string (text parts joined), or null.
ojson message_content(const json& m, size_t i) {
  const json* c = field(m, "content");
  if (!c) return nullptr;
  if (c->is_string()) return c->get<std::string>();
  const std::string where = "messages[" + std::to_string(i) + "].content";
  if (!c->is_array()) throw invalid_request("'" + where + "' must be a string or a list of content parts", where);
  std::string text;
  for (const auto& part : *c) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      throw invalid_request("each part of '" + where + "' must be an object with a 'type'", where);
    if (part["type"] != "text")
      throw invalid_request(
          "content parts of type '" + part["type"].get<std::string>() + "' are not supported: this model reads text",
          where);
    if (!part.contains("text") || !part["text"].is_string())
      throw invalid_request("a text part of '" + where + "' needs a string 'text'", where);
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace

ChatRequest parse_chat_request(const json& b, const ojson& ob, const RequestDefaults& d) {
  ChatRequest r{parse_common(b, ob, d), {}, nullptr, nullptr};
  const int64_t top = integer(b, "top_logprobs", 0, 0);
  if (top > kMaxTopLogprobs)
    throw invalid_request("'top_logprobs' must be at most " + std::to_string(kMaxTopLogprobs), "top_logprobs");
  if (field(b, "top_logprobs") && !boolean(b, "logprobs", false))
    throw invalid_request("'top_logprobs' needs 'logprobs' to be true", "top_logprobs");
  r.sampling.logprobs = boolean(b, "logprobs", false) ? top : -1;
  const json* msgs = field(b, "messages");
  if (!msgs || !msgs->is_array()) throw invalid_request("'messages' must be a list of messages", "messages");
  if (msgs->empty()) throw invalid_request("'messages' must not be empty", "messages");
  r.messages = ojson::array();
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json& m = (*msgs)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw invalid_request("'" + where + "' must be an object", where);
    const json* role = field(m, "role");
    if (!role || !role->is_string()) throw invalid_request("'" + where + ".role' must be a string", where + ".role");
    std::string rs = role->get<std::string>();
    if (rs == "developer") rs = "system";  // OpenAI's newer name; chat templates know "system"
    if (rs != "system" && rs != "user" && rs != "assistant" && rs != "tool")
      throw invalid_request("'" + where + ".role' must be one of system, developer, user, assistant, tool",
                            where + ".role");
    ojson out = ojson::parse(m.dump());
    out["role"] = rs;
    out["content"] = message_content(m, i);
    if (out["content"].is_null() && !(rs == "assistant" && field(m, "tool_calls")))
      throw invalid_request("'" + where + ".content' is required", where + ".content");
    r.messages.push_back(std::move(out));
  }
  if (const json* t = field(b, "tools")) {
    if (!t->is_array()) throw invalid_request("'tools' must be a list", "tools");
    for (const auto& tool : *t)
      if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object() ||
          !tool["function"].contains("name") || !tool["function"]["name"].is_string())
        throw invalid_request("each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}", "tools");
    if (!t->empty()) r.tools = ob["tools"];
  }
  if (const json* c = field(b, "tool_choice")) {
    if (c->is_string() && (*c == "auto" || *c == "none")) {
      if (*c == "none") r.tools = nullptr;
    } else {
      std::string only;
      if (c->is_object() && c->value("type", "") == "function" && c->contains("function") &&
          (*c)["function"].is_object() && (*c)["function"].contains("name") && (*c)["function"]["name"].is_string())
        only = (*c)["function"]["name"].get<std::string>();
      else if (!(c->is_string() && *c == "required"))
        throw invalid_request(
            "'tool_choice' must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\": ...}}",
            "tool_choice");
      require_tool_call(r, only, c->dump());
    }
  }
  if (const json* k = field(b, "chat_template_kwargs")) {
    if (!k->is_object()) throw invalid_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    r.template_kwargs = ojson::parse(k->dump());
  }
  return r;
}

CompletionRequest parse_completion_request(const json& b, const ojson& ob, const RequestDefaults& d) {
  // max_tokens 0 with echo scores the prompt alone (what evaluation harnesses send)
  const bool score_only = boolean(b, "echo", false) && field(b, "max_tokens") && b["max_tokens"] == 0;
  json rest = b;
  if (score_only) rest.erase("max_tokens");
  CompletionRequest r{parse_common(rest, ob, d), {}, {}, false, score_only};
  const json* p = field(b, "prompt");
  if (p && p->is_array() && p->size() == 1 && !(*p)[0].is_number()) p = &(*p)[0];
  if (p && p->is_array() && std::all_of(p->begin(), p->end(), [](const json& t) { return t.is_number_integer(); })) {
    for (const json& t : *p) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX)
        throw invalid_request("'prompt' token ids must be non-negative integers", "prompt");
      r.prompt_ids.push_back(t.get<int32_t>());
    }
  } else if (!p || !p->is_string()) {
    throw invalid_request("'prompt' must be a string, a list of one string, or a list of token ids", "prompt");
  } else {
    r.prompt = p->get<std::string>();
  }
  if (field(b, "logprobs")) {  // legacy: the number of alternatives, not a flag
    r.sampling.logprobs = integer(b, "logprobs", 0, 0);
    if (r.sampling.logprobs > kMaxTopLogprobs)
      throw invalid_request("'logprobs' must be at most " + std::to_string(kMaxTopLogprobs), "logprobs");
  }
  r.echo = boolean(b, "echo", false);
  return r;
}

// ---- replies

namespace {
std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(prefix) + buf;
}
}  // namespace

ReplyBuilder::ReplyBuilder(bool chat, std::string model_id, bool logprobs, std::string echo, int n)
    : chat_(chat),
      logprobs_(logprobs),
      echo_(std::move(echo)),
      model_(std::move(model_id)),
      id_(random_id(chat ? "chatcmpl-" : "cmpl-")),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      choices_(static_cast<size_t>(std::max(n, 1))) {
  // with logprobs, the echo's tokens come first; without, the completion's offsets start past the echo
  for (Choice& c : choices_) c.text_offset = logprobs ? 0 : static_cast<int64_t>(echo_.size());
}

json ReplyBuilder::chunk(json choice) const {
  return {{"id", id_},
          {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
          {"created", created_},
          {"model", model_},
          {"choices", json::array({std::move(choice)})}};
}

json ReplyBuilder::usage_json() const {
  return {{"prompt_tokens", usage_.prompt_tokens},
          {"completion_tokens", usage_.completion_tokens},
          {"total_tokens", usage_.prompt_tokens + usage_.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", usage_.cached_tokens}}}};
}

json ReplyBuilder::tool_call_json(const ToolCall& c, Choice& to) {
  return {{"index", to.n_calls++},
          {"id", random_id("call_")},
          {"type", "function"},
          {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
}

ReplyBuilder::Choice& ReplyBuilder::choice(const JobEvent& e) {
  return choices_[static_cast<size_t>(std::clamp<int>(e.choice, 0, static_cast<int>(choices_.size()) - 1))];
}

// One choice ended: the prompt is counted once, the completions' tokens add up.
void ReplyBuilder::done(const JobEvent& e) {
  choice(e).finish = e.finish_reason;
  usage_.prompt_tokens = e.usage.prompt_tokens;
  usage_.cached_tokens = e.usage.cached_tokens;
  usage_.completion_tokens += e.usage.completion_tokens;
}

namespace {
json byte_list(const std::string& bytes) {
  json out = json::array();
  for (unsigned char c : bytes) out.push_back(static_cast<int>(c));
  return out;
}
json completion_lists() {
  return {{"tokens", json::array()},
          {"token_logprobs", json::array()},
          {"top_logprobs", json::array()},
          {"text_offset", json::array()}};
}
}  // namespace

void ReplyBuilder::add_logprobs(Choice& c, const TokenLogprobs& t) {
  if (chat_) {
    if (c.pending.is_null()) c.pending = json::array();
    json top = json::array();
    for (const TokenChoice& x : t.top)
      top.push_back({{"token", x.text}, {"logprob", x.logprob}, {"bytes", byte_list(x.bytes)}});
    c.pending.push_back({{"token", t.chosen.text},
                         {"logprob", t.chosen.logprob},
                         {"bytes", byte_list(t.chosen.bytes)},
                         {"top_logprobs", top}});
    return;
  }
  if (c.pending.is_null()) c.pending = completion_lists();
  json top = json::object();
  for (const TokenChoice& x : t.top) top[x.text] = x.logprob;
  c.pending["tokens"].push_back(t.chosen.text);
  c.pending["token_logprobs"].push_back(t.unscored ? json(nullptr) : json(t.chosen.logprob));
  c.pending["top_logprobs"].push_back(t.unscored ? json(nullptr) : top);
  c.pending["text_offset"].push_back(c.text_offset);
  c.text_offset += t.text_bytes;
}

json ReplyBuilder::take_logprobs(Choice& c) {
  if (!logprobs_) return nullptr;
  json out = c.pending.is_null() ? (chat_ ? json::array() : completion_lists()) : std::move(c.pending);
  c.pending = nullptr;
  return chat_ ? json{{"content", out}} : out;
}

std::vector<json> ReplyBuilder::first_chunks() const {
  std::vector<json> out;
  for (size_t i = 0; i < choices_.size(); ++i) {
    if (!chat_ && echo_.empty()) continue;
    out.push_back(chat_ ? chunk({{"index", i},
                                 {"delta", {{"role", "assistant"}, {"content", ""}}},
                                 {"logprobs", nullptr},
                                 {"finish_reason", nullptr}})
                        : chunk({{"index", i}, {"text", echo_}, {"logprobs", nullptr}, {"finish_reason", nullptr}}));
  }
  return out;
}

std::vector<json> ReplyBuilder::chunks(const JobEvent& e) {
  Choice& c = choice(e);
  if (e.kind == JobEvent::Kind::Done) {
    done(e);
    return {};
  }
  if (e.kind == JobEvent::Kind::Logprobs) add_logprobs(c, e.logprobs);
  if (e.kind != JobEvent::Kind::Output) return {};
  const OutputEvent& o = e.output;
  if (!chat_)
    return {chunk({{"index", e.choice}, {"text", o.text}, {"logprobs", take_logprobs(c)}, {"finish_reason", nullptr}})};
  json delta;
  if (o.kind == OutputEvent::Kind::Content) delta = {{"content", o.text}};
  if (o.kind == OutputEvent::Kind::Reasoning) delta = {{"reasoning_content", o.text}};
  if (o.kind == OutputEvent::Kind::ToolCall) delta = {{"tool_calls", json::array({tool_call_json(o.call, c)})}};
  return {chunk({{"index", e.choice}, {"delta", delta}, {"logprobs", take_logprobs(c)}, {"finish_reason", nullptr}})};
}

std::vector<json> ReplyBuilder::final_chunks(bool include_usage) {
  std::vector<json> out;
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    // the tokens whose text the parser still held (or dropped: past a stop string) go with the last chunk
    json lp = c.pending.is_null() ? json(nullptr) : take_logprobs(c);
    json last = chat_ ? json{{"index", i}, {"delta", json::object()}, {"logprobs", lp}, {"finish_reason", c.finish}}
                      : json{{"index", i}, {"text", ""}, {"logprobs", lp}, {"finish_reason", c.finish}};
    out.push_back(chunk(std::move(last)));
  }
  if (include_usage) {
    json u = chunk(nullptr);
    u["choices"] = json::array();
    u["usage"] = usage_json();
    out.push_back(std::move(u));
  }
  return out;
}

void ReplyBuilder::absorb(const JobEvent& e) {
  Choice& c = choice(e);
  if (e.kind == JobEvent::Kind::Done) done(e);
  if (e.kind == JobEvent::Kind::Logprobs) add_logprobs(c, e.logprobs);
  if (e.kind != JobEvent::Kind::Output) return;
  if (!chat_ || e.output.kind == OutputEvent::Kind::Content) c.content += e.output.text;
  if (chat_ && e.output.kind == OutputEvent::Kind::Reasoning) c.reasoning += e.output.text;
  if (chat_ && e.output.kind == OutputEvent::Kind::ToolCall) c.tool_calls.push_back(tool_call_json(e.output.call, c));
}

json ReplyBuilder::reply() {
  json list = json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    if (chat_) {
      json msg = {{"role", "assistant"},
                  {"content", c.content.empty() && !c.tool_calls.empty() ? json(nullptr) : json(c.content)}};
      if (!c.reasoning.empty()) msg["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        msg["tool_calls"] = c.tool_calls;
        for (auto& call : msg["tool_calls"]) call.erase("index");
      }
      list.push_back({{"index", i}, {"message", msg}, {"logprobs", take_logprobs(c)}, {"finish_reason", c.finish}});
    } else {
      list.push_back(
          {{"index", i}, {"text", echo_ + c.content}, {"logprobs", take_logprobs(c)}, {"finish_reason", c.finish}});
    }
  }
  return {{"id", id_},
          {"object", chat_ ? "chat.completion" : "text_completion"},
          {"created", created_},
          {"model", model_},
          {"choices", std::move(list)},
          {"usage", usage_json()}};
}

}  // namespace tg::llm::server
