// Internals shared by the tokenizer's files: the token index, the two merge engines, the pre-tokenizer and
// UTF-8 helpers. Not part of the public API.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/utf8.hpp"

#include "tokenizer/tokenizer.hpp"

namespace tg::llm::detail {

// Strings by id in one buffer: Gemma 3's 262144 tokens take ~3 MB where a std::vector<std::string> took 8 MB
// (and the index below 2 MB where an unordered_map over the strings took 13 MB).
class StringTable {
 public:
  void push_back(std::string_view s);
  std::string_view operator[](size_t i) const {
    return std::string_view(chars_).substr(ends_[i] - length(i), length(i));
  }
  size_t size() const { return ends_.size(); }
  void shrink_to_fit();

 private:
  uint32_t length(size_t i) const { return ends_[i] - (i == 0 ? 0 : ends_[i - 1]); }
  std::string chars_;
  std::vector<uint32_t> ends_;
};

// Token text -> id: open addressing over token ids, the texts staying in their StringTable (which must not
// change after the index is built). The first id of a text wins.
class TokenIndex {
 public:
  TokenIndex() = default;
  explicit TokenIndex(const StringTable& texts);
  TokenId find(std::string_view text) const;  // -1: no such token

 private:
  const StringTable* texts_ = nullptr;
  std::vector<TokenId> slots_;  // -1: empty; a power of two, at most half full
};

// Length of the well-formed UTF-8 sequence at s[i]; 1 for a byte that starts none (it stands alone).
size_t utf8_sequence_length(std::string_view s, size_t i);

// Appends the valid UTF-8 of `bytes` to `out`, with one U+FFFD for each maximal ill-formed subsequence (the
// Unicode "best practice"), and returns how many bytes it consumed. Unless `final`, an incomplete sequence at
// the end that could still complete is left unconsumed.
size_t append_repaired_utf8(std::string_view bytes, bool final, std::string& out);

// GPT-2's reversible byte -> printable code point map, as UTF-8 ("Ġ" for ' '), and its inverse (-1: not a
// mapped code point).
const std::string& byte_to_unicode(uint8_t b);
int unicode_to_byte(uint32_t cp);

// A pre-tokenizer: a sequence of regexes, each splitting every piece the previous ones left (matches and the
// text between them both become pieces), as llama.cpp's unicode_regex_split does.
class PreTokenizer {
 public:
  // Throws tg::Error naming the supported names when `name` is unknown.
  explicit PreTokenizer(std::string_view name);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  void split(std::string_view text, std::vector<std::string_view>& out) const;
  // Whether a whole piece that is a token skips merging (Llama 3's tokenizer.json "ignore_merges").
  bool ignore_merges() const { return ignore_merges_; }

 private:
  struct Patterns;
  std::unique_ptr<Patterns> patterns_;
  bool ignore_merges_ = false;
};
std::vector<std::string> pretokenizer_names();

// SentencePiece-style encoding of one fragment of text whose spaces are already "▁": start from UTF-8
// characters, repeatedly merge the adjacent pair whose concatenation is the highest-scoring piece (leftmost on
// ties), then resegment unused pieces and spell pieces that are not tokens as <0xNN> bytes.
class SpmEncoder {
 public:
  SpmEncoder(const Vocab& vocab, const TokenIndex& index);
  void encode(std::string_view text, std::vector<TokenId>& out) const;

 private:
  TokenId mergeable(std::string_view piece) const;  // -1 unless a piece merging may produce
  using Splits = std::unordered_map<TokenId, std::pair<std::string_view, std::string_view>>;
  void resegment(std::string_view piece, const Splits& splits, std::vector<TokenId>& out) const;
  const Vocab& vocab_;
  const TokenIndex& index_;
  std::array<TokenId, 256> byte_ids_{};  // <0xNN> (or the one-byte token) for each byte; -1: none
};

// Byte-level BPE: pre-tokenize, map each piece's bytes through byte_to_unicode, then repeatedly apply the
// lowest-ranked merge among adjacent symbols (leftmost on ties).
class BpeEncoder {
 public:
  BpeEncoder(const Vocab& vocab, const TokenIndex& index);  // throws tg::Error for a bad merge or pre name
  void encode(std::string_view text, std::vector<TokenId>& out) const;

 private:
  struct Merge {
    int32_t rank;
    TokenId result;
  };
  static uint64_t pair_key(TokenId left, TokenId right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  const TokenIndex& index_;
  std::unordered_map<uint64_t, Merge> merges_;  // pair_key(left, right) -> rank and merged token
  // The initial symbols for each byte: the token spelling its code point; for a byte the vocabulary cannot spell
  // (byte-level vocabularies often lack 0xC0, 0xC1, 0xF5..0xFF and some controls) the symbols of U+FFFD, else
  // the unknown token; empty when not even that exists.
  std::array<std::vector<TokenId>, 256> byte_symbols_;
  PreTokenizer pre_;
};

// Finds special tokens in text: a byte trie over their spellings, for leftmost-longest matching.
class SpecialMatcher {
 public:
  void insert(std::string_view text, TokenId id);
  // The longest token spelled at text[pos] that `allowed(id)` admits, as {id, length}; {-1, 0} when none.
  template <typename Allowed>
  std::pair<TokenId, size_t> match(std::string_view text, size_t pos, const Allowed& allowed) const {
    std::pair<TokenId, size_t> best{-1, 0};
    if (!first_[static_cast<unsigned char>(text[pos])]) return best;
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      node = child(node, static_cast<unsigned char>(text[i]));
      if (node < 0) break;
      TokenId id = nodes_[node].id;
      if (id >= 0 && allowed(id)) best = {id, i + 1 - pos};
    }
    return best;
  }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;  // few children per node: a linear scan is fastest
    TokenId id = -1;
  };
  int32_t child(int32_t node, unsigned char c) const;
  std::vector<Node> nodes_{1};
  std::array<bool, 256> first_{};  // bytes some special token starts with
};

}  // namespace tg::llm::detail

namespace tg::llm {

// The state a Tokenizer shares between its copies; built once, then read-only.
struct Tokenizer::Impl {
  explicit Impl(Vocab v);
  TokenType type(TokenId id) const { return vocab.types.empty() ? TokenType::Normal : vocab.types[id]; }
  // Control, unknown and unused tokens show only when specials are rendered.
  bool hidden(TokenId id) const {
    TokenType t = type(id);
    return t == TokenType::Control || t == TokenType::Unknown || t == TokenType::Unused;
  }
  // Appends the bytes of `id` to `out`; removes the space SentencePiece put before the first piece.
  void append_piece(TokenId id, bool render_special, bool& at_start, std::string& out) const;

  Vocab vocab;                // its tokens (and merges) are moved into the tables below once built
  detail::StringTable texts;  // each token as the vocabulary spells it
  detail::TokenIndex index;
  detail::SpecialMatcher specials;
  std::unique_ptr<detail::SpmEncoder> spm;  // exactly one of spm and bpe is set
  std::unique_ptr<detail::BpeEncoder> bpe;
  detail::StringTable bytes;  // what each token decodes to (control tokens: their spelling)
  std::vector<bool> end_of_generation;
};

}  // namespace tg::llm
