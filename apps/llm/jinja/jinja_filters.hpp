// Jinja filters (`value | name(args)`), the subset chat templates use, with jinja2's semantics.
#pragma once

#include <string>

#include "jinja/jinja_value.hpp"

namespace tg::llm::jinja {

bool has_filter(const std::string& name);
// Throws ValueError for bad arguments; `name` must satisfy has_filter.
Value apply_filter(const std::string& name, const Value& input, const CallArgs& args);

// String operations the str methods share. Case mapping is ASCII-only; Python maps other letters too.
std::string to_upper(std::string s);
std::string to_lower(std::string s);
std::string replace_all(const std::string& s, const std::string& old, const std::string& repl,
                        int64_t count);  // count < 0: all

// Python's printf-style `format % args` (the `format` filter and the string `%` operator).
std::string percent_format(const std::string& format, const Value& args);

}  // namespace tg::llm::jinja
