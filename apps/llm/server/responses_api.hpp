// OpenAI's Responses API (POST /v1/responses: the Agents SDK's and Codex-style clients' API), on the same engine
// and chat templates: `instructions` and `input` (text, or message / function_call / function_call_output items)
// become the templates' messages; the reply's output items (message, reasoning, function_call) come from the same
// output parser. Stateless: each request carries its whole conversation (previous_response_id is refused).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/openai_api.hpp"
#include "server/reply_format.hpp"

namespace tg::llm::server {

// The request as the chat path runs it; unsupported fields (previous_response_id, built-in tools, schema
// keywords outside the constrained subset) are 400s naming them.
ChatRequest parse_responses_request(const nlohmann::json& body, const nlohmann::ordered_json& ordered,
                                    const RequestDefaults& d);

// The response object ({"object": "response", "output": [items], "usage"}), or the stream response.created …
// response.output_text.delta … response.completed.
std::unique_ptr<ReplyFormat> responses_reply(std::string model);

}  // namespace tg::llm::server
