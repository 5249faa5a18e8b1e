// The frames' transitions. A frame that can end without a closing byte (a number, a literal that a longer one
// extends) ends lazily: the next byte is tried both by it and, with it popped, by its parent.
#include "constrain/json_matcher.hpp"

#include <algorithm>

#include "constrain/string_pattern.hpp"

namespace tg::llm::constrain {

namespace {

using Kind = SchemaNode::Kind;

// object states: after '{', after ',', reading a key, before ':', reading a value, after a value
enum ObjectState : uint8_t { kOpen, kComma, kKey, kColon, kValue, kAfterValue };
// array states: after '[', after ',', reading an item, after an item
enum ArrayState : uint8_t { kArrOpen, kArrComma, kItem, kAfterItem };
// number states: start, after '-', after a leading 0, integer digits, after '.', fraction digits, after 'e',
// after the exponent's sign, exponent digits
enum NumberState : uint8_t { kStart, kMinus, kZero, kInt, kDot, kFrac, kExp, kExpSign, kExpDigits };

const std::vector<std::string>& keyword_literals() {
  static const std::vector<std::string> k = {"true", "false", "null"};
  return k;
}

bool digit(char c) { return c >= '0' && c <= '9'; }
int hex_value(char c) {
  return digit(c) ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

uint64_t all_bits(size_t n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

}  // namespace

JsonMatcher::JsonMatcher(Node root, std::string before, std::string after)
    : root_(std::move(root)),
      texts_(std::make_shared<const std::array<std::vector<std::string>, 2>>(std::array<std::vector<std::string>, 2>{
          std::vector<std::string>{std::move(before)}, std::vector<std::string>{std::move(after)}})) {
  Path p;
  auto text = [&](const std::vector<std::string>& t) {
    Frame f{Frame::Kind::text};
    f.cands = &t;
    return f;
  };
  if (!(*texts_)[1][0].empty()) p.stack.push_back(text((*texts_)[1]));
  Frame v{Frame::Kind::value};
  v.node = root_.get();
  p.stack.push_back(v);
  if (!(*texts_)[0][0].empty()) p.stack.push_back(text((*texts_)[0]));
  paths_.push_back(std::move(p));
}

bool JsonMatcher::can_end(const Frame& f) {
  if (f.kind == Frame::Kind::number)
    return f.state == kZero || f.state == kInt || f.state == kFrac || f.state == kExpDigits;
  if (f.kind == Frame::Kind::literal)
    for (size_t i = 0; i < f.cands->size(); ++i)
      if ((f.bits >> i & 1) && static_cast<int32_t>((*f.cands)[i].size()) == f.pos) return true;
  return false;
}

// A string's closing quote: its length and pattern are met, and an undeclared key is not a declared name.
bool JsonMatcher::string_may_end(const Frame& f) {
  if (f.key) return !f.bits || !names_end(f);
  return f.count >= f.node->min_length &&
         (!f.node->pattern || f.node->pattern->accepting(static_cast<uint32_t>(f.bits)));
}

// An undeclared key (object frame's "other key") still spelling a declared name: whether one ends here.
bool JsonMatcher::names_end(const Frame& f) {
  const auto& names = f.node->quoted_keys;
  for (size_t i = 0; i < names.size(); ++i)
    if ((f.bits >> i & 1) && names[i].size() == static_cast<size_t>(f.count) + 1) return true;
  return false;
}

// The code point a UTF-16 surrogate pair spells.
char32_t JsonMatcher::pair_code(char32_t high, char32_t low) {
  return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
}

// Whether a character of the string may be one of the code points [lo, hi] (none of them a surrogate): the
// pattern, if any, takes one of them.
bool JsonMatcher::string_char_fits(const Frame& f, char32_t lo, char32_t hi) {
  if (lo >= 0xD800 && hi <= 0xDFFF) return false;
  if (f.key || !f.node->pattern) return true;
  const auto takes = [&](char32_t a, char32_t b) {
    return a <= b && f.node->pattern->any_in(static_cast<uint32_t>(f.bits), a, b);
  };
  return takes(lo, std::min<char32_t>(hi, 0xD7FF)) || takes(std::max<char32_t>(lo, 0xE000), hi);
}

// A string's byte other than its closing quote. Characters are decoded as they come (UTF-8, or an escape) so
// the pattern sees code points; a character partly written must keep a completion that is well-formed (no
// overlong forms, no surrogates) and that the pattern takes.
bool JsonMatcher::string_byte(Frame& f, char c) {
  const auto u = static_cast<unsigned char>(c);
  const SchemaNode* node = f.node;
  const bool escape = (f.state >= 1 && f.state <= 5) || f.state >= 7 || c == '\\';
  if (f.key && f.bits) {  // an undeclared key may not spell a declared name: track the names it still could
    const auto& names = node->quoted_keys;
    uint64_t alive = 0;
    for (size_t i = 0; i < names.size(); ++i)
      if ((f.bits >> i & 1) && names[i].size() > static_cast<size_t>(f.count) &&
          names[i][static_cast<size_t>(f.count)] == c)
        alive |= uint64_t{1} << i;
    if (!alive && escape) return false;  // an escape that spells a name another way
    f.bits = alive;
    ++f.count;
  }
  const bool room = f.key || node->max_length < 0 || f.count < node->max_length;
  char32_t lo = 0, hi = 0;  // the code points the character so far may still become
  bool whole = false;
  if (f.state == 1) {  // after a backslash
    static constexpr std::string_view kEscapes = "\"\\/bfnrt", kMeans = "\"\\/\b\f\n\r\t";
    if (c == 'u') {
      f.state = 2, f.prop = 0, hi = 0x10FFFF;  // a pair of escapes reaches past U+FFFF
    } else if (const size_t at = kEscapes.find(c); at != std::string_view::npos) {
      f.state = 0, lo = hi = static_cast<unsigned char>(kMeans[at]), whole = true;
    } else {
      return false;
    }
  } else if (f.state >= 2 && f.state <= 5) {  // \uXXXX: reading digit state - 1
    const int x = hex_value(c);
    if (x < 0) return false;
    f.prop = f.prop * 16 + x;
    const int left = 4 * (5 - f.state);  // bits of digits still owed
    const char32_t at_least = static_cast<char32_t>(f.prop) << left, at_most = at_least | ((char32_t{1} << left) - 1);
    if (at_least >= 0xDC00 && at_most <= 0xDFFF) return false;  // a low surrogate first is no character
    // the escape may still be a character of its own, or the high half of a pair (which the pattern sees as the
    // supplementary code points the pair may spell)
    const char32_t high_first = std::max<char32_t>(at_least, 0xD800), high_last = std::min<char32_t>(at_most, 0xDBFF);
    if (!string_char_fits(f, at_least, at_most) &&
        !(high_first <= high_last && string_char_fits(f, pair_code(high_first, 0xDC00), pair_code(high_last, 0xDFFF))))
      return false;
    if (++f.state < 6) return true;
    if (f.prop >= 0xD800 && f.prop <= 0xDBFF) {  // a high surrogate: "\uDC00" to "\uDFFF" must follow
      f.state = 7;
      return true;
    }
    f.state = 0, lo = hi = static_cast<char32_t>(f.prop), whole = true;
  } else if (f.state == 7 || f.state == 8) {  // the pair's second escape: backslash, then u
    if (c != (f.state == 7 ? '\\' : 'u')) return false;
    if (++f.state == 9) f.prop = (f.prop - 0xD800) << 16;  // the high half's 10 bits over the low digits so far
    return true;
  } else if (f.state >= 9 && f.state <= 12) {  // the low surrogate's digit state - 8
    const int x = hex_value(c);
    if (x < 0) return false;
    const int32_t high = f.prop >> 16, low = (f.prop & 0xFFFF) * 16 + x;
    const int left = 4 * (12 - f.state);
    const char32_t at_least = std::max<char32_t>(static_cast<char32_t>(low) << left, 0xDC00);
    const char32_t at_most =
        std::min<char32_t>((static_cast<char32_t>(low) << left) | ((char32_t{1} << left) - 1), 0xDFFF);
    if (at_least > at_most) return false;
    const char32_t first = pair_code(0xD800 + static_cast<char32_t>(high), at_least),
                   last = pair_code(0xD800 + static_cast<char32_t>(high), at_most);
    f.prop = high << 16 | low;
    if (++f.state < 13) return string_char_fits(f, first, last);
    f.state = 0, lo = hi = first, whole = true;
  } else if (f.pos > 0) {  // a continuation byte; state 6: the first, whose range the lead byte narrows
    if (f.state == 6 ? !utf8_follows(static_cast<unsigned char>(f.prop), u) : (u & 0xC0) != 0x80) return false;
    if (f.state == 6) f.prop &= 0x3F >> f.pos, f.state = 0;
    f.prop = f.prop << 6 | (u & 0x3F);
    --f.pos;
    lo = static_cast<char32_t>(f.prop) << (6 * f.pos), hi = lo | ((char32_t{1} << (6 * f.pos)) - 1);
    whole = f.pos == 0;
  } else if (c == '\\') {
    if (!room) return false;
    f.state = 1, hi = 0x10FFFF;
    if (!f.key) ++f.count;
  } else {
    const int more = utf8_continuations(u);
    if (u < 0x20 || more < 0 || !room) return false;  // control characters are escaped in JSON
    if (!f.key) ++f.count;
    if (more == 0) {
      lo = hi = u, whole = true;
    } else {
      f.state = 6, f.prop = u, f.pos = more;
      static constexpr char32_t kLeast[] = {0, 0x80, 0x800, 0x10000};
      lo = std::max<char32_t>(kLeast[more], static_cast<char32_t>(u & (0x3F >> more)) << (6 * more));
      hi = std::min<char32_t>(
          0x10FFFF, (static_cast<char32_t>(u & (0x3F >> more)) << (6 * more)) | ((char32_t{1} << (6 * more)) - 1));
    }
  }
  if (whole) f.prop = 0;  // between characters the state holds no partial code point (mask caching)
  if (f.key || !node->pattern) return true;
  if (whole) {
    const uint32_t next = node->pattern->next(static_cast<uint32_t>(f.bits), lo);
    if (next == StringPattern::kDead) return false;
    f.bits = next;
    return true;
  }
  return node->pattern->any_in(static_cast<uint32_t>(f.bits), lo, hi);
}

// The top frame is done: its parent takes the next state (and, for a key, which property it named).
void JsonMatcher::pop(Path& p) {
  Frame child = p.stack.back();
  p.stack.pop_back();
  if (p.stack.empty()) return;
  Frame& parent = p.stack.back();
  if (parent.kind == Frame::Kind::object && parent.state == kKey) {
    parent.prop = -1;
    if (child.kind == Frame::Kind::literal)
      for (size_t i = 0; i < child.cands->size(); ++i)
        if ((child.bits >> i & 1) && static_cast<int32_t>((*child.cands)[i].size()) == child.pos)
          parent.prop = static_cast<int32_t>(i);
    parent.state = kColon;
  } else if (parent.kind == Frame::Kind::object && parent.state == kValue) {
    parent.state = kAfterValue;
  } else if (parent.kind == Frame::Kind::array && parent.state == kItem) {
    parent.state = kAfterItem;
    ++parent.count;
  }
}

// c starts a value of `node` in place of the path's top frame (a value frame, already popped by the caller).
void JsonMatcher::start_value(Path p, const SchemaNode* node, char c, std::vector<Path>& out, int hops) const {
  if (p.stack.size() >= kMaxDepth || out.size() >= kMaxPaths || hops > 64) return;  // bounded fan-out and recursion
  Kind k = node->kind;
  if (k == Kind::any_of) {
    for (const SchemaNode* o : node->options) start_value(p, o, c, out, hops + 1);
    return;
  }
  Frame f{Frame::Kind::value};
  f.node = node;
  if (k == Kind::any) {  // the first byte says which kind
    if (c == '{')
      k = Kind::object, f.node = any_object().get();
    else if (c == '[')
      k = Kind::array;
    else if (c == '"')
      k = Kind::string;
    else if (c == '-' || digit(c))
      k = Kind::number;
    else if (c == 't' || c == 'f' || c == 'n')
      k = Kind::literals;
    else
      return;
  }
  switch (k) {
    case Kind::object:
      if (c != '{') return;
      f.kind = Frame::Kind::object;
      f.state = kOpen;
      break;
    case Kind::array:
      if (c != '[') return;
      f.kind = Frame::Kind::array;
      f.state = kArrOpen;
      break;
    case Kind::string:
      if (c != '"') return;
      f.kind = Frame::Kind::string;
      f.prop = 0;
      f.bits = node->pattern ? node->pattern->start() : 0;
      break;
    case Kind::number:
    case Kind::integer: {
      f.kind = Frame::Kind::number;
      p.stack.push_back(f);
      step(std::move(p), c, out);  // the byte is the number's first
      return;
    }
    case Kind::literals: {
      f.kind = Frame::Kind::literal;
      f.cands = node->kind == Kind::any ? &keyword_literals() : &node->literals;
      f.bits = all_bits(f.cands->size());
      p.stack.push_back(f);
      step(std::move(p), c, out);
      return;
    }
    default: return;
  }
  p.ws = 0;
  p.stack.push_back(f);
  out.push_back(std::move(p));
}

void JsonMatcher::step(Path p, char c, std::vector<Path>& out) const {
  if (out.size() >= kMaxPaths) return;
  const bool ws = whitespace(c);
  auto keep_ws = [&](Path q) {
    if (++q.ws <= kMaxWhitespace) out.push_back(std::move(q));
  };
  if (p.stack.empty()) return;  // complete: nothing more (the end of generation comes next)
  if (can_end(p.stack.back())) {
    Path q = p;
    pop(q);
    if (!q.stack.empty()) step(std::move(q), c, out);
  }
  Frame& f = p.stack.back();
  const SchemaNode* node = f.node;
  switch (f.kind) {
    case Frame::Kind::value:
      if (ws) return keep_ws(std::move(p));
      p.stack.pop_back();
      return start_value(std::move(p), node, c, out);
    case Frame::Kind::text: {
      const std::string& t = (*f.cands)[0];
      // whitespace before the closing text, unless it is the text's own (both tried); the opening text is exact
      if (f.pos == 0 && ws && f.cands == &(*texts_)[1]) keep_ws(p);
      if (t[static_cast<size_t>(f.pos)] != c) return;
      p.ws = 0;
      if (++f.pos == static_cast<int32_t>(t.size())) pop(p);
      out.push_back(std::move(p));
      return;
    }
    case Frame::Kind::literal: {
      uint64_t alive = 0;
      for (size_t i = 0; i < f.cands->size(); ++i)
        if ((f.bits >> i & 1) && static_cast<int32_t>((*f.cands)[i].size()) > f.pos &&
            (*f.cands)[i][static_cast<size_t>(f.pos)] == c)
          alive |= uint64_t{1} << i;
      if (!alive) return;
      f.bits = alive;
      ++f.pos;
      p.ws = 0;
      // done at once when no candidate goes on (keys: the closing quote), else lazily (enum [1, 12])
      bool longer = false;
      for (size_t i = 0; i < f.cands->size(); ++i)
        longer |= (alive >> i & 1) && static_cast<int32_t>((*f.cands)[i].size()) > f.pos;
      if (!longer) pop(p);
      out.push_back(std::move(p));
      return;
    }
    case Frame::Kind::string: {
      p.ws = 0;
      if (c == '"' && f.state == 0 && f.pos == 0) {
        if (!string_may_end(f)) return;
        pop(p);
      } else if (!string_byte(f, c)) {
        return;
      }
      out.push_back(std::move(p));
      return;
    }
    case Frame::Kind::number: {
      const bool integer = node->kind == Kind::integer;
      if (++f.count > 40) return;  // no endless digits
      uint8_t next = 255;
      switch (f.state) {
        case kStart: next = c == '-' ? kMinus : c == '0' ? kZero : digit(c) ? kInt : 255; break;
        case kMinus: next = c == '0' ? kZero : digit(c) ? kInt : 255; break;
        case kZero: next = !integer && c == '.' ? kDot : !integer && (c == 'e' || c == 'E') ? kExp : 255; break;
        case kInt:
          next = digit(c) ? kInt : !integer && c == '.' ? kDot : !integer && (c == 'e' || c == 'E') ? kExp : 255;
          break;
        case kDot: next = digit(c) ? kFrac : 255; break;
        case kFrac: next = digit(c) ? kFrac : (c == 'e' || c == 'E') ? kExp : 255; break;
        case kExp: next = (c == '+' || c == '-') ? kExpSign : digit(c) ? kExpDigits : 255; break;
        case kExpSign:
        case kExpDigits: next = digit(c) ? kExpDigits : 255; break;
      }
      if (next == 255) return;
      f.state = next;
      p.ws = 0;
      out.push_back(std::move(p));
      return;
    }
    case Frame::Kind::object: {
      if (ws && f.state != kKey && f.state != kValue) return keep_ws(std::move(p));
      // declared properties come in the schema's order (as llama.cpp's grammars and OpenAI's structured outputs
      // write them): the next key is one from f.count on, up to the first required one; other keys (where
      // allowed) once no required one is owed. In any order, small models wander through other keys and never
      // write a required one (Qwen2.5-Coder-0.5B, sampled: "City" for "city" until max_tokens).
      const size_t n = node->properties.size();
      size_t first_required = static_cast<size_t>(f.count);
      while (first_required < n && !node->required[first_required]) ++first_required;
      const bool all_required = first_required == n;
      const uint64_t unused = all_bits(std::min(n, first_required + 1)) & ~all_bits(static_cast<size_t>(f.count));
      const bool other_keys = node->additional && all_required;
      if ((f.state == kOpen || f.state == kAfterValue) && c == '}') {
        if (!all_required) return;
        p.ws = 0;
        pop(p);
        out.push_back(std::move(p));
        return;
      }
      if (f.state == kAfterValue && c == ',') {
        if (!unused && !other_keys) return;
        f.state = kComma;
        p.ws = 0;
        out.push_back(std::move(p));
        return;
      }
      if ((f.state == kOpen || f.state == kComma) && c == '"') {
        f.state = kKey;
        p.ws = 0;
        if (unused) {  // a declared property that may come next
          Path q = p;
          Frame k{Frame::Kind::literal};
          k.cands = &node->quoted_keys;
          k.bits = unused;
          k.key = true;
          q.stack.push_back(k);
          step(std::move(q), c, out);
        }
        if (other_keys) {  // or any other name (its value any JSON), none spelling a declared one
          Frame k{Frame::Kind::string};
          k.node = node;
          k.key = true;
          k.prop = 0;
          k.bits = all_bits(n);
          k.count = 1;  // bytes of the quoted names matched: the quote
          p.stack.push_back(k);
          out.push_back(std::move(p));
        }
        return;
      }
      if (f.state == kColon && c == ':') {
        Frame v{Frame::Kind::value};
        v.node = f.prop >= 0 ? node->properties[static_cast<size_t>(f.prop)].second : any_value().get();
        if (f.prop >= 0) f.count = f.prop + 1;
        f.state = kValue;
        p.ws = 0;
        p.stack.push_back(v);
        out.push_back(std::move(p));
      }
      return;
    }
    case Frame::Kind::array: {
      if (ws) return keep_ws(std::move(p));
      const bool may_end = f.count >= node->min_items, may_add = node->max_items < 0 || f.count < node->max_items;
      if ((f.state == kArrOpen || f.state == kAfterItem) && c == ']') {
        if (!may_end) return;
        p.ws = 0;
        pop(p);
        out.push_back(std::move(p));
        return;
      }
      if (f.state == kAfterItem && c == ',') {
        if (!may_add) return;
        f.state = kArrComma;
        p.ws = 0;
        out.push_back(std::move(p));
        return;
      }
      if ((f.state == kArrOpen || f.state == kArrComma) && may_add) {
        f.state = kItem;
        const SchemaNode* items = node->items ? node->items : any_value().get();
        start_value(std::move(p), items, c, out);
      }
      return;
    }
  }
}

bool JsonMatcher::feed(char c) {
  std::vector<Path> next;
  for (const Path& p : paths_) step(p, c, next);
  if (next.empty()) return false;
  paths_ = std::move(next);
  return true;
}

bool JsonMatcher::feed(std::string_view bytes) {
  std::vector<Path> saved = paths_;
  for (char c : bytes)
    if (!feed(c)) {
      paths_ = std::move(saved);
      return false;
    }
  return true;
}

bool JsonMatcher::accepting() const {
  for (Path p : paths_) {
    while (!p.stack.empty() && can_end(p.stack.back())) pop(p);
    if (p.stack.empty()) return true;
  }
  return false;
}

bool JsonMatcher::in_plain_string() const {
  if (paths_.size() != 1 || paths_[0].stack.empty()) return false;
  const Frame& f = paths_[0].stack.back();
  return f.kind == Frame::Kind::string && f.state == 0 && f.pos == 0 &&
         (f.key ? !f.bits : f.node->min_length == 0 && f.node->max_length < 0 && !f.node->pattern);
}

std::vector<JsonMatcher> JsonMatcher::paths() const {
  std::vector<JsonMatcher> out;
  for (const Path& p : paths_) {
    JsonMatcher one = *this;
    one.paths_ = {p};
    out.push_back(std::move(one));
  }
  return out;
}

std::string JsonMatcher::key() const {
  std::string k;
  auto put = [&](const void* v, size_t n) { k.append(static_cast<const char*>(v), n); };
  for (const Path& p : paths_) {
    put(&p.ws, sizeof p.ws);
    for (const Frame& f : p.stack) {
      put(&f.kind, 1);
      put(&f.node, sizeof f.node);
      put(&f.state, 1);
      put(&f.key, 1);
      put(&f.prop, sizeof f.prop);
      put(&f.bits, sizeof f.bits);
      put(&f.pos, sizeof f.pos);
      put(&f.cands, sizeof f.cands);
      // counts matter only where a bound reads them: strings and arrays with limits, numbers (their length cap)
      int64_t count = 0;
      if (f.kind == Frame::Kind::string && !f.key && (f.node->min_length > 0 || f.node->max_length >= 0))
        count = f.count;
      if (f.kind == Frame::Kind::string && f.key && f.bits) count = f.count;
      if (f.kind == Frame::Kind::array && (f.node->min_items > 0 || f.node->max_items >= 0)) count = f.count;
      if (f.kind == Frame::Kind::number || f.kind == Frame::Kind::object) count = f.count;
      put(&count, sizeof count);
    }
    k += '|';
  }
  return k;
}

}  // namespace tg::llm::constrain
