// Tokenizer: vocabulary validation, the lookup tables, and encoding (special tokens split out first, the text
// between them handed to the SentencePiece or byte-level BPE engine).
#include "tokenizer/tokenizer.hpp"

#include "tokenizer/tokenizer_internal.hpp"

namespace tg::llm {

namespace detail {

int32_t SpecialMatcher::child(int32_t node, unsigned char c) const {
  for (auto [byte, next] : nodes_[node].next)
    if (byte == c) return next;
  return -1;
}

void SpecialMatcher::insert(std::string_view text, TokenId id) {
  if (text.empty()) return;
  first_[static_cast<unsigned char>(text[0])] = true;
  int32_t node = 0;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    int32_t next = child(node, c);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_[node].next.emplace_back(c, next);
      nodes_.emplace_back();
    }
    node = next;
  }
  if (nodes_[node].id < 0) nodes_[node].id = id;  // a repeated spelling keeps its first id
}

}  // namespace detail

namespace {

std::string out_of_range(const char* what, int64_t id, size_t n) {
  return std::string("tokenizer: ") + what + " " + std::to_string(id) + " out of range (vocab size " +
         std::to_string(n) + ")";
}

// "<0x0A>" -> 0x0A; -1 for any other spelling.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                             : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// SentencePiece spells a space as U+2581 "▁".
constexpr std::string_view kSpaceMark = "\xE2\x96\x81";

// What a normal token decodes to.
std::string spm_piece_bytes(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, 3) == kSpaceMark) {
      out += ' ';
      i += 3;
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::string bpe_piece_bytes(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t n = detail::utf8_sequence_length(text, i);
    uint32_t cp = n == 1 ? lead : lead & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    const int byte = detail::unicode_to_byte(cp);
    // A code point outside GPT-2's alphabet (a hand-made vocabulary) decodes to itself.
    if (byte >= 0)
      out += static_cast<char>(byte);
    else
      out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

// Tokens llama.cpp treats as the end of a turn by their spelling (and forces to control type).
bool names_end_of_turn(std::string_view text) {
  for (std::string_view name :
       {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>"})
    if (text == name) return true;
  return false;
}

}  // namespace

namespace detail {

void StringTable::push_back(std::string_view s) {
  if (chars_.size() + s.size() > UINT32_MAX) throw Error("tokenizer: the vocabulary's strings exceed 4 GiB");
  chars_.append(s);
  ends_.push_back(static_cast<uint32_t>(chars_.size()));
}

void StringTable::shrink_to_fit() {
  chars_.shrink_to_fit();
  ends_.shrink_to_fit();
}

TokenIndex::TokenIndex(const StringTable& texts) : texts_(&texts) {
  size_t cap = 16;
  while (cap < texts.size() * 2) cap *= 2;
  slots_.assign(cap, -1);
  for (size_t i = 0; i < texts.size(); ++i) {
    size_t at = std::hash<std::string_view>{}(texts[i]) & (cap - 1);
    while (slots_[at] >= 0 && texts[slots_[at]] != texts[i]) at = (at + 1) & (cap - 1);
    if (slots_[at] < 0) slots_[at] = static_cast<TokenId>(i);  // a repeated text keeps its first id
  }
}

TokenId TokenIndex::find(std::string_view text) const {
  if (slots_.empty()) return -1;
  const size_t mask = slots_.size() - 1;
  for (size_t at = std::hash<std::string_view>{}(text)&mask;; at = (at + 1) & mask) {
    if (slots_[at] < 0) return -1;
    if ((*texts_)[slots_[at]] == text) return slots_[at];
  }
}

}  // namespace detail

Tokenizer::Impl::Impl(Vocab v) : vocab(std::move(v)) {
  const size_t n = vocab.tokens.size();
  if (vocab.model != "llama" && vocab.model != "gpt2")
    throw Error("tokenizer: unsupported tokenizer model '" + vocab.model + "' (supported: llama, gpt2)");
  if (n == 0) throw Error("tokenizer: the vocabulary has no tokens");
  if (n > static_cast<size_t>(INT32_MAX)) throw Error("tokenizer: " + std::to_string(n) + " tokens is too many");
  if (!vocab.scores.empty() && vocab.scores.size() != n)
    throw Error("tokenizer: " + std::to_string(n) + " tokens but " + std::to_string(vocab.scores.size()) + " scores");
  if (!vocab.types.empty() && vocab.types.size() != n)
    throw Error("tokenizer: " + std::to_string(n) + " tokens but " + std::to_string(vocab.types.size()) +
                " token types");
  for (size_t i = 0; i < vocab.types.size(); ++i) {
    const auto t = static_cast<int32_t>(vocab.types[i]);
    if (t < 0 || t > static_cast<int32_t>(TokenType::Byte))
      throw Error("tokenizer: token " + std::to_string(i) + " has type " + std::to_string(t) +
                  " (valid: 0 undefined .. 6 byte)");
  }
  const std::pair<const char*, TokenId> special_ids[] = {{"bos id", vocab.bos_id},
                                                         {"eos id", vocab.eos_id},
                                                         {"eot id", vocab.eot_id},
                                                         {"unknown token id", vocab.unk_id},
                                                         {"padding id", vocab.pad_id}};
  for (auto [what, id] : special_ids)
    if (id < -1 || id >= static_cast<int64_t>(n)) throw Error(out_of_range(what, id, n));
  if (vocab.add_bos && vocab.bos_id < 0) throw Error("tokenizer: add_bos_token is set but there is no bos token id");
  if (vocab.add_eos && vocab.eos_id < 0) throw Error("tokenizer: add_eos_token is set but there is no eos token id");

  // Like llama.cpp: an empty spelling could never be matched or merged, so give it a visible placeholder.
  for (size_t i = 0; i < n; ++i)
    if (vocab.tokens[i].empty()) vocab.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";
  for (size_t i = 0; i < n; ++i)
    if (names_end_of_turn(vocab.tokens[i]) && !vocab.types.empty()) vocab.types[i] = TokenType::Control;

  // From here on the vocabulary is final: packed into `texts`, which the index reads.
  for (const std::string& t : vocab.tokens) texts.push_back(t);
  texts.shrink_to_fit();
  std::vector<std::string>().swap(vocab.tokens);
  index = detail::TokenIndex(texts);

  end_of_generation.assign(n, false);
  const bool is_spm = vocab.model == "llama";
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<TokenId>(i);
    const std::string_view text = texts[i];
    switch (type(id)) {
      case TokenType::Byte: {
        const int b = parse_byte_token(text);
        const char c = static_cast<char>(b);
        bytes.push_back(b >= 0 ? std::string_view(&c, 1) : text);
        break;
      }
      case TokenType::Undefined:
      case TokenType::Normal: bytes.push_back(is_spm ? spm_piece_bytes(text) : bpe_piece_bytes(text)); break;
      // Special tokens are spelled in the vocabulary as they are written in text.
      case TokenType::Unknown:
      case TokenType::Control:
      case TokenType::UserDefined:
      case TokenType::Unused: bytes.push_back(text); break;
    }
    const TokenType t = type(id);
    if (t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) specials.insert(text, id);
    end_of_generation[i] = id == vocab.eos_id || id == vocab.eot_id || names_end_of_turn(text);
  }

  bytes.shrink_to_fit();
  if (is_spm) {
    spm = std::make_unique<detail::SpmEncoder>(vocab, index);
  } else {
    bpe = std::make_unique<detail::BpeEncoder>(vocab, index);
    std::vector<std::string>().swap(vocab.merges);  // the encoder keeps them as (left, right) -> rank
  }
}

Tokenizer::Tokenizer(Vocab vocab) : impl_(std::make_shared<const Impl>(std::move(vocab))) {}

void Tokenizer::check_id(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->texts.size())
    throw Error(out_of_range("token id", id, impl_->texts.size()));
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const Impl& m = *impl_;
  const Vocab& v = m.vocab;
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && v.add_bos) out.push_back(v.bos_id);

  // SentencePiece puts a space before the text and, like llama.cpp, after every special token.
  bool after_special = true;
  std::string escaped;
  auto encode_text = [&](std::string_view fragment) {
    if (fragment.empty()) return;
    if (m.bpe) {
      m.bpe->encode(fragment, out);
    } else {
      escaped.clear();
      if (v.add_space_prefix && after_special) escaped += kSpaceMark;
      for (char c : fragment)
        if (c == ' ')
          escaped += kSpaceMark;
        else
          escaped += c;
      m.spm->encode(escaped, out);
    }
    after_special = false;
  };

  // Control and unknown tokens count only when parsing specials; user-defined ones always do.
  auto allowed = [&](TokenId id) {
    const TokenType t = m.type(id);
    return parse_special || (t != TokenType::Control && t != TokenType::Unknown);
  };
  size_t fragment_begin = 0;
  for (size_t i = 0; i < text.size();) {
    const auto [id, length] = m.specials.match(text, i, allowed);
    if (id < 0) {
      ++i;
      continue;
    }
    encode_text(text.substr(fragment_begin, i - fragment_begin));
    out.push_back(id);
    after_special = true;
    i += length;
    fragment_begin = i;
  }
  encode_text(text.substr(fragment_begin));

  if (add_special && v.add_eos) out.push_back(v.eos_id);
  return out;
}

