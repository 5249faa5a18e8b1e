// Constrained decoding's per-step mask over the vocabulary: the tokens whose bytes the matcher can take next. The
// vocabulary is a trie of token bytes, walked once per state with a copy of the matcher at each node, so a prefix
// that fails drops every token under it (no full-vocabulary re-scan of each token's bytes), and masks are kept per
// matcher state (a string's or number's middle recurs token after token).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "constrain/json_matcher.hpp"

namespace tg::llm {
class Tokenizer;
}

namespace tg::llm::constrain {

class TokenTrie {
 public:
  // Every token with text (control tokens, which render as nothing, are left out) and the end-of-generation ids.
  explicit TokenTrie(const Tokenizer& tok);
  size_t vocab() const { return vocab_; }
  const std::vector<int32_t>& end_tokens() const { return end_; }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }

  // Sets allowed[id] for each token whose bytes `m` takes (the end tokens where m is accepting).
  void allowed(const JsonMatcher& m, std::vector<uint8_t>& allowed) const;

 private:
  struct Node {
    std::vector<std::pair<char, int32_t>> children;  // sorted by byte
    std::vector<int32_t> tokens;                     // ending here
    int32_t first = 0, last = 0;                     // the subtree's tokens: order_[first, last)
    bool plain = true;                               // every byte below is a plain string byte
  };
  void walk(int32_t node, const JsonMatcher& m, std::vector<uint8_t>& allowed) const;
  // m in a string, between characters (in_plain_string), `pending` continuation bytes owed by the bytes since:
  // those bytes only check UTF-8, with no matcher copy
  // (`lead`: the UTF-8 lead byte when the next byte is its first continuation, which it narrows; else 0)
  void walk_string(int32_t node, const JsonMatcher& m, int pending, unsigned char lead,
                   std::vector<uint8_t>& allowed) const;
  void mark(int32_t node, std::vector<uint8_t>& allowed) const;  // the tokens ending at node
  int32_t number(int32_t node);                                  // fills first / last / plain in depth-first order
  std::vector<Node> nodes_;
  std::vector<int32_t> order_;  // token ids in depth-first order of the trie
  std::vector<std::string> bytes_;
  std::vector<int32_t> end_;
  size_t vocab_ = 0;
};

// One generation's constraint: masks the logits before sampling, and takes the chosen token.
class Constraint {
 public:
  Constraint(std::shared_ptr<const TokenTrie> trie, JsonMatcher matcher);
  // -inf for every token that cannot come next. Where none can (no token spells what the schema needs), only the
  // end tokens stay: the reply ends incomplete instead of failing the batch it shares.
  void apply(std::span<float> logits);
  // The sampled token goes into the matcher (an end token ends the text), or false where the matcher refuses
  // it (a masked token, or one the mask let through where more alternatives were alive than the matcher keeps):
  // then refuse() masks it too, and the sampler draws again.
  bool accept(int32_t token);
  void refuse(int32_t token, std::span<float> logits) const;
  bool accepting() const { return matcher_.accepting(); }
  double mask_seconds() const { return mask_s_; }  // spent building masks so far

 private:
  const std::vector<uint8_t>& mask();
  void end_only(std::span<float> logits) const;  // where no token can continue: the end tokens
  std::shared_ptr<const TokenTrie> trie_;
  JsonMatcher matcher_;
  // masks by matcher state, the most recently used first
  std::list<std::pair<std::string, std::vector<uint8_t>>> lru_;
  std::unordered_map<std::string, std::list<std::pair<std::string, std::vector<uint8_t>>>::iterator> cache_;
  double mask_s_ = 0;
  static constexpr size_t kCached = 64;
};

}  // namespace tg::llm::constrain
