// Byte-level BPE pre-tokenizers: llama.cpp's regexes for each tokenizer.ggml.pre name, run with ICU's regex
// engine (std::regex has no \p{L} / \p{N}).
#include <unicode/regex.h>
#include <unicode/utext.h>

#include "tokenizer/tokenizer_internal.hpp"

namespace tg::llm::detail {

namespace {

// The regexes as llama.cpp writes them (llama_vocab's llm_tokenizer_bpe), so they can be compared verbatim.
constexpr const char* kGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";
constexpr const char* kLlama3 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kQwen2 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

struct PreSpec {
  const char* name;
  std::vector<const char*> regexes;  // applied in order, each to the pieces the previous ones left
  bool ignore_merges;
};

const std::vector<PreSpec>& specs() {
  static const std::vector<PreSpec> table = {
      // llama.cpp's fallback for BPE vocabularies: punctuation runs, GPT-2's split, digit runs, then threes.
      {"default", {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, R"re(\p{N}+)re", "[0-9][0-9][0-9]"}, false},
      {"gpt-2", {kGpt2}, false},
      {"smollm", {R"re(\p{N})re", kGpt2}, false},  // single digits, then GPT-2
      {"qwen2", {kQwen2}, false},
      {"llama-bpe", {kLlama3}, true},
      {"llama3", {kLlama3}, true},
      {"llama-v3", {kLlama3}, true},
  };
  return table;
}

// ICU's \s is [\t\n\f\r\p{Z}], which misses \v and U+0085; llama.cpp (and Python's regex module) mean Unicode
// White_Space, so spell that out.
std::string to_icu_syntax(std::string_view pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char next = pattern[++i];
    if (next == 's')
      out += "\\p{White_Space}";
    else if (next == 'S')
      out += "\\P{White_Space}";
    else
      (out += '\\') += next;  // any other escape, including "\\", stays as it is
  }
  return out;
}

}  // namespace

struct PreTokenizer::Patterns {
  std::vector<std::unique_ptr<icu::RegexPattern>> regexes;
};

std::vector<std::string> pretokenizer_names() {
  std::vector<std::string> names;
  for (const PreSpec& s : specs()) names.emplace_back(s.name);
  return names;
}

PreTokenizer::PreTokenizer(std::string_view name) : patterns_(std::make_unique<Patterns>()) {
  const PreSpec* spec = nullptr;
  for (const PreSpec& s : specs())
    if (name == s.name) spec = &s;
  if (!spec) {
    std::string supported;
    for (const std::string& n : pretokenizer_names()) supported += (supported.empty() ? "" : ", ") + n;
    throw Error("tokenizer: unsupported pre-tokenizer '" + std::string(name) + "' (supported: " + supported + ")");
  }
  ignore_merges_ = spec->ignore_merges;
  for (const char* regex : spec->regexes) {
    UErrorCode status = U_ZERO_ERROR;
    UParseError where{};
    std::unique_ptr<icu::RegexPattern> compiled(
        icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(to_icu_syntax(regex)), 0, where, status));
    if (U_FAILURE(status))
      throw Error(std::string("tokenizer: ICU cannot compile the ") + spec->name + " pre-tokenizer regex at offset " +
                  std::to_string(where.offset) + ": " + u_errorName(status));
    patterns_->regexes.push_back(std::move(compiled));
  }
}

PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  // Byte ranges of the pieces so far; each regex splits each range on its own (a lookahead such as (?!\S)
  // sees the end of the piece, not the text after it), keeping the unmatched gaps as pieces.
  std::vector<std::pair<size_t, size_t>> pieces{{0, text.size()}}, next;
  UErrorCode status = U_ZERO_ERROR;
  UText utext = UTEXT_INITIALIZER;
  for (const auto& regex : patterns_->regexes) {
    std::unique_ptr<icu::RegexMatcher> matcher(regex->matcher(status));
    next.clear();
    for (auto [begin, end] : pieces) {
      // A UTF-8 UText reports match positions as byte offsets into the piece.
      utext_openUTF8(&utext, text.data() + begin, static_cast<int64_t>(end - begin), &status);
      matcher->reset(&utext);
      size_t pos = 0;
      while (U_SUCCESS(status) && matcher->find(status)) {
        const auto s = static_cast<size_t>(matcher->start64(status));
        const auto e = static_cast<size_t>(matcher->end64(status));
        if (s > pos) next.emplace_back(begin + pos, begin + s);
        if (e > s) next.emplace_back(begin + s, begin + e);
        pos = std::max(pos, e);
      }
      if (begin + pos < end) next.emplace_back(begin + pos, end);
    }
    pieces.swap(next);
  }
  utext_close(&utext);
  if (U_FAILURE(status)) throw Error(std::string("tokenizer: ICU regex failed: ") + u_errorName(status));
  for (auto [begin, end] : pieces) out.push_back(text.substr(begin, end - begin));
}

}  // namespace tg::llm::detail
