// Splits a model's streamed text into what an OpenAI client sees: content, reasoning (text inside
// <think>...</think>) and tool calls (<tool_call>{"name": ..., "arguments": ...}</tool_call>, the Hermes / Qwen
// format), and cuts it at the request's stop strings. Text that could still become a tag or a stop string is
// held back until the next piece decides it, so a stream never shows half a tag.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tg::llm::server {

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text of an object, as OpenAI's function.arguments
};

struct OutputEvent {
  enum class Kind { Content, Reasoning, ToolCall } kind;
  std::string text;  // Content, Reasoning
  ToolCall call;     // ToolCall
};

class OutputParser {
 public:
  struct Options {
    std::vector<std::string> stop;  // generation ends before the first of these (empty strings are ignored)
    bool in_reasoning = false;      // the prompt already opened <think> (the template wrote it)
    bool reasoning = true;          // parse <think> blocks (else they stay content)
    bool tools = true;              // parse <tool_call> blocks (else they stay content)
  };
  explicit OutputParser(Options opts);

  // Decoded text in; the events it completes out. After a stop string, stopped() is true and later text is dropped.
  std::vector<OutputEvent> feed(std::string_view text);
  // Everything still held back: an unfinished tag or stop-string prefix is text, an unclosed tool call is content.
  std::vector<OutputEvent> finish();
  bool stopped() const { return stopped_; }
  const std::string& stop_string() const { return stop_string_; }  // the stop string that ended it ("" if none)
  int tool_calls() const { return tool_calls_; }

 private:
  enum class Mode { Content, Reasoning, Tool };
  std::string release_before_stop(std::string_view text);
  void parse(std::vector<OutputEvent>& out, bool final);
  void emit(std::vector<OutputEvent>& out, OutputEvent::Kind kind, std::string text);
  void close_tool_call(std::vector<OutputEvent>& out, std::string body);

  Options opts_;
  Mode mode_;
  std::string held_;    // raw text that may begin a stop string
  std::string buffer_;  // text past the stop filter, not yet parsed
  std::string tool_;    // body of the open tool call
  bool stopped_ = false, after_think_ = false;
  std::string stop_string_;
  int tool_calls_ = 0;
};

}  // namespace tg::llm::server
