// SentencePiece-style encoding for "llama" vocabularies: score-ordered merging of adjacent symbols, as in
// SentencePiece's BPE model and llama.cpp's llm_tokenizer_spm, with <0xNN> byte fallback.
#include <queue>

#include "tokenizer/tokenizer_internal.hpp"

namespace tg::llm::detail {

namespace {

// One symbol of the text being merged: a byte range, linked to its live neighbours.
struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t begin;
  uint32_t size;  // 0 once merged into its left neighbour
};

// A candidate merge of symbols `left` and `right` into a piece of `size` bytes with `score`.
struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t size;
};

// Highest score first; on equal scores the leftmost pair, so the result does not depend on heap order.
struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

SpmEncoder::SpmEncoder(const Vocab& vocab, const TokenIndex& index) : vocab_(vocab), index_(index) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char name[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    TokenId id = index.find(std::string_view(name, 6));
    // Like llama.cpp, a vocabulary without <0xNN> may still spell the byte as a one-byte token.
    if (id < 0) {
      const char c = static_cast<char>(b);
      id = index.find(std::string_view(&c, 1));
    }
    byte_ids_[b] = id;
  }
}

TokenId SpmEncoder::mergeable(std::string_view piece) const {
  const TokenId id = index_.find(piece);
  if (id < 0) return -1;
  switch (vocab_.types.empty() ? TokenType::Normal : vocab_.types[id]) {
    case TokenType::Undefined:
    case TokenType::Normal:
    case TokenType::UserDefined:
    case TokenType::Unused: return id;
    // SentencePiece never merges into control, unknown or byte pieces: "<bos>" typed as text stays text.
    case TokenType::Unknown:
    case TokenType::Control:
    case TokenType::Byte: return -1;
  }
  return -1;
}

void SpmEncoder::resegment(std::string_view piece, const Splits& splits, std::vector<TokenId>& out) const {
  const TokenId id = mergeable(piece);
  if (id >= 0) {
    // An unused piece may only be a step towards a longer one: emit the two pieces it was merged from.
    auto split = splits.find(id);
    if (split != splits.end() && vocab_.types[id] == TokenType::Unused) {
      resegment(split->second.first, splits, out);
      resegment(split->second.second, splits, out);
      return;
    }
    out.push_back(id);
    return;
  }
  bool all_bytes = true;
  for (char c : piece) all_bytes = all_bytes && byte_ids_[static_cast<unsigned char>(c)] >= 0;
  if (all_bytes) {
    for (char c : piece) out.push_back(byte_ids_[static_cast<unsigned char>(c)]);
    return;
  }
  if (vocab_.unk_id < 0)
    throw Error("tokenizer: cannot encode \"" + std::string(piece) +
                "\": the vocabulary has neither its <0xNN> byte tokens nor an unknown token");
  out.push_back(vocab_.unk_id);
}

void SpmEncoder::encode(std::string_view text, std::vector<TokenId>& out) const {
  if (text.empty()) return;
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    // Whole characters; a byte of broken UTF-8 is a symbol of its own (then a byte token), so it cannot swallow
    // the next character's bytes.
    const size_t n = utf8_sequence_length(text, offset);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, index + 1, static_cast<uint32_t>(offset), static_cast<uint32_t>(n)});
    offset += n;
  }
  symbols.back().next = -1;

  std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue;
  // Unused piece -> the two pieces last merged into it (SentencePiece's rev_merge), for resegmenting.
  Splits splits;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[left];
    const Symbol& r = symbols[right];
    const std::string_view piece = text.substr(l.begin, l.size + r.size);
    const TokenId id = mergeable(piece);
    if (id < 0) return;
    queue.push({vocab_.scores.empty() ? 0.0f : vocab_.scores[id], left, right, static_cast<uint32_t>(piece.size())});
    if (!vocab_.types.empty() && vocab_.types[id] == TokenType::Unused)
      splits[id] = {text.substr(l.begin, l.size), text.substr(r.begin, r.size)};
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    // Stale: one side was merged away, or grew (then the sizes no longer add up to the recorded piece).
    if (left.size == 0 || right.size == 0 || left.size + right.size != top.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    try_add(left.prev, top.left);
    try_add(top.left, left.next);
  }

  for (int32_t i = 0; i != -1; i = symbols[i].next)
    resegment(text.substr(symbols[i].begin, symbols[i].size), splits, out);
}

}  // namespace tg::llm::detail
