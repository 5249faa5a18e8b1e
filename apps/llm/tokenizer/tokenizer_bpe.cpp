// Byte-level BPE for "gpt2" vocabularies: GPT-2's byte-to-unicode alphabet and rank-ordered merging, as in
// llama.cpp's llm_tokenizer_bpe and HuggingFace's BPE model.
#include <algorithm>
#include <cstdio>

#include "tokenizer/tokenizer_internal.hpp"

namespace tg::llm::detail {

namespace {

// GPT-2 keeps the printable Latin-1 bytes as their own code point and moves the other 68 (controls, space,
// 0x7F-0xA0, soft hyphen) to U+0100.. in byte order, so every byte has a visible, reversible spelling.
struct ByteAlphabet {
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 256 + 68> from_code_point{};

  ByteAlphabet() {
    from_code_point.fill(-1);
    int moved = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const int cp = printable ? b : 256 + moved++;
      append_utf8(to_utf8[b], static_cast<uint32_t>(cp));
      from_code_point[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

// A symbol of the word being merged: one token, linked to its live neighbours.
struct Symbol {
  TokenId id;
  int32_t prev;
  int32_t next;
  bool alive;
};

// A candidate merge of the pair (left, right), valid while both still hold the recorded tokens.
struct Candidate {
  int32_t rank;
  int32_t left;
  int32_t right;
  TokenId left_id;
  TokenId right_id;
  TokenId result;
};

// Lowest rank first; on equal ranks (the same merge twice) the leftmost pair.
struct LowerPriority {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return alphabet().to_utf8[b]; }

int unicode_to_byte(uint32_t cp) {
  const auto& table = alphabet().from_code_point;
  return cp < table.size() ? table[cp] : -1;
}

BpeEncoder::BpeEncoder(const Vocab& vocab, const TokenIndex& index) : index_(index), pre_(vocab.pre) {
  auto spell = [&](uint8_t b) { return index.find(byte_to_unicode(b)); };
  // Unspellable bytes only come from broken or unusual text; U+FFFD keeps a visible trace of them where
  // llama.cpp and HuggingFace drop them silently.
  const TokenId replacement[] = {spell(0xEF), spell(0xBF), spell(0xBD)};
  const bool can_replace = replacement[0] >= 0 && replacement[1] >= 0 && replacement[2] >= 0;
  for (int b = 0; b < 256; ++b) {
    if (const TokenId id = spell(static_cast<uint8_t>(b)); id >= 0)
      byte_symbols_[b] = {id};
    else if (can_replace)
      byte_symbols_[b].assign(std::begin(replacement), std::end(replacement));
    else if (vocab.unk_id >= 0)
      byte_symbols_[b] = {vocab.unk_id};
  }
  auto lookup = [&](size_t rank, const std::string& merge, std::string_view text) {
    const TokenId id = index.find(text);
    if (id < 0)
      throw Error("tokenizer: merge " + std::to_string(rank) + " \"" + merge + "\" names \"" + std::string(text) +
                  "\", which is not in the vocabulary");
    return id;
  };
  merges_.reserve(vocab.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const std::string& merge = vocab.merges[rank];
    // Split at the first space after the first byte, as llama.cpp does (byte-level tokens spell ' ' as "Ġ").
    const size_t space = merge.size() > 1 ? merge.find(' ', 1) : std::string::npos;
    if (space == std::string::npos || space + 1 == merge.size())
      throw Error("tokenizer: merge " + std::to_string(rank) + " \"" + merge +
                  "\" is not two tokens separated by a space");
    const std::string_view left(merge.data(), space);
    const std::string_view right(merge.data() + space + 1, merge.size() - space - 1);
    joined.assign(left);
    joined.append(right);
    const TokenId l = lookup(rank, merge, left);
    const TokenId r = lookup(rank, merge, right);
    const TokenId result = lookup(rank, merge, joined);
    merges_.try_emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), result});  // a repeat keeps its first rank
  }
}

void BpeEncoder::encode(std::string_view text, std::vector<TokenId>& out) const {
  std::vector<std::string_view> words;
  pre_.split(text, words);
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;  // a max-heap under LowerPriority, reused across words
  std::string spelled;

  for (std::string_view word : words) {
    if (word.empty()) continue;
    if (pre_.ignore_merges()) {
      spelled.clear();
      for (char c : word) spelled += byte_to_unicode(static_cast<uint8_t>(c));
      if (const TokenId id = index_.find(spelled); id >= 0) {
        out.push_back(id);
        continue;
      }
    }

    symbols.clear();
    for (char c : word) {
      const auto b = static_cast<unsigned char>(c);
      if (byte_symbols_[b].empty()) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(b));
        throw Error(std::string("tokenizer: cannot encode byte ") + hex + ": the vocabulary spells neither it (\"" +
                    byte_to_unicode(b) + "\") nor U+FFFD and has no unknown token");
      }
      for (TokenId id : byte_symbols_[b]) {
        const auto index = static_cast<int32_t>(symbols.size());
        symbols.push_back({id, index - 1, index + 1, true});
      }
    }
    symbols.back().next = -1;

    heap.clear();
    auto try_add = [&](int32_t left, int32_t right) {
      if (left < 0 || right < 0) return;
      const TokenId l = symbols[left].id;
      const TokenId r = symbols[right].id;
      auto it = merges_.find(pair_key(l, r));
      if (it == merges_.end()) return;
      heap.push_back({it->second.rank, left, right, l, r, it->second.result});
      std::push_heap(heap.begin(), heap.end(), LowerPriority{});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), LowerPriority{});
      const Candidate top = heap.back();
      heap.pop_back();
      Symbol& left = symbols[top.left];
      Symbol& right = symbols[top.right];
      // Stale: a side was merged away or already became another token.
      if (!left.alive || !right.alive || left.next != top.right || left.id != top.left_id || right.id != top.right_id)
        continue;
      left.id = top.result;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = top.left;
      try_add(left.prev, top.left);
      try_add(top.left, left.next);
    }

    for (int32_t i = 0; i != -1; i = symbols[i].next) out.push_back(symbols[i].id);
  }
}

}  // namespace tg::llm::detail
