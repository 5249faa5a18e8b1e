// A JSON Schema string `pattern` (the ECMA-262 regular expressions that schemas write: literals, classes, escapes
// \d \w \s, groups, alternation, greedy or lazy quantifiers, ^ and $ at the ends; unanchored, as the keyword
// is) compiled to a DFA over code points, so the matcher keeps one integer per string and the mask can ask
// whether any character of a UTF-8 lead byte's range may come. Anything outside the subset is a SchemaError.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tg::llm::constrain {

class StringPattern {
 public:
  explicit StringPattern(std::string_view regex);  // throws SchemaError naming what is not supported

  static constexpr uint32_t kDead = UINT32_MAX;
  uint32_t start() const { return 0; }
  uint32_t next(uint32_t state, char32_t c) const;  // kDead: c cannot come next
  // Whether some code point in [lo, hi] may come next (a character only partly written).
  bool any_in(uint32_t state, char32_t lo, char32_t hi) const;
  bool accepting(uint32_t state) const { return accepting_[state]; }
  const std::string& source() const { return source_; }

  static constexpr size_t kMaxStates = 2048;

 private:
  size_t interval(char32_t c) const;  // the alphabet interval holding c
  std::string source_;
  std::vector<char32_t> starts_;  // the alphabet's intervals, by first code point
  std::vector<uint32_t> table_;   // state * intervals + interval -> state or kDead
  std::vector<bool> accepting_;
};

}  // namespace tg::llm::constrain
