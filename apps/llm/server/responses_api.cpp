// Field rules follow OpenAI's Responses API reference: input as a string or items, instructions as the system
// message, function tools ({"type": "function", "name", "parameters"}), tool_choice auto / none / required / a
// function, max_output_tokens, temperature / top_p, text.format text / json_object / json_schema.
#include "server/responses_api.hpp"

#include <chrono>
#include <random>

namespace tg::llm::server {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return std::string(prefix) + buf;
}

// A message item's content: a string, or parts whose text is joined (input_text, output_text, text).
std::string content_text(const json& c, const std::string& where) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) throw invalid_request("'" + where + "' must be a string or a list of content parts", where);
  std::string text;
  for (const json& p : c) {
    const std::string type =
        p.is_object() && p.contains("type") && p["type"].is_string() ? p["type"].get<std::string>() : "";
    if ((type == "input_text" || type == "output_text" || type == "text") && p.contains("text") &&
        p["text"].is_string())
      text += p["text"].get<std::string>();
    else if (type == "input_image" || type == "input_file" || type == "input_audio")
      throw invalid_request("content parts of type '" + type + "' are not supported: this model reads text", where);
    else
      throw invalid_request("'" + where + "' holds a part that is not input_text or output_text", where);
  }
  return text;
}

// One input item as the templates' messages; consecutive function calls join one assistant message.
void add_item(const json& it, size_t i, ojson& out) {
  const std::string where = "input[" + std::to_string(i) + "]";
  if (!it.is_object()) throw invalid_request("'" + where + "' must be an object", where);
  const std::string type = it.contains("type") && it["type"].is_string() ? it["type"].get<std::string>() : "message";
  if (type == "message") {
    const json* role = field(it, "role");
    if (!role || !role->is_string()) throw invalid_request("'" + where + ".role' must be a string", where + ".role");
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";
    if (r != "system" && r != "user" && r != "assistant")
      throw invalid_request("'" + where + ".role' must be user, assistant, system or developer", where + ".role");
    const json* c = field(it, "content");
    if (!c) throw invalid_request("'" + where + ".content' is required", where + ".content");
    out.push_back({{"role", r}, {"content", content_text(*c, where + ".content")}});
  } else if (type == "function_call") {
    if (!it.contains("name") || !it["name"].is_string() || !it.contains("arguments") || !it["arguments"].is_string())
      throw invalid_request("'" + where + "' (function_call) needs a string name and arguments", where);
    ojson call = {{"id", it.value("call_id", "")},
                  {"type", "function"},
                  {"function", {{"name", it["name"]}, {"arguments", it["arguments"]}}}};
    if (!out.empty() && out.back()["role"] == "assistant" && out.back().contains("tool_calls"))
      out.back()["tool_calls"].push_back(call);
    else
      out.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", ojson::array({call})}});
  } else if (type == "function_call_output") {
    const json* o = field(it, "output");
    if (!o) throw invalid_request("'" + where + ".output' is required", where + ".output");
    out.push_back({{"role", "tool"},
                   {"tool_call_id", it.value("call_id", "")},
                   {"content", o->is_string() ? o->get<std::string>() : content_text(*o, where + ".output")}});
  } else if (type == "reasoning") {
    // an earlier turn's reasoning: templates drop it from the history
  } else {
    throw invalid_request("input items of type '" + type + "' are not supported", where);
  }
}

}  // namespace

