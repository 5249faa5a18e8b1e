// The pattern is parsed to a tree, the tree to a position automaton (Glushkov: one state per character class in
// the pattern, a repeat {n,m} as its copies), and that to a DFA by subset construction over the intervals of code
// points that no class boundary splits.
#include "constrain/string_pattern.hpp"

#include <algorithm>
#include <map>

#include "constrain/json_schema.hpp"

namespace tg::llm::constrain {

namespace {

constexpr char32_t kMaxCode = 0x10FFFF;
using Ranges = std::vector<std::pair<char32_t, char32_t>>;

[[noreturn]] void fail(const std::string& what) { throw SchemaError("'pattern': " + what); }

Ranges normalized(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1)
      out.back().second = std::max(out.back().second, hi);
    else
      out.push_back({lo, hi});
  }
  return out;
}

Ranges complement(const Ranges& r) {
  Ranges out;
  char32_t next = 0;
  for (const auto& [lo, hi] : normalized(r)) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCode) out.push_back({next, kMaxCode});
  return out;
}

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
                       {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Ranges kLineEnds = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

struct Ast {
  enum class Kind { empty, chars, concat, alt, repeat } kind = Kind::empty;
  Ranges chars;
  std::vector<Ast> kids;
  int min = 0, max = -1;  // repeat: -1 unbounded
};

std::vector<char32_t> decode(std::string_view s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int more = c < 0x80                 ? 0
                     : c >= 0xC2 && c <= 0xDF ? 1
                     : c >= 0xE0 && c <= 0xEF ? 2
                     : c >= 0xF0 && c <= 0xF4 ? 3
                                              : -1;
    if (more < 0 || i + static_cast<size_t>(more) >= s.size()) fail("not UTF-8");
    char32_t cp = more == 0 ? c : c & (0x3F >> more);
    for (int k = 1; k <= more; ++k) {
      const auto b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((b & 0xC0) != 0x80) fail("not UTF-8");
      cp = cp << 6 | (b & 0x3F);
    }
    out.push_back(cp);
    i += static_cast<size_t>(more) + 1;
  }
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<char32_t> src) : s_(std::move(src)) {}

  Ast parse() {
    Ast a = alternation();
    if (i_ < s_.size()) fail(s_[i_] == ')' ? "an unmatched ')'" : "'^' and '$' only at the pattern's ends");
    return a;
  }

 private:
  bool more() const { return i_ < s_.size(); }
  char32_t peek() const { return s_[i_]; }
  bool eat(char32_t c) {
    if (more() && peek() == c) return ++i_, true;
    return false;
  }

  Ast alternation() {
    Ast first = concatenation();
    if (!more() || peek() != '|') return first;
    Ast alt{Ast::Kind::alt};
    alt.kids.push_back(std::move(first));
    while (eat('|')) alt.kids.push_back(concatenation());
    return alt;
  }

  Ast concatenation() {
    Ast seq{Ast::Kind::concat};
    while (more() && peek() != '|' && peek() != ')') seq.kids.push_back(repeat());
    return seq;
  }

  int number() {
    int64_t n = 0;
    const size_t at = i_;
    while (more() && peek() >= '0' && peek() <= '9') n = std::min<int64_t>(n * 10 + (peek() - '0'), 1 << 20), ++i_;
    return i_ == at ? -1 : static_cast<int>(n);
  }

  Ast repeat() {
    Ast a = atom();
    int lo = -1, hi = -1;
    if (eat('*'))
      lo = 0;
    else if (eat('+'))
      lo = 1;
    else if (eat('?'))
      lo = 0, hi = 1;
    else if (more() && peek() == '{') {  // {n}, {n,}, {n,m}; a '{' that starts none of them is itself
      const size_t at = i_++;
      lo = number();
      hi = lo;
      if (lo >= 0 && eat(',')) hi = more() && peek() == '}' ? -1 : number();
      if (lo < 0 || (hi < 0 && s_[i_ - 1] != ',') || !eat('}')) {
        i_ = at;
        return a;
      }
      if (hi >= 0 && hi < lo) fail("a repeat {n,m} with m below n");
    }
    if (lo < 0) return a;
    eat('?');  // lazy: the same strings
    if (more() && (peek() == '*' || peek() == '+' || peek() == '?')) fail("a quantifier after a quantifier");
    Ast r{Ast::Kind::repeat};
    r.kids.push_back(std::move(a));
    r.min = lo;
    r.max = hi;
    return r;
  }

  Ast chars(Ranges r) {
    Ast a{Ast::Kind::chars};
    a.chars = normalized(std::move(r));
    return a;
  }

  Ast atom() {
    const char32_t c = s_[i_++];
    switch (c) {
      case '(': {
        if (eat('?')) {
          if (eat(':')) {
          } else if (eat('<') && more() && peek() != '=' && peek() != '!') {  // a named group: a group
            while (more() && peek() != '>') ++i_;
            if (!eat('>')) fail("an unterminated group name");
          } else {
            fail("lookaround assertions ((?=, (?!, (?<=, (?<!) are not supported");
          }
        }
        Ast inner = alternation();
        if (!eat(')')) fail("an unmatched '('");
        return inner;
      }
      case '[': return chars(set());
      case '.': return chars(complement(kLineEnds));
      case '\\': return chars(escape(false));
      case '*':
      case '+':
      case '?': fail("nothing to repeat before a quantifier");
      case '^':
      case '$': fail("'^' and '$' only at the pattern's ends");
      case ')': fail("an unmatched ')'");
      default: return chars({{c, c}});
    }
  }

  char32_t hex(int digits) {
    char32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (!more()) fail("a short \\x or \\u escape");
      const char32_t d = peek();
      const int x = d >= '0' && d <= '9'   ? static_cast<int>(d - '0')
                    : d >= 'a' && d <= 'f' ? static_cast<int>(d - 'a' + 10)
                    : d >= 'A' && d <= 'F' ? static_cast<int>(d - 'A' + 10)
                                           : -1;
      if (x < 0) fail("a bad \\x or \\u escape");
      v = v * 16 + static_cast<char32_t>(x);
      ++i_;
    }
    return v;
  }

  // After a backslash: a class escape's set, or one character.
  Ranges escape(bool in_class) {
    if (!more()) fail("a trailing backslash");
    const char32_t c = s_[i_++];
    switch (c) {
      case 'd': return kDigit;
      case 'D': return complement(kDigit);
      case 'w': return kWord;
      case 'W': return complement(kWord);
      case 's': return kSpace;
      case 'S': return complement(kSpace);
      case 'n': return {{'\n', '\n'}};
      case 't': return {{'\t', '\t'}};
      case 'r': return {{'\r', '\r'}};
      case 'f': return {{'\f', '\f'}};
      case 'v': return {{'\v', '\v'}};
      case '0': return {{0, 0}};
      case 'x': {
        const char32_t v = hex(2);
        return {{v, v}};
      }
      case 'u': {
        const char32_t v = hex(4);
        return {{v, v}};
      }
      case 'b':
        if (in_class) return {{'\b', '\b'}};
        fail("word boundaries (\\b) are not supported");
      case 'B': fail("word boundaries (\\B) are not supported");
      case 'p':
      case 'P': fail("Unicode property escapes (\\p, \\P) are not supported");
      case 'k': fail("named backreferences (\\k) are not supported");
      case 'c': fail("control escapes (\\c) are not supported");
      default:
        if (c >= '1' && c <= '9') fail("backreferences are not supported");
        return {{c, c}};  // an escaped punctuation character is itself
    }
  }

  // One member of a class: a character (single is true) or a class escape's set.
  Ranges member(bool& single) {
    if (!more()) fail("an unterminated '['");
    const char32_t c = s_[i_++];
    Ranges r = c == '\\' ? escape(true) : Ranges{{c, c}};
    single = r.size() == 1 && r[0].first == r[0].second;
    return r;
  }

  Ranges set() {
    const bool negated = eat('^');
    Ranges r;
    while (more() && peek() != ']') {
      bool single = false;
      Ranges lo = member(single);
      if (single && more() && peek() == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        ++i_;
        Ranges hi = member(single);
        if (!single) fail("a class range that ends in a class escape");
        if (hi[0].first < lo[0].first) fail("a class range out of order");
        r.push_back({lo[0].first, hi[0].first});
      } else {
        r.insert(r.end(), lo.begin(), lo.end());
      }
    }
    if (!eat(']')) fail("an unterminated '['");
    r = negated ? complement(r) : normalized(r);
    if (r.empty()) fail("a class that matches no character");
    return r;
  }

  std::vector<char32_t> s_;
  size_t i_ = 0;
};

