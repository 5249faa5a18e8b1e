// Decoding: token ids to bytes to repaired UTF-8, all at once (Tokenizer::decode) or one id at a time
// (StreamDecoder).
#include "tokenizer/tokenizer_internal.hpp"

namespace tg::llm {

namespace detail {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

size_t utf8_sequence_length(std::string_view s, size_t i) {
  size_t length = 0;
  return scan_utf8(s, i, length) == Utf8Scan::Complete ? length : 1;
}

size_t append_repaired_utf8(std::string_view bytes, bool final, std::string& out) {
  size_t i = 0;
  while (i < bytes.size()) {
    size_t length = 0;
    switch (scan_utf8(bytes, i, length)) {
      case Utf8Scan::Complete: out.append(bytes.substr(i, length)); break;
      case Utf8Scan::Invalid: out += kReplacement; break;
      case Utf8Scan::Truncated:
        if (!final) return i;  // may still complete with the next token's bytes
        out += kReplacement;
        break;
    }
    i += length;
  }
  return i;
}

}  // namespace detail

void Tokenizer::Impl::append_piece(TokenId id, bool render_special, bool& at_start, std::string& out) const {
  if (hidden(id) && !render_special) return;
  const std::string_view piece = bytes[id];
  if (piece.empty()) return;
  // SentencePiece's prefix space belongs to encoding; the first piece gives it back (as SentencePiece does).
  const bool strip = at_start && spm && vocab.add_space_prefix && type(id) == TokenType::Normal && piece[0] == ' ';
  at_start = false;
  out.append(piece.substr(strip ? 1 : 0));
}

std::string Tokenizer::token_bytes(TokenId id, bool render_special) const {
  check_id(id);
  if (impl_->hidden(id) && !render_special) return {};
  return std::string(impl_->bytes[id]);
}

std::string Tokenizer::token_utf8(TokenId id) const {
  std::string out;
  detail::append_repaired_utf8(token_bytes(id, true), true, out);
  return out;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool render_special) const {
  std::string raw;
  bool at_start = true;
  for (TokenId id : ids) {
    check_id(id);
    impl_->append_piece(id, render_special, at_start, raw);
  }
  std::string out;
  out.reserve(raw.size());
  detail::append_repaired_utf8(raw, /*final=*/true, out);
  return out;
}

StreamDecoder::StreamDecoder(Tokenizer tokenizer, bool render_special)
    : tokenizer_(std::move(tokenizer)), render_special_(render_special) {}

std::string StreamDecoder::push(TokenId id) {
  tokenizer_.check_id(id);
  const size_t before = pending_.size();
  tokenizer_.impl_->append_piece(id, render_special_, at_start_, pending_);
  last_bytes_ = pending_.size() - before;
  std::string out;
  const size_t used = detail::append_repaired_utf8(pending_, /*final=*/false, out);
  pending_.erase(0, used);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  detail::append_repaired_utf8(pending_, /*final=*/true, out);
  reset();
  return out;
}

void StreamDecoder::reset() {
  pending_.clear();
  at_start_ = true;
}

}  // namespace tg::llm
