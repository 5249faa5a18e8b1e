// Tokenizers built from a GGUF vocabulary: SentencePiece-style (`tokenizer.ggml.model = llama`: score-merged
// pieces, "▁" for spaces, <0xNN> byte fallback) and byte-level BPE (`gpt2`: ranked merges over GPT-2's
// byte-to-unicode alphabet after a regex pre-split), with special tokens, decoding and streaming decoding.
//
// Both follow llama.cpp's tokenizers (llm_tokenizer_spm / llm_tokenizer_bpe and their pre-tokenizer regexes), so
// a GGUF tokenizes here as it does there, with SentencePiece's and HuggingFace's rules where llama.cpp is loose:
// control and byte pieces never come out of merging, special tokens match leftmost-longest, and bytes a
// byte-level vocabulary cannot spell become U+FFFD instead of vanishing. A Tokenizer is immutable: copies share
// one read-only state and may be used from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tg/error.hpp"

namespace tg::llm {

class GGUFFile;

using TokenId = int32_t;

// GGUF's tokenizer.ggml.token_type values (the numbering llama.cpp and its converters write).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,      // <unk>: matched in text only when specials are parsed
  Control = 3,      // <bos>, <|im_start|>, <start_of_turn>: matched in text only when specials are parsed
  UserDefined = 4,  // always matched in text as one token, before any merging ("<table>", "\n\n")
  Unused = 5,       // may appear while merging, never in the output (SentencePiece resegments it)
  Byte = 6,         // <0x0A>: SentencePiece byte fallback
};

// Everything a tokenizer is built from, as GGUF stores it under tokenizer.ggml.*.
struct Vocab {
  std::string model = "llama";  // "llama": SentencePiece-style; "gpt2": byte-level BPE
  std::string pre = "default";  // gpt2 only: pre-tokenizer (default, gpt-2, smollm, qwen2, llama-bpe)
  std::vector<std::string> tokens;
  std::vector<float> scores;        // llama: merge priority, higher merges first (empty: all 0)
  std::vector<TokenType> types;     // (optional) per token (empty: all Normal)
  std::vector<std::string> merges;  // gpt2: "left right", rank = index (first merges first)
  TokenId bos_id = -1;              // -1: none
  TokenId eos_id = -1;
  TokenId eot_id = -1;  // (optional) end of turn, when the vocabulary names one
  TokenId unk_id = -1;
  TokenId pad_id = -1;
  bool add_bos = false;           // encode(text, add_special=true) starts with bos_id
  bool add_eos = false;           // ... and ends with eos_id
  bool add_space_prefix = false;  // llama: a " " before the text and after each special token (Llama 2)
};

class Tokenizer {
 public:
  // Validates `vocab` (array lengths, merges naming known tokens, special ids in range, a supported model and
  // pre-tokenizer) and builds the lookup tables; throws tg::Error naming what is wrong.
  explicit Tokenizer(Vocab vocab);
  // Reads tokenizer.ggml.* from a GGUF. Absent flags take llama.cpp's defaults for the model (llama: add_bos and
  // add_space_prefix on; gpt2: off, except add_bos for llama-bpe).
  static Tokenizer from_gguf(const GGUFFile& file);

  // Text (UTF-8; invalid bytes are encoded as bytes) to ids. add_special: add BOS/EOS as the vocabulary asks.
  // parse_special: control tokens written in the text ("<|im_start|>", "<start_of_turn>") become their id
  // (leftmost, longest first); otherwise they are plain text. User-defined tokens always become their id.
  std::vector<TokenId> encode(std::string_view text, bool add_special = true, bool parse_special = false) const;
  // Ids to UTF-8 text. Control and unknown tokens render as their text only with render_special (else
  // nothing); bytes that do not form UTF-8 become U+FFFD. The leading space SentencePiece added is removed.
  // An id outside [0, n_tokens) throws tg::Error.
  std::string decode(std::span<const TokenId> ids, bool render_special = false) const;
  // The bytes one token stands for, possibly part of a UTF-8 character ("<0xE2>" is the byte 0xE2).
  std::string token_bytes(TokenId id, bool render_special = false) const;
  // token_bytes (special tokens rendered) as valid UTF-8, a byte of an unfinished character as U+FFFD: one token
  // as a client sees it alone (logprobs, /tokenize's pieces)
  std::string token_utf8(TokenId id) const;

  size_t n_tokens() const;
  std::string_view token_text(TokenId id) const;  // as the vocabulary spells it ("▁the", "Ġthe", "<0x0A>")
  TokenType token_type(TokenId id) const;
  float token_score(TokenId id) const;
  std::optional<TokenId> find_token(std::string_view text) const;  // exact vocabulary spelling
  TokenId bos() const;  // -1 when the vocabulary has none (same for the others)
  TokenId eos() const;
  TokenId unk() const;
  TokenId pad() const;
  bool add_bos() const;
  bool add_eos() const;
  bool is_spm() const;  // "llama" vocabulary (else byte-level BPE)
  // Whether generation should stop at `id`: EOS, EOT and the turn-ending control tokens llama.cpp recognizes by
  // name (<end_of_turn>, <|im_end|>, <|eot_id|>, <|endoftext|>, ...).
  bool is_end_of_generation(TokenId id) const;
  const Vocab& vocab() const;

 private:
  friend class StreamDecoder;
  struct Impl;
  void check_id(TokenId id) const;
  std::shared_ptr<const Impl> impl_;
};

// Decodes one id at a time (generation): push() returns only complete UTF-8 characters; bytes of a character
// split over several tokens (byte fallback, byte-level BPE) wait for the rest. A sequence that can no longer
// complete becomes U+FFFD; finish() also turns a trailing incomplete one into U+FFFD.
class StreamDecoder {
 public:
  explicit StreamDecoder(Tokenizer tokenizer, bool render_special = false);
  std::string push(TokenId id);  // throws tg::Error for an out-of-range id
  std::string finish();          // whatever is pending; the decoder starts afresh
  void reset();
  bool has_pending() const { return !pending_.empty(); }
  // The bytes the last push() added to the text (its piece, less a SentencePiece prefix space it dropped):
  // where the next token's text starts (logprobs' text_offset).
  size_t last_bytes() const { return last_bytes_; }

 private:
  Tokenizer tokenizer_;
  bool render_special_;
  size_t last_bytes_ = 0;
  bool at_start_ = true;  // the SentencePiece prefix space is still to be removed
  std::string pending_;
};

// The byte-level BPE pre-tokenizer alone (llama.cpp's regexes for `pre`): the pieces `text` is split into
// before merging, in order, covering all of it. Throws tg::Error for an unknown name.
std::vector<std::string> pretokenize(std::string_view text, std::string_view pre);
// Pre-tokenizer names pretokenize() and Vocab::pre accept.
std::vector<std::string> supported_pretokenizers();

}  // namespace tg::llm
