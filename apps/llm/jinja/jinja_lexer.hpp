// Jinja lexer: template source to tokens, applying whitespace control the way jinja2 does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tg::llm::jinja {

enum class TokenKind {
  Text,        // literal template text, whitespace control already applied
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,  // escapes already decoded
  Int,
  Float,
  Op,   // operators and punctuation: + - * / // % ** ~ == != < <= > >= = . , : | ( ) [ ] { }
  End,  // end of the source
};

struct Token {
  TokenKind kind;
  std::string text;  // text, name, decoded string or operator
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1, column = 1;
};

// Whitespace options of jinja2's Environment; transformers renders chat templates with both on.
struct LexerOptions {
  bool trim_blocks = true;    // drop the first newline after a block or comment tag
  bool lstrip_blocks = true;  // drop spaces and tabs from line start up to a block or comment tag
};

// Throws tg::Error "chat template:LINE:COL: <msg>"; the parser and interpreter report through it too.
[[noreturn]] void throw_template_error(int line, int column, const std::string& msg);

// Throws tg::Error "chat template:LINE:COL: ..." on an unterminated tag, comment, string or bracket.
std::vector<Token> tokenize(const std::string& source, const LexerOptions& options);

}  // namespace tg::llm::jinja