// The position automaton of a tree: positions (their character sets), which follow which, and the ends.
struct Positions {
  std::vector<Ranges> sets;
  std::vector<std::vector<int>> follow;
  struct Part {
    bool nullable = true;
    std::vector<int> first, last;
  };

  static void add(std::vector<int>& to, const std::vector<int>& from) { to.insert(to.end(), from.begin(), from.end()); }

  Part concat(Part a, const Part& b) {
    for (int x : a.last) add(follow[static_cast<size_t>(x)], b.first);
    if (a.nullable) add(a.first, b.first);
    std::vector<int> last = b.last;
    if (b.nullable) add(last, a.last);
    return {a.nullable && b.nullable, std::move(a.first), std::move(last)};
  }

  Part build(const Ast& t) {
    if (sets.size() > 4096) fail("the pattern is too large once its repeats are expanded (more than 4096 characters)");
    switch (t.kind) {
      case Ast::Kind::empty: return {};
      case Ast::Kind::chars: {
        const int id = static_cast<int>(sets.size());
        sets.push_back(t.chars);
        follow.emplace_back();
        return {false, {id}, {id}};
      }
      case Ast::Kind::concat: {
        Part p;
        for (const Ast& k : t.kids) p = concat(std::move(p), build(k));
        return p;
      }
      case Ast::Kind::alt: {
        Part p{false, {}, {}};
        for (const Ast& k : t.kids) {
          Part q = build(k);
          p.nullable |= q.nullable;
          add(p.first, q.first);
          add(p.last, q.last);
        }
        return p;
      }
      case Ast::Kind::repeat: {
        Part p;
        for (int i = 0; i < t.min; ++i) p = concat(std::move(p), build(t.kids[0]));
        if (t.max < 0) {
          Part s = build(t.kids[0]);
          for (int x : s.last) add(follow[static_cast<size_t>(x)], s.first);
          s.nullable = true;
          return concat(std::move(p), s);
        }
        for (int i = t.min; i < t.max; ++i) {
          Part s = build(t.kids[0]);
          s.nullable = true;
          p = concat(std::move(p), s);
        }
        return p;
      }
    }
    return {};
  }
};