size_t Tokenizer::n_tokens() const { return impl_->texts.size(); }

std::string_view Tokenizer::token_text(TokenId id) const {
  check_id(id);
  return impl_->texts[id];
}

TokenType Tokenizer::token_type(TokenId id) const {
  check_id(id);
  return impl_->type(id);
}

float Tokenizer::token_score(TokenId id) const {
  check_id(id);
  return impl_->vocab.scores.empty() ? 0.0f : impl_->vocab.scores[id];
}

std::optional<TokenId> Tokenizer::find_token(std::string_view text) const {
  const TokenId id = impl_->index.find(text);
  if (id < 0) return std::nullopt;
  return id;
}

TokenId Tokenizer::bos() const { return impl_->vocab.bos_id; }
TokenId Tokenizer::eos() const { return impl_->vocab.eos_id; }
TokenId Tokenizer::unk() const { return impl_->vocab.unk_id; }
TokenId Tokenizer::pad() const { return impl_->vocab.pad_id; }
bool Tokenizer::add_bos() const { return impl_->vocab.add_bos; }
bool Tokenizer::add_eos() const { return impl_->vocab.add_eos; }
bool Tokenizer::is_spm() const { return impl_->spm != nullptr; }
const Vocab& Tokenizer::vocab() const { return impl_->vocab; }

bool Tokenizer::is_end_of_generation(TokenId id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->end_of_generation.size() && impl_->end_of_generation[id];
}

std::vector<std::string> pretokenize(std::string_view text, std::string_view pre) {
  detail::PreTokenizer splitter(pre);
  std::vector<std::string_view> pieces;
  splitter.split(text, pieces);
  return {pieces.begin(), pieces.end()};
}

std::vector<std::string> supported_pretokenizers() { return detail::pretokenizer_names(); }

}  // namespace tg::llm
