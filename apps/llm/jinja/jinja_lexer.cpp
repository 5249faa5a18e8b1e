// Jinja lexer. Whitespace control follows jinja2's lexer: `-` strips all whitespace on that side, `+`
// disables lstrip/trim for that tag, lstrip_blocks strips a line's indentation before {% and {#, trim_blocks
// drops one newline after %} and #}. Sources have their newlines normalized to \n and lose one trailing
// newline, as jinja2 does with keep_trailing_newline=False.
#include "jinja/jinja_lexer.hpp"

#include <algorithm>
#include <cctype>

#include "jinja/jinja_unicode.hpp"
#include "tg/error.hpp"

namespace tg::llm::jinja {

void throw_template_error(int line, int column, const std::string& msg) {
  throw tg::Error("chat template:" + std::to_string(line) + ":" + std::to_string(column) + ": " + msg);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string normalize_newlines(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] != '\r') {
      out += source[i];
      continue;
    }
    out += '\n';
    if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool all_python_space(const std::string& s, size_t from) {
  for (size_t pos = from, len = 0; pos < s.size(); pos += len)
    if (!is_python_space(decode_code_point(s, pos, len))) return false;
  return from < s.size();
}

class Lexer {
 public:
  Lexer(const std::string& source, const LexerOptions& options) : src_(normalize_newlines(source)), opt_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i)
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;  // did the previous tag's match end with a newline (or is this the start)?
    while (pos < src_.size()) {
      size_t start = find_tag(pos);
      if (start == std::string::npos) {
        emit_text(src_.substr(pos), pos);
        break;
      }
      char type = src_[start + 1];
      size_t p = start + 2;
      char sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p++] : 0;
      emit_text(strip_before_tag(src_.substr(pos, start - pos), sign, type != '{', line_starting), pos);
      size_t raw_body = 0;
      if (type == '%' && match_raw_begin(p, raw_body)) {
        pos = lex_raw(start, raw_body, line_starting);
      } else if (type == '#') {
        pos = skip_comment(start, p, line_starting);
      } else {
        pos = lex_tag(start, p, type == '%', line_starting);
      }
    }
    push(TokenKind::End, "", src_.size());
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void error_at(size_t pos, const std::string& msg) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    throw_template_error(static_cast<int>(line), static_cast<int>(pos - line_starts_[line - 1] + 1), msg);
  }

  Token& push(TokenKind kind, std::string text, size_t pos) {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    Token t{kind, std::move(text), 0, 0, static_cast<int>(line), static_cast<int>(pos - line_starts_[line - 1] + 1)};
    tokens_.push_back(std::move(t));
    return tokens_.back();
  }

  void emit_text(std::string text, size_t pos) {
    if (!text.empty()) push(TokenKind::Text, std::move(text), pos);
  }

  size_t find_tag(size_t pos) const {
    for (size_t i = src_.find('{', pos); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // Text before a tag loses trailing whitespace for `-`, or its last line's indentation for lstrip_blocks.
  std::string strip_before_tag(std::string text, char sign, bool is_block_or_comment, bool line_starting) const {
    if (sign == '-') return strip_string(text, nullptr, false, true);
    if (sign == '+' || !opt_.lstrip_blocks || !is_block_or_comment) return text;
    size_t line_pos = text.rfind('\n');
    line_pos = line_pos == std::string::npos ? 0 : line_pos + 1;
    if ((line_pos > 0 || line_starting) && all_python_space(text, line_pos)) text.resize(line_pos);
    return text;
  }

  size_t skip_spaces(size_t p) const {
    while (p < src_.size() && is_space(src_[p])) ++p;
    return p;
  }

  bool match_word(size_t& p, const char* word) const {
    size_t n = std::char_traits<char>::length(word);
    if (src_.compare(p, n, word) != 0) return false;
    if (p + n < src_.size() && is_name_char(src_[p + n])) return false;
    p += n;
    return true;
  }

  // `{% raw %}`: sets `body` to where the raw text starts.
  bool match_raw_begin(size_t p, size_t& body) const {
    p = skip_spaces(p);
    if (!match_word(p, "raw")) return false;
    p = skip_spaces(p);
    if (src_.compare(p, 3, "-%}") == 0) {
      body = skip_spaces(p + 3);
      return true;
    }
    if (src_.compare(p, 2, "%}") == 0) {
      body = p + 2;
      return true;
    }
    return false;
  }

  // After a closing `%}`/`#}` (preceded by `sign`): how far the match extends, as jinja2 consumes it.
  size_t consume_after_end(size_t after, char sign, bool& line_starting) const {
    size_t end = after;
    if (sign == '-')
      end = skip_spaces(after);
    else if (sign != '+' && opt_.trim_blocks && end < src_.size() && src_[end] == '\n')
      ++end;
    line_starting = src_[end - 1] == '\n';
    return end;
  }

  size_t lex_raw(size_t start, size_t body, bool& line_starting) {
    line_starting = src_[body - 1] == '\n';
    for (size_t i = src_.find("{%", body); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t p = i + 2;
      char sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p++] : 0;
      p = skip_spaces(p);
      if (!match_word(p, "endraw")) continue;
      p = skip_spaces(p);
      char end_sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p++] : 0;
      if (src_.compare(p, 2, "%}") != 0) continue;
      emit_text(strip_before_tag(src_.substr(body, i - body), sign, true, line_starting), body);
      return consume_after_end(p + 2, end_sign, line_starting);
    }
    error_at(start, "missing end of raw directive");
  }

  size_t skip_comment(size_t start, size_t p, bool& line_starting) {
    size_t close = src_.find("#}", p);
    if (close == std::string::npos) error_at(start, "missing end of comment tag");
    char sign = close > p && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : 0;
    return consume_after_end(close + 2, sign, line_starting);
  }

  size_t lex_tag(size_t start, size_t p, bool block, bool& line_starting) {
    push(block ? TokenKind::BlockBegin : TokenKind::VarBegin, block ? "{%" : "{{", start);
    std::vector<char> brackets;
    while (true) {
      p = skip_spaces(p);
      if (p >= src_.size())
        error_at(start, std::string("unexpected end of template, expected '") + (block ? "%}" : "}}") +
                            "' to close the tag opened here");
      if (brackets.empty()) {
        if (block) {
          char sign = src_[p] == '-' || src_[p] == '+' ? src_[p] : 0;
          size_t close = sign ? p + 1 : p;
          if (src_.compare(close, 2, "%}") == 0) {
            push(TokenKind::BlockEnd, "%}", p);
            return consume_after_end(close + 2, sign, line_starting);
          }
        } else if (src_.compare(p, 3, "-}}") == 0) {
          push(TokenKind::VarEnd, "}}", p);
          size_t end = skip_spaces(p + 3);
          line_starting = src_[end - 1] == '\n';
          return end;
        } else if (src_.compare(p, 2, "}}") == 0) {
          push(TokenKind::VarEnd, "}}", p);
          line_starting = false;
          return p + 2;
        }
      }
      p = lex_token(p, brackets);
    }
  }

  size_t lex_token(size_t p, std::vector<char>& brackets) {
    char c = src_[p];
    if (is_name_start(c)) {
      size_t e = p;
      while (e < src_.size() && is_name_char(src_[e])) ++e;
      push(TokenKind::Name, src_.substr(p, e - p), p);
      return e;
    }
    if (is_digit(c)) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* const kOps[] = {"**", "//", "==", "!=", ">=", "<=", "+", "-", "*", "/", "%", "~", "<",
                                       ">",  "=",  ".",  ",",  ":",  "|",  "(", ")", "[", "]", "{", "}", ";"};
    for (const char* op : kOps) {
      size_t n = std::char_traits<char>::length(op);
      if (src_.compare(p, n, op) != 0) continue;
      if (n == 1 && (c == '(' || c == '[' || c == '{')) brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      if (n == 1 && (c == ')' || c == ']' || c == '}')) {
        if (brackets.empty()) error_at(p, std::string("unexpected '") + c + "'");
        if (brackets.back() != c)
          error_at(p, std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
        brackets.pop_back();
      }
      push(TokenKind::Op, op, p);
      return p + n;
    }
    error_at(p, std::string("unexpected character '") + c + "'");
  }

  size_t digits(size_t p, std::string& out) const {
    while (p < src_.size() && (is_digit(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1])))) {
      if (src_[p] != '_') out += src_[p];
      ++p;
    }
    return p;
  }

  size_t lex_number(size_t start) {
    std::string text;
    size_t p = digits(start, text);
    // After a '.', digits are an attribute index (items.0), never a float, as in jinja2.
    bool after_dot = !tokens_.empty() && tokens_.back().kind == TokenKind::Op && tokens_.back().text == ".";
    bool is_float = false;
    if (!after_dot && p + 1 < src_.size() && src_[p] == '.' && is_digit(src_[p + 1])) {
      text += '.';
      p = digits(p + 1, text);
      is_float = true;
    }
    if (!after_dot && p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      std::string exp = "e";
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) exp += src_[q++];
      if (q < src_.size() && is_digit(src_[q])) {
        p = digits(q, exp);
        text += exp;
        is_float = true;
      }
    }
    Token& t = push(is_float ? TokenKind::Float : TokenKind::Int, text, start);
    try {
      if (is_float)
        t.float_value = std::stod(text);
      else
        t.int_value = std::stoll(text);
    } catch (const std::exception&) {
      error_at(start, "number out of range: " + text);
    }
    return p;
  }

  static int hex_value(char c) {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Python string-literal escapes (jinja2 decodes literals with Python's unicode-escape codec).
  size_t lex_string(size_t start) {
    char quote = src_[start];
    std::string out;
    size_t p = start + 1;
    while (true) {
      if (p >= src_.size()) error_at(start, "unterminated string literal");
      char c = src_[p];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) error_at(start, "unterminated string literal");
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x':
        case 'u':
        case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t i = 0; i < n; ++i) {
            int h = p + i < src_.size() ? hex_value(src_[p + i]) : -1;
            if (h < 0) error_at(p - 2, std::string("truncated \\") + e + " escape in string literal");
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          if (cp > 0x10FFFF) error_at(p - 2, "escape outside the Unicode range in string literal");
          append_utf8(out, cp);
          p += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int i = 0; i < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++i)
              cp = cp * 8 + static_cast<uint32_t>(src_[p++] - '0');
            append_utf8(out, cp);
          } else {
            out += '\\';  // Python keeps unknown escapes as written
            out += e;
          }
      }
    }
    push(TokenKind::String, std::move(out), start);
    return p + 1;
  }

  std::string src_;
  LexerOptions opt_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const LexerOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace tg::llm::jinja
