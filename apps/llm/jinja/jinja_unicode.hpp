// UTF-8 helpers so string length, indexing, slicing and stripping count code points as Python does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "text/utf8.hpp"

namespace tg::llm::jinja {

// Byte offsets of each code point's start, plus one final entry at s.size(). Invalid bytes count as one
// code point each, so any byte string round-trips.
std::vector<size_t> code_point_offsets(const std::string& s);
int64_t code_point_count(const std::string& s);
// The byte offset of code point `index` (0 <= index <= count; count gives s.size()), found without a table.
size_t code_point_offset(const std::string& s, int64_t index);
// The code point starting at byte `pos`; sets `len` to its byte length (1 for an invalid byte).
uint32_t decode_code_point(const std::string& s, size_t pos, size_t& len);
using tg::llm::append_utf8;  // utf8.hpp
// Python's str.isspace() for one code point.
bool is_python_space(uint32_t cp);
// std::string::find and rfind, but linear in the lengths (std::string's are O(n*m) on inputs such as
// 'aaa...ab' in 'aaa...a').
size_t find_text(const std::string& s, const std::string& needle, size_t from = 0);
size_t rfind_text(const std::string& s, const std::string& needle);
// str.strip/lstrip/rstrip: with no `chars`, Python whitespace; otherwise any code point of `chars`.
std::string strip_string(const std::string& s, const std::string* chars, bool left, bool right);

}  // namespace tg::llm::jinja
