// UTF-8 code point helpers for the chat-template engine.
#include "jinja/jinja_unicode.hpp"

#include <algorithm>
#include <cstring>

namespace tg::llm::jinja {

uint32_t decode_code_point(const std::string& s, size_t pos, size_t& len) { return decode_utf8(s, pos, len); }

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

// The end of the run of ASCII bytes from `pos` (stopping by `limit`), read 8 bytes at a time: decoding byte by
// byte made length and indexing of long strings the slowest part of a render.
static size_t ascii_run(const std::string& s, size_t pos, size_t limit) {
  while (pos + 8 <= limit) {
    uint64_t w;
    std::memcpy(&w, s.data() + pos, 8);
    if (w & 0x8080808080808080ULL) break;
    pos += 8;
  }
  while (pos < limit && static_cast<unsigned char>(s[pos]) < 0x80) ++pos;
  return pos;
}

int64_t code_point_count(const std::string& s) {
  int64_t n = 0;
  for (size_t pos = 0, len = 0; pos < s.size(); pos += len, ++n) {
    size_t run = ascii_run(s, pos, s.size());
    n += static_cast<int64_t>(run - pos);
    pos = run;
    if (pos == s.size()) break;
    decode_code_point(s, pos, len);
  }
  return n;
}

size_t code_point_offset(const std::string& s, int64_t index) {
  size_t pos = 0, len = 0;
  for (int64_t i = 0; i < index && pos < s.size(); ++i, pos += len) {
    size_t run = ascii_run(s, pos, std::min(s.size(), pos + static_cast<size_t>(index - i)));
    i += static_cast<int64_t>(run - pos);
    pos = run;
    if (i == index || pos == s.size()) break;
    decode_code_point(s, pos, len);
  }
  return pos;
}

// Short needles go to std::string::find (a memchr scan; its O(n*m) worst case is cheap for m < 32); long ones
// to Knuth-Morris-Pratt, linear in both. Not memmem: under ASan its interceptor checks the whole rest of the
// haystack on every call, so split or count loops were quadratic; nor std::boyer_moore_searcher, whose
// good-suffix table takes quadratic time to build.
constexpr size_t kShortNeedle = 32;

size_t find_text(const std::string& s, const std::string& needle, size_t from) {
  if (needle.size() < kShortNeedle || from > s.size()) return s.find(needle, from);
  const size_t m = needle.size();
  std::vector<uint32_t> border(m, 0);  // border[i]: longest proper border of needle[0..i]; m <= 64 MiB fits
  for (size_t i = 1, k = 0; i < m; ++i) {
    while (k > 0 && needle[i] != needle[k]) k = border[k - 1];
    if (needle[i] == needle[k]) ++k;
    border[i] = static_cast<uint32_t>(k);
  }
  for (size_t i = from, k = 0; i < s.size(); ++i) {
    while (k > 0 && s[i] != needle[k]) k = border[k - 1];
    if (s[i] == needle[k]) ++k;
    if (k == m) return i + 1 - m;
  }
  return std::string::npos;
}

// The last match is the first one in the reversed strings.
size_t rfind_text(const std::string& s, const std::string& needle) {
  if (needle.size() > s.size()) return std::string::npos;
  size_t hit = find_text(std::string(s.rbegin(), s.rend()), std::string(needle.rbegin(), needle.rend()));
  return hit == std::string::npos ? hit : s.size() - hit - needle.size();
}

bool is_python_space(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
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