ChatRequest parse_responses_request(const json& b, const ojson& ob, const RequestDefaults& d) {
  if (!b.is_object()) throw invalid_request("the request body must be a JSON object");
  if (const json* m = field(b, "model"); m && (!m->is_string() || m->get<std::string>() != d.model_id))
    throw ApiError(404, "invalid_request_error",
                   "The model '" + (m->is_string() ? m->get<std::string>() : m->dump()) +
                       "' does not exist; this server serves '" + d.model_id + "'",
                   "model", "model_not_found");
  if (field(b, "previous_response_id"))
    throw invalid_request(
        "'previous_response_id' is not supported: this server keeps no responses; send the whole conversation as input",
        "previous_response_id");
  ChatRequest r{};
  r.stream = boolean(b, "stream", false);
  r.sampling = d.sampling;
  r.sampling.temperature = number(b, "temperature", 0, 2, d.sampling.temperature);
  r.sampling.top_p = number(b, "top_p", 0, 1, d.sampling.top_p);
  r.sampling.seed = std::random_device{}();
  r.max_tokens = integer(b, "max_output_tokens", 1, d.max_tokens);
  if (const json* t = field(b, "text")) {  // text.format: the Responses API's response_format, flat
    const json* f = t->is_object() ? field(*t, "format") : nullptr;
    if (!t->is_object() || (f && !f->is_object()))
      throw invalid_request("'text.format' must be an object", "text.format");
    if (f && f->value("type", "") == "json_schema") {
      if (!f->contains("schema")) throw invalid_request("'text.format.schema' is required", "text.format");
      r.constraint = ConstraintSpec{compiled(ob["text"]["format"]["schema"], "text.format"), {}, {}};
    } else if (f && f->value("type", "") == "json_object") {
      r.constraint = ConstraintSpec{constrain::any_object(), {}, {}};
    } else if (f && f->value("type", "") != "text") {
      throw invalid_request("'text.format.type' must be text, json_object or json_schema", "text.format");
    }
  }
  r.messages = ojson::array();
  if (const json* ins = field(b, "instructions")) {
    if (!ins->is_string()) throw invalid_request("'instructions' must be a string", "instructions");
    r.messages.push_back({{"role", "system"}, {"content", ins->get<std::string>()}});
  }
  const json* input = field(b, "input");
  if (!input) throw invalid_request("'input' is required", "input");
  if (input->is_string()) {
    r.messages.push_back({{"role", "user"}, {"content", input->get<std::string>()}});
  } else if (input->is_array() && !input->empty()) {
    for (size_t i = 0; i < input->size(); ++i) add_item((*input)[i], i, r.messages);
  } else {
    throw invalid_request("'input' must be a string or a non-empty list of items", "input");
  }
  bool use_tools = true;
  std::string forced;  // tool_choice required (every tool: "*") or {"type": "function", "name"}: the reply is one call
  if (const json* c = field(b, "tool_choice")) {
    if (c->is_object() && c->value("type", "") == "function" && c->contains("name") && (*c)["name"].is_string())
      forced = (*c)["name"].get<std::string>();
    else if (c->is_string() && *c == "required")
      forced = "*";
    else if (!c->is_string() || (*c != "auto" && *c != "none"))
      throw invalid_request("'tool_choice' must be auto, none, required or {\"type\": \"function\", \"name\": ...}",
                            "tool_choice");
    use_tools = !(c->is_string() && *c == "none");
  }
  if (field(b, "tools") && use_tools)
    r.tools = flat_tools(ob["tools"], "parameters", true,
                         "a function tool: {\"type\": \"function\", \"name\": ..., \"parameters\": {...}}");
  if (!forced.empty()) require_tool_call(r, forced == "*" ? "" : forced, field(b, "tool_choice")->dump());
  return r;
}

namespace {

// Output items as they come: text extends the open message (or reasoning) item; each tool call is an item.
class ResponsesReply : public ReplyFormat {
 public:
  explicit ResponsesReply(std::string model)
      : model_(std::move(model)),
        id_(random_id("resp_")),
        created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                     .count()) {}

  std::vector<std::string> open() override {
    json r = response("in_progress");
    return {event("response.created", {{"response", r}}), event("response.in_progress", {{"response", r}})};
  }

  std::vector<std::string> frames(const JobEvent& e) override {
    std::vector<std::string> out;
    if (e.kind == JobEvent::Kind::Done) done_ = e;
    if (e.kind != JobEvent::Kind::Output) return out;
    const OutputEvent& o = e.output;
    if (o.kind == OutputEvent::Kind::ToolCall) {
      close_item(out);
      json item = {{"type", "function_call"}, {"id", random_id("fc_")}, {"call_id", random_id("call_")},
                   {"name", o.call.name},     {"arguments", ""},        {"status", "in_progress"}};
      const int index = static_cast<int>(items_.size());
      out.push_back(event("response.output_item.added", {{"output_index", index}, {"item", item}}));
      out.push_back(event("response.function_call_arguments.delta",
                          {{"item_id", item["id"]}, {"output_index", index}, {"delta", o.call.arguments}}));
      out.push_back(event("response.function_call_arguments.done",
                          {{"item_id", item["id"]}, {"output_index", index}, {"arguments", o.call.arguments}}));
      item["arguments"] = o.call.arguments;
      item["status"] = "completed";
      items_.push_back(item);
      out.push_back(event("response.output_item.done", {{"output_index", index}, {"item", item}}));
      return out;
    }
    const bool reasoning = o.kind == OutputEvent::Kind::Reasoning;
    if (open_ != (reasoning ? "reasoning" : "message")) {
      close_item(out);
      open_ = reasoning ? "reasoning" : "message";
      items_.push_back(reasoning ? json{{"type", "reasoning"}, {"id", random_id("rs_")}, {"summary", json::array()}}
                                 : json{{"type", "message"},
                                        {"id", random_id("msg_")},
                                        {"status", "in_progress"},
                                        {"role", "assistant"},
                                        {"content", json::array()}});
      const int index = static_cast<int>(items_.size()) - 1;
      out.push_back(event("response.output_item.added", {{"output_index", index}, {"item", items_.back()}}));
      if (!reasoning)
        out.push_back(event("response.content_part.added", {{"item_id", items_.back()["id"]},
                                                            {"output_index", index},
                                                            {"content_index", 0},
                                                            {"part", text_part("")}}));
      text_.clear();
    }
    text_ += o.text;
    const int index = static_cast<int>(items_.size()) - 1;
    out.push_back(
        event(reasoning ? "response.reasoning_text.delta" : "response.output_text.delta",
              {{"item_id", items_.back()["id"]}, {"output_index", index}, {"content_index", 0}, {"delta", o.text}}));
    return out;
  }

