// UTF-8, the one encoder and decoder of the tokenizers and the template engine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tg::llm {

inline void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

enum class Utf8Scan { Complete, Invalid, Truncated };

// Classifies the UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF) and sets
// `length` to its complete length, or to the length of the valid prefix before the byte that breaks it (at least 1), or
// to the bytes present when the text ends first.
inline Utf8Scan scan_utf8(std::string_view s, size_t i, size_t& length) {
  const auto lead = static_cast<unsigned char>(s[i]);
  length = 1;
  if (lead < 0x80) return Utf8Scan::Complete;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte (narrower after some leads)
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 3;
    if (lead == 0xE0) lo = 0xA0;  // no overlong forms
    if (lead == 0xED) hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return Utf8Scan::Invalid;  // a continuation byte, C0/C1 or F5..FF
  }
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= s.size()) {
      length = k;
      return Utf8Scan::Truncated;
    }
    const auto c = static_cast<unsigned char>(s[i + k]);
    if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) {
      length = k;
      return Utf8Scan::Invalid;
    }
  }
  length = need;
  return Utf8Scan::Complete;
}

// The code point at s[pos] and its length in `len`; a byte that starts no complete sequence is read as itself
// (length 1), so that every string decodes.
inline uint32_t decode_utf8(std::string_view s, size_t pos, size_t& len) {
  const auto lead = static_cast<unsigned char>(s[pos]);
  if (scan_utf8(s, pos, len) != Utf8Scan::Complete) {
    len = 1;
    return lead;
  }
  uint32_t cp = len == 1 ? lead : lead & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  return cp;
}

}  // namespace tg::llm
