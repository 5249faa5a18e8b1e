// Anthropic's Messages API (POST /v1/messages), on the same engine and chat templates as OpenAI's: a request's
// system prompt, content blocks (text, tool_use, tool_result) and tools become the chat messages and tools the
// templates know; the reply's content blocks (text, thinking, tool_use) come from the same output parser.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/openai_api.hpp"
#include "server/reply_format.hpp"

namespace tg::llm::server {

// The request as the chat path runs it. Any model name is accepted (Anthropic clients name their own models);
// max_tokens is required, as Anthropic's API requires it. Unsupported blocks (images, documents) are 400s naming
// them; tool_choice "any" / "tool" constrain the reply to one call (tool_call_constraint).
ChatRequest parse_messages_request(const nlohmann::json& body, const nlohmann::ordered_json& ordered,
                                   const RequestDefaults& d);

// The reply: {"type": "message", "content": [blocks], "stop_reason", "usage"}, or the stream message_start,
// content_block_start / _delta / _stop per block, message_delta, message_stop.
std::unique_ptr<ReplyFormat> messages_reply(std::string model, int64_t input_tokens);

// {"type": "error", "error": {"type", "message"}}
nlohmann::json anthropic_error(const ApiError& e);

}  // namespace tg::llm::server