  std::vector<std::string> close() override {
    std::vector<std::string> out;
    close_item(out);
    out.push_back(event(status() == "completed" ? "response.completed" : "response.incomplete",
                        {{"response", response(status())}}));
    return out;
  }

  void absorb(const JobEvent& e) override {
    std::vector<std::string> ignored = frames(e);
    if (e.kind == JobEvent::Kind::Done) close_item(ignored);
  }

  json reply() override { return response(status()); }

  std::vector<std::string> failed(const ApiError& e) override {
    json r = response("failed");
    r["error"] = {{"code", "server_error"}, {"message", e.what()}};
    return {event("response.failed", {{"response", r}})};
  }

 private:
  static json text_part(const std::string& text) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
  }

  std::string event(const std::string& type, json data) {
    data["type"] = type;
    data["sequence_number"] = sequence_++;
    return sse(data, type);
  }

  // finishes the open message or reasoning item with the text it gathered
  void close_item(std::vector<std::string>& out) {
    if (open_.empty()) return;
    json& item = items_.back();
    const int index = static_cast<int>(items_.size()) - 1;
    if (open_ == "message") {
      out.push_back(event("response.output_text.done",
                          {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}, {"text", text_}}));
      out.push_back(
          event("response.content_part.done",
                {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}, {"part", text_part(text_)}}));
      item["content"] = json::array({text_part(text_)});
      item["status"] = "completed";
    } else {
      out.push_back(event("response.reasoning_text.done",
                          {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}, {"text", text_}}));
      item["content"] = json::array({{{"type", "reasoning_text"}, {"text", text_}}});
    }
    out.push_back(event("response.output_item.done", {{"output_index", index}, {"item", item}}));
    open_.clear();
  }

  std::string status() const { return done_.finish_reason == "length" ? "incomplete" : "completed"; }

  json response(const std::string& status) const {
    json r = {{"id", id_},
              {"object", "response"},
              {"created_at", created_},
              {"status", status},
              {"model", model_},
              {"output", status == "in_progress" ? json::array() : items_},
              {"error", nullptr},
              {"incomplete_details", status == "incomplete" ? json{{"reason", "max_output_tokens"}} : json(nullptr)},
              {"parallel_tool_calls", true},
              {"tool_choice", "auto"},
              {"tools", json::array()},
              {"text", {{"format", {{"type", "text"}}}}}};
    if (status != "in_progress")
      r["usage"] = {{"input_tokens", done_.usage.prompt_tokens},
                    {"input_tokens_details", {{"cached_tokens", done_.usage.cached_tokens}}},
                    {"output_tokens", done_.usage.completion_tokens},
                    {"output_tokens_details", {{"reasoning_tokens", 0}}},
                    {"total_tokens", done_.usage.prompt_tokens + done_.usage.completion_tokens}};
    else
      r["usage"] = nullptr;
    return r;
  }

  std::string model_, id_;
  int64_t created_;
  JobEvent done_ = JobEvent::done("stop");
  json items_ = json::array();
  std::string open_, text_;  // the item still open ("message", "reasoning" or none) and its text so far
  int64_t sequence_ = 0;
};

}  // namespace

std::unique_ptr<ReplyFormat> responses_reply(std::string model) {
  return std::make_unique<ResponsesReply>(std::move(model));
}

}  // namespace tg::llm::server