bool contains(const Ranges& r, char32_t c) {
  auto it = std::upper_bound(r.begin(), r.end(), c, [](char32_t v, const auto& p) { return v < p.first; });
  return it != r.begin() && std::prev(it)->second >= c;
}

}  // namespace

StringPattern::StringPattern(std::string_view regex) : source_(regex) {
  std::vector<char32_t> cps = decode(regex);
  // ^ and $ at the ends anchor; without them the pattern may match anywhere in the string (JSON Schema's rule)
  const bool head = !cps.empty() && cps.front() == '^';
  size_t backslashes = 0;
  for (size_t i = cps.size() - 1; cps.size() >= 2 && i > 0 && cps[i - 1] == '\\'; --i) ++backslashes;
  const bool tail = cps.size() > static_cast<size_t>(head) && cps.back() == '$' && backslashes % 2 == 0;
  Ast body = Parser(std::vector<char32_t>(cps.begin() + head, cps.end() - tail)).parse();
  if ((head || tail) && body.kind == Ast::Kind::alt) fail("'^' or '$' with '|' outside a group: write ^(a|b)$");
  Ast any_run{Ast::Kind::repeat};
  any_run.kids.push_back(Ast{Ast::Kind::chars, {{0, kMaxCode}}, {}, 0, -1});
  Ast whole{Ast::Kind::concat};
  if (!head) whole.kids.push_back(any_run);
  whole.kids.push_back(std::move(body));
  if (!tail) whole.kids.push_back(any_run);

  Positions pos;
  const Positions::Part top = pos.build(whole);
  // the alphabet: intervals no set splits
  std::vector<char32_t> cuts = {0};
  for (const Ranges& r : pos.sets)
    for (const auto& [lo, hi] : r) {
      cuts.push_back(lo);
      if (hi < kMaxCode) cuts.push_back(hi + 1);
    }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  starts_ = cuts;
  const size_t n = starts_.size();
  if (n * kMaxStates > (size_t{1} << 24)) fail("too many distinct character classes");

  // subset construction; state 0 is "nothing read yet" (the virtual position -1, followed by top.first)
  auto canonical = [](std::vector<int> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  std::map<std::vector<int>, uint32_t> ids;
  std::vector<std::vector<int>> states = {{-1}};
  ids[{-1}] = 0;
  for (size_t s = 0; s < states.size(); ++s) {
    bool acc = false;
    std::vector<int> reach;
    for (int p : states[s]) {
      if (p < 0) {
        acc |= top.nullable;
        Positions::add(reach, top.first);
      } else {
        acc |= std::find(top.last.begin(), top.last.end(), p) != top.last.end();
        Positions::add(reach, pos.follow[static_cast<size_t>(p)]);
      }
    }
    reach = canonical(std::move(reach));
    accepting_.push_back(acc);
    for (size_t iv = 0; iv < n; ++iv) {
      std::vector<int> next;
      for (int q : reach)
        if (contains(pos.sets[static_cast<size_t>(q)], starts_[iv])) next.push_back(q);
      uint32_t id = kDead;
      if (!next.empty()) {
        auto [it, fresh] = ids.emplace(next, static_cast<uint32_t>(states.size()));
        if (fresh) {
          if (states.size() >= kMaxStates)
            fail("too complex (more than " + std::to_string(kMaxStates) + " automaton states)");
          states.push_back(next);
        }
        id = it->second;
      }
      table_.push_back(id);
    }
  }
}

size_t StringPattern::interval(char32_t c) const {
  return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), c) - starts_.begin()) - 1;
}

uint32_t StringPattern::next(uint32_t state, char32_t c) const {
  if (c > kMaxCode) return kDead;
  return table_[state * starts_.size() + interval(c)];
}

bool StringPattern::any_in(uint32_t state, char32_t lo, char32_t hi) const {
  for (size_t iv = interval(std::min(lo, kMaxCode)); iv < starts_.size() && starts_[iv] <= hi; ++iv)
    if (table_[state * starts_.size() + iv] != kDead) return true;
  return false;
}

}  // namespace tg::llm::constrain
