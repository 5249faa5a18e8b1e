// OpenAI's chat-completions and completions wire format: requests validated field by field into what the
// engine runs, replies and stream chunks built from engine events. Every bad request is an ApiError that the
// HTTP layer turns into {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "server/engine.hpp"

namespace tg::llm::server {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string type, const std::string& message, std::string param = {}, std::string code = {})
      : std::runtime_error(message),
        status(status),
        type(std::move(type)),
        param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string type, param, code;
  nlohmann::json body() const;
};
ApiError invalid_request(const std::string& message, const std::string& param = {});

// A request's fields, checked: null or absent is the default; a wrong type or range is invalid_request naming it.
const nlohmann::json* field(const nlohmann::json& b, const char* key);  // null when absent or null
double number(const nlohmann::json& b, const char* key, double lo, double hi, double def);
int64_t integer(const nlohmann::json& b, const char* key, int64_t lo, int64_t def);
bool boolean(const nlohmann::json& b, const char* key, bool def);

struct RequestDefaults {
  SamplingParams sampling;  // the server's --temperature etc.; a request overrides them
  int64_t max_tokens = 0;   // 0: until the context is full
  std::string model_id;     // what /v1/models lists; a request naming another model is refused
};

// Fields shared by both endpoints.
struct GenerationRequest {
  bool stream = false, include_usage = false;  // sampling.logprobs: -1, or the top alternatives asked for
  SamplingParams sampling;
  int64_t max_tokens = 0;
  std::vector<std::string> stop;
  // response_format json_object / json_schema, or (chat) tool_choice "required" or a named function: the output
  // is constrained to it; `tool_call` says which (the output parser then reads tool calls, else plain content)
  std::optional<ConstraintSpec> constraint;
  bool tool_call = false;
  int n = 1;  // choices
};

struct ChatRequest : GenerationRequest {
  nlohmann::ordered_json messages, tools, template_kwargs;  // messages with content parts joined into strings
};

struct CompletionRequest : GenerationRequest {
  std::string prompt;  // or, given as token ids:
  std::vector<int32_t> prompt_ids;
  bool echo = false;         // the reply's text starts with the prompt (with logprobs: and its tokens' entries)
  bool prompt_only = false;  // echo with max_tokens 0: nothing is generated
};

// `ordered`: the same body parsed keeping key order, where order means something (a schema's properties: the
// constrained reply writes them in that order)
ChatRequest parse_chat_request(const nlohmann::json& body, const nlohmann::ordered_json& ordered,
                               const RequestDefaults& d);

// Constraints the other APIs share. A schema compiled or a 400 naming `param` and what it does not support.
constrain::Node compiled(const nlohmann::ordered_json& schema, const std::string& param);
// response_format {"type": "text" | "json_object" | "json_schema", "json_schema": {"schema"}}
std::optional<ConstraintSpec> response_format(const nlohmann::ordered_json& rf);
// One call of `tools` (OpenAI's function tools; `only`: that function's) in the Hermes format the output parser
// reads: <tool_call>{"name": ..., "arguments": {the tool's parameters}}</tool_call>.
ConstraintSpec tool_call_constraint(const nlohmann::ordered_json& tools, const std::string& only);
// Flat tool definitions ({"name", "description", schema_key: {...}}: Anthropic's input_schema, the Responses API's
// {"type": "function", ..., "parameters"} where `typed`) as the OpenAI function tools the templates know; null
// for none. A malformed one is a 400 showing `shape`.
nlohmann::ordered_json flat_tools(const nlohmann::ordered_json& tools, const char* schema_key, bool typed,
                                  const std::string& shape);
// A tool choice that requires a call (`only`: of that tool; "": of any) constrains r's reply to one call.
void require_tool_call(ChatRequest& r, const std::string& only, const std::string& choice);
CompletionRequest parse_completion_request(const nlohmann::json& body, const nlohmann::ordered_json& ordered,
                                           const RequestDefaults& d);

// Collects a job's events into a whole reply, or turns each into a stream chunk. With logprobs, each token's
// (a Logprobs event) goes out with the next chunk of text (chat: choices[0].logprobs.content, OpenAI's entries;
// completions: the legacy tokens / token_logprobs / top_logprobs / text_offset lists).
// With n choices, each event goes to its choice (JobEvent::choice) and the usage adds up their tokens.
class ReplyBuilder {
 public:
  ReplyBuilder(bool chat, std::string model_id, bool logprobs = false, std::string echo = {}, int n = 1);
  // Stream chunks for one event (none for Done: see final_chunks).
  std::vector<nlohmann::json> chunks(const JobEvent& e);
  std::vector<nlohmann::json> first_chunks() const;  // chat: the assistant role
  std::vector<nlohmann::json> final_chunks(bool include_usage);
  void absorb(const JobEvent& e);  // for a non-streamed reply
  nlohmann::json reply();

 private:
  struct Choice {
    nlohmann::json pending;   // logprobs not sent yet: chat: entries; completions: the four lists
    int64_t text_offset = 0;  // completions: where the next token's text starts
    std::string content, reasoning, finish;
    nlohmann::json tool_calls = nlohmann::json::array();
    int n_calls = 0;
  };
  nlohmann::json chunk(nlohmann::json choice) const;
  nlohmann::json usage_json() const;
  nlohmann::json tool_call_json(const ToolCall& c, Choice& to);
  void add_logprobs(Choice& c, const TokenLogprobs& t);
  nlohmann::json take_logprobs(Choice& c);  // what add_logprobs gathered since the last call; null without logprobs
  Choice& choice(const JobEvent& e);
  void done(const JobEvent& e);
  bool chat_, logprobs_;
  std::string echo_;
  std::string model_, id_;
  int64_t created_;
  std::vector<Choice> choices_;
  Usage usage_;
};

}  // namespace tg::llm::server
