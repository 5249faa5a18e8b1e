// UTF-8 code point helpers for the chat-template engine.
#include "jinja_unicode.hpp"

namespace tg::llm::jinja {

uint32_t decode_code_point(const std::string& s, size_t pos, size_t& len) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = byte(pos);
  len = 1;
  if (c < 0x80) return c;
  size_t need = c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (need == 0 || pos + need > s.size()) return c;
  uint32_t cp = c & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07);
  for (size_t i = 1; i < need; ++i) {
    unsigned char b = byte(pos + i);
    if ((b & 0xC0) != 0x80) return c;
    cp = (cp << 6) | (b & 0x3F);
  }
  len = need;
  return cp;
}

std::vector<size_t> code_point_offsets(const std::string& s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t pos = 0, len = 0; pos < s.size(); pos += len) {
    offsets.push_back(pos);
    decode_code_point(s, pos, len);
  }
  offsets.push_back(s.size());
  return offsets;
}

int64_t code_point_count(const std::string& s) {
  int64_t n = 0;
  for (size_t pos = 0, len = 0; pos < s.size(); pos += len, ++n) decode_code_point(s, pos, len);
  return n;
}


bool is_python_space(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string strip_string(const std::string& s, const std::string* chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars != nullptr) {
    for (size_t pos = 0, len = 0; pos < chars->size(); pos += len) set.push_back(decode_code_point(*chars, pos, len));
  }
  auto strippable = [&](uint32_t cp) {
    if (chars == nullptr) return is_python_space(cp);
    for (uint32_t c : set)
      if (c == cp) return true;
    return false;
  };
  std::vector<size_t> offsets = code_point_offsets(s);
  size_t first = 0, last = offsets.size() - 1;  // code point indices [first, last)
  size_t len = 0;
  while (left && first < last && strippable(decode_code_point(s, offsets[first], len))) ++first;
  while (right && last > first && strippable(decode_code_point(s, offsets[last - 1], len))) --last;
  return s.substr(offsets[first], offsets[last] - offsets[first]);
}

}  // namespace tg::llm::jinja
