// OutputParser against hand-written expectations: each stream is fed whole, one byte at a time and in random
// pieces (seed printed); all three must give the same content / reasoning / tool calls.
#include "server/output_parser.hpp"

#include <gtest/gtest.h>

#include <random>

using tg::llm::server::OutputEvent;
using tg::llm::server::OutputParser;

namespace {

struct Result {
  std::string content, reasoning;
  std::vector<std::string> calls;  // "name arguments"
  bool stopped = false;
  bool operator==(const Result&) const = default;
};

void collect(Result& r, const std::vector<OutputEvent>& evs) {
  for (const auto& e : evs) {
    if (e.kind == OutputEvent::Kind::Content) r.content += e.text;
    if (e.kind == OutputEvent::Kind::Reasoning) r.reasoning += e.text;
    if (e.kind == OutputEvent::Kind::ToolCall) r.calls.push_back(e.call.name + " " + e.call.arguments);
  }
}

Result run(const OutputParser::Options& o, const std::vector<std::string>& pieces) {
  OutputParser p(o);
  Result r;
  for (const auto& s : pieces) collect(r, p.feed(s));
  collect(r, p.finish());
  r.stopped = p.stopped();
  return r;
}

// The same text split three ways must parse the same.
Result parse_all_ways(const std::string& text, const OutputParser::Options& o = {}) {
  Result whole = run(o, {text});
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  EXPECT_EQ(run(o, bytes), whole) << "byte by byte: " << text;
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::vector<std::string> pieces;
  for (size_t at = 0; at < text.size();) {
    size_t n = std::uniform_int_distribution<size_t>(1, 6)(rng);
    pieces.push_back(text.substr(at, n));
    at += n;
  }
  EXPECT_EQ(run(o, pieces), whole) << "random pieces, seed " << seed << ": " << text;
  return whole;
}

TEST(OutputParser, PlainTextPassesThrough) {
  Result r = parse_all_ways("Hello, <b>world</b> < 3 <thinking");
  EXPECT_EQ(r.content, "Hello, <b>world</b> < 3 <thinking");
  EXPECT_TRUE(r.reasoning.empty());
}

TEST(OutputParser, ReasoningSplitFromContent) {
  Result r = parse_all_ways("<think>\nstep 1\nstep 2\n</think>\n\nThe answer is 4.");
  EXPECT_EQ(r.reasoning, "\nstep 1\nstep 2\n");
  EXPECT_EQ(r.content, "The answer is 4.");  // the blank lines after </think> are not part of the answer
}

TEST(OutputParser, PromptAlreadyOpenedThink) {
  OutputParser::Options o;
  o.in_reasoning = true;
  Result r = parse_all_ways("hmm</think>Paris", o);
  EXPECT_EQ(r.reasoning, "hmm");
  EXPECT_EQ(r.content, "Paris");
}

TEST(OutputParser, UnclosedReasoningStaysReasoning) {
  Result r = parse_all_ways("<think>still thinking");
  EXPECT_EQ(r.reasoning, "still thinking");
  EXPECT_EQ(r.content, "");
}

TEST(OutputParser, ReasoningOffKeepsTags) {
  OutputParser::Options o;
  o.reasoning = o.tools = false;
  Result r = parse_all_ways("<think>a</think><tool_call>{}</tool_call>", o);
  EXPECT_EQ(r.content, "<think>a</think><tool_call>{}</tool_call>");
}

TEST(OutputParser, ToolCalls) {
  Result r = parse_all_ways(
      "Let me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
      "<tool_call>{\"name\": \"now\", \"arguments\": \"{\\\"tz\\\": 1}\"}</tool_call>");
  EXPECT_EQ(r.content, "Let me check.");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0], "get_weather {\"city\":\"Paris\"}");
  EXPECT_EQ(r.calls[1], "now {\"tz\":1}");  // arguments given as a JSON string are read as the object they hold
}

TEST(OutputParser, UnparsableToolCallIsContent) {
  for (std::string body : {"{\"name\": oops", "[1, 2]", "{\"arguments\": {}}", "{\"name\": \"f\", \"arguments\": 3}",
                           "{\"name\": \"\"}"}) {
    Result r = parse_all_ways("<tool_call>" + body + "</tool_call>");
    EXPECT_TRUE(r.calls.empty()) << body;
    EXPECT_EQ(r.content, "<tool_call>" + body + "</tool_call>");
  }
  Result open = parse_all_ways("x<tool_call>{\"name\": \"f\"");  // never closed
  EXPECT_TRUE(open.calls.empty());
  EXPECT_EQ(open.content, "x<tool_call>{\"name\": \"f\"");
}

TEST(OutputParser, StopStrings) {
  OutputParser::Options o;
  o.stop = {"\nUser:", "STOP", ""};
  Result r = parse_all_ways("Answer: 4\nUser: next question STOP", o);
  EXPECT_EQ(r.content, "Answer: 4");
  EXPECT_TRUE(r.stopped);
  Result near = parse_all_ways("a\nUse it", o);  // a prefix of a stop string that does not complete is released
  EXPECT_EQ(near.content, "a\nUse it");
  EXPECT_FALSE(near.stopped);
}

TEST(OutputParser, StopInsideReasoningEndsThere) {
  OutputParser::Options o;
  o.stop = {"###"};
  Result r = parse_all_ways("<think>abc###def</think>ghi", o);
  EXPECT_EQ(r.reasoning, "abc");
  EXPECT_EQ(r.content, "");
  EXPECT_TRUE(r.stopped);
}

TEST(OutputParser, TextAfterStopIsDropped) {
  OutputParser::Options o;
  o.stop = {"."};
  OutputParser p(o);
  Result r;
  collect(r, p.feed("one. two"));
  collect(r, p.feed(" three"));
  collect(r, p.finish());
  EXPECT_EQ(r.content, "one");
}

}  // namespace
