// Recognizes, byte by byte, text that is a JSON value of a schema (json_schema.hpp), optionally between fixed
// texts (a tool call's "<tool_call>" ... "</tool_call>"). A state is a set of paths, each a stack of frames
// (object, array, string, number, literal alternatives): anyOf and keys that are a declared name or another
// string keep several paths alive until a byte decides. Values copy cheaply, so a token mask tries every token
// from one state (token_mask.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "constrain/json_schema.hpp"

namespace tg::llm::constrain {

class JsonMatcher {
 public:
  // `before` and `after`: fixed texts around the value ("" for none); whitespace may come before `after`.
  explicit JsonMatcher(Node root, std::string before = {}, std::string after = {});

  // Consumes c if it can come next (true), else leaves the state as it was (false).
  bool feed(char c);
  bool feed(std::string_view bytes);  // all of them, or none (the state as it was)
  // Whether the text so far is complete: nothing more is needed (more may still be allowed, e.g. digits).
  bool accepting() const;
  // A text for the state, equal for states that accept the same continuations (mask caching).
  std::string key() const;
  // Inside a string without length bounds and between characters, where a printable ASCII byte other than '"'
  // and '\\' leaves the state as it is: the token mask's walk then goes down such bytes without copying the matcher.
  bool in_plain_string() const;
  // The state as one matcher per path: a token is allowed where some path takes it (the mask is their union).
  std::vector<JsonMatcher> paths() const;
  // The continuation bytes a UTF-8 lead byte announces (0 for ASCII); -1 for a byte no character starts with.
  static int utf8_continuations(unsigned char c) {
    if (c < 0x80) return 0;
    if (c >= 0xC2 && c <= 0xDF) return 1;
    if (c >= 0xE0 && c <= 0xEF) return 2;
    if (c >= 0xF0 && c <= 0xF4) return 3;
    return -1;
  }
  // Whether c may follow the lead byte `lead` (no overlong forms, no surrogates, nothing past U+10FFFF).
  static bool utf8_follows(unsigned char lead, unsigned char c) {
    const unsigned char lo = lead == 0xE0   ? 0xA0
                             : lead == 0xF0 ? 0x90
                                            : 0x80,
                        hi = lead == 0xED   ? 0x9F
                             : lead == 0xF4 ? 0x8F
                                            : 0xBF;
    return c >= lo && c <= hi;
  }
  static bool plain_byte(char c) {
    return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x80 && c != '"' && c != '\\';
  }

  // Whitespace runs longer than this are refused (a model must not stall in them).
  static constexpr int kMaxWhitespace = 48;
  // Paths: an anyOf's options stay alive together until a byte decides (a required call of 128 tools, OpenAI's
  // bound, is 128 paths until the name is written).
  static constexpr size_t kMaxDepth = 32, kMaxPaths = 128;

 private:
  struct Frame {
    enum class Kind : uint8_t { value, object, array, string, number, literal, text } kind;
    const SchemaNode* node = nullptr;
    uint8_t state =
        0;  // string: 0 between characters, 1 after a backslash, 2-5 in \uXXXX, 6 before a UTF-8 lead's first
            // continuation byte, 7-8 the backslash and u after a high surrogate, 9-12 the low one's digits
    bool key = false;   // a string or literal that is an object's key
    int32_t prop = -1;  // object: the property whose value comes next (-1: another key); string: the
                        // character's code point so far (state 6: its lead byte; 9-12: the high surrogate's
                        // 10 bits over the low one's digits)
    int64_t count = 0;  // string: characters (an undeclared key: bytes); array: items; number: characters;
                        // object: the next property
    uint64_t bits = 0;  // literal: candidates still matching; string: its pattern's state; an undeclared
                        // key: the declared names it still spells
    int32_t pos = 0;    // literal / text: bytes matched; string: UTF-8 continuation bytes owed
    const std::vector<std::string>* cands = nullptr;  // literal: the candidates; text: one
  };
  struct Path {
    std::vector<Frame> stack;
    int ws = 0;  // whitespace in a row
  };

  void step(Path p, char c, std::vector<Path>& out) const;
  // hops: anyOf levels entered without a byte (a schema whose anyOf reaches itself stops there)
  void start_value(Path p, const SchemaNode* node, char c, std::vector<Path>& out, int hops = 0) const;
  static bool can_end(const Frame& f);
  static bool string_byte(Frame& f, char c);
  static char32_t pair_code(char32_t high, char32_t low);
  static bool string_char_fits(const Frame& f, char32_t lo, char32_t hi);
  static bool string_may_end(const Frame& f);
  static bool names_end(const Frame& f);
  static void pop(Path& p);
  static bool whitespace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

  Node root_;
  std::shared_ptr<const std::array<std::vector<std::string>, 2>> texts_;  // before, after: the text frames point here
  std::vector<Path> paths_;
};

}  // namespace tg::llm::constrain
