// The schema matcher on hand-written texts (where each must stop, and whether it is complete), its refusals of
// unsupported keywords, and random walks through what it allows: every text it calls complete parses as JSON
// (nlohmann), and none breaks a required property or a bound. The token mask is checked against a byte-by-byte
// loop over a vocabulary. Seeds are printed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <regex>

#include "constrain/json_matcher.hpp"
#include "constrain/json_schema.hpp"
#include "constrain/token_mask.hpp"
#include "gguf/gguf.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tg::llm::constrain {
namespace {

using nlohmann::json;

JsonMatcher matcher(const char* schema, std::string before = {}, std::string after = {}) {
  return JsonMatcher(compile_schema(nlohmann::ordered_json::parse(schema)), std::move(before), std::move(after));
}

// The length of the longest prefix of text the matcher takes, and whether all of it is then complete.
std::pair<size_t, bool> run(JsonMatcher m, const std::string& text) {
  size_t n = 0;
  while (n < text.size() && m.feed(text[n])) ++n;
  return {n, n == text.size() && m.accepting()};
}

// A random walk from m: at each step one of the alphabet's bytes it takes, until none is taken, `steps` are
// taken, or (where m is complete) `stop` says so. The text walked; m is left after it.
template <typename Rng, typename Stop>
std::string random_walk(JsonMatcher& m, const std::string& alphabet, int steps, Rng& rng, Stop stop) {
  std::string text;
  for (int i = 0; i < steps && !(m.accepting() && stop()); ++i) {
    std::vector<char> ok;
    for (char c : alphabet) {
      JsonMatcher t = m;
      if (t.feed(c)) ok.push_back(c);
    }
    if (ok.empty()) break;
    const char c = ok[rng() % ok.size()];
    m.feed(c);
    text += c;
  }
  return text;
}

const char* kPerson = R"({"type": "object", "properties": {"name": {"type": "string", "minLength": 1},
  "age": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}},
  "required": ["name", "age"], "additionalProperties": false})";

TEST(JsonMatcher, ObjectsWithRequiredAndClosedProperties) {
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "Al", "age": 3})"), std::make_pair(size_t{24}, true));
  EXPECT_EQ(run(matcher(kPerson), "{\n  \"name\": \"x\",\n  \"age\": -12,\n  \"tags\": [\"b\"]\n}").second, true);
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "x"})").first, 12u);              // '}' before age
  EXPECT_EQ(run(matcher(kPerson), R"({"age": 3, "name": "x"})").first, 2u);     // the schema's order
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "a", "x": 1})").first, 15u);      // no other key
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "a", "age": 3.5})").first, 22u);  // an integer
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "", "age": 1})").first, 10u);     // minLength 1
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "a", "age": 1, "tags": ["a", "b", "a"]})").first, 41u);  // maxItems
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "a", "name": "b"})").first, 15u);                        // a key once
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "a", "age": 1,})").first, 23u);  // nothing left to add
}

TEST(JsonMatcher, ScalarsEnumsAndAlternatives) {
  EXPECT_TRUE(run(matcher(R"({"enum": ["red", "green"]})"), R"("red")").second);
  EXPECT_EQ(run(matcher(R"({"enum": ["red", "green"]})"), R"("blue")").first, 1u);
  // enum [1, 12]: "1" is complete and may go on
  EXPECT_TRUE(run(matcher(R"({"enum": [1, 12]})"), "1").second);
  EXPECT_TRUE(run(matcher(R"({"enum": [1, 12]})"), "12").second);
  EXPECT_EQ(run(matcher(R"({"enum": [1, 12]})"), "123").first, 2u);
  EXPECT_TRUE(run(matcher(R"({"const": {"a": [1, null]}})"), R"({"a":[1,null]})").second);
  const char* either = R"({"anyOf": [{"type": "string"}, {"type": "integer"}]})";
  EXPECT_TRUE(run(matcher(either), R"("x")").second);
  EXPECT_TRUE(run(matcher(either), "-7").second);
  EXPECT_EQ(run(matcher(either), "true").first, 0u);
  EXPECT_TRUE(run(matcher(R"({"type": ["boolean", "null"]})"), "null").second);
  EXPECT_TRUE(run(matcher(R"({"type": "number"})"), "-0.5e+10").second);
  EXPECT_EQ(run(matcher(R"({"type": "number"})"), "01").first, 1u);  // no leading zeros
  EXPECT_TRUE(run(matcher(R"({"type": "string", "maxLength": 3})"), R"("h\u00e9é")").second);
  EXPECT_EQ(run(matcher(R"({"type": "string", "maxLength": 3})"), R"("abcd")").first, 4u);
  EXPECT_EQ(run(matcher(R"({"type": "string"})"), "\"a\nb\"").first, 2u);  // a raw newline in a string
  // well-formed UTF-8 only: a stray continuation byte, a character cut short by the quote, an overlong lead byte
  EXPECT_EQ(run(matcher(R"({"type": "string"})"), "\"a\x80\"").first, 2u);
  EXPECT_EQ(run(matcher(R"({"type": "string"})"), "\"\xE2\x82\"").first, 3u);
  EXPECT_EQ(run(matcher(R"({"type": "string"})"), "\"\xC0\xAF\"").first, 1u);
  EXPECT_TRUE(run(matcher(R"({"type": "string", "maxLength": 2})"), "\"\xE2\x82\xAC\xF0\x9F\x98\x80\"")
                  .second);  // two characters
}

TEST(JsonMatcher, AnyValueRefsAndSurroundingTexts) {
  JsonMatcher any(any_value());
  EXPECT_TRUE(run(any, R"({"a": [1, {"b": "c"}, true, null], "d": -1.5})").second);
  EXPECT_EQ(run(JsonMatcher(any_object()), "[1]").first, 0u);
  const char* tree =
      R"({"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                        "additionalProperties": false}}, "$ref": "#/$defs/node"})";
  EXPECT_TRUE(run(matcher(tree), R"({"kids": [{"kids": []}, {}]})").second);
  // an anyOf that reaches itself without a byte, and a doubling chain of shared $refs: bounded, no crash
  EXPECT_EQ(run(matcher(R"({"anyOf": [{"$ref": "#"}]})"), "{}").first, 0u);
  std::string defs = R"({"$defs": {"d0": {"type": "object"})";
  for (int i = 1; i <= 30; ++i)
    defs += ", \"d" + std::to_string(i) + "\": {\"anyOf\": [{\"$ref\": \"#/$defs/d" + std::to_string(i - 1) +
            "\"}, {\"$ref\": \"#/$defs/d" + std::to_string(i - 1) + "\"}]}";
  defs += R"(}, "$ref": "#/$defs/d30"})";
  EXPECT_TRUE(run(JsonMatcher(compile_schema(nlohmann::ordered_json::parse(defs))), "{}").second);
  JsonMatcher call = matcher(R"({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})",
                             "<tool_call>\n", "\n</tool_call>");
  EXPECT_TRUE(run(call, "<tool_call>\n{\"x\": 1}\n</tool_call>").second);
  EXPECT_FALSE(run(call, "<tool_call>\n{\"x\": 1}").second);  // the closing text is still owed
  EXPECT_EQ(run(call, "{\"x\": 1}").first, 0u);
  // whitespace is bounded; nothing, not even whitespace, follows a complete value
  EXPECT_EQ(run(any, std::string(200, ' ')).first, static_cast<size_t>(JsonMatcher::kMaxWhitespace));
  EXPECT_EQ(run(any, "1 ").first, 1u);
}

// additionalProperties true: other keys, but none that spells a declared name (its value would go unchecked)
TEST(JsonMatcher, OpenObjectsKeepDeclaredNamesToTheirSchemas) {
  const char* open =
      R"({"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}}, "additionalProperties": true})";
  EXPECT_TRUE(run(matcher(open), R"({"city": "Oslo", "cityx": [1], "c": null})").second);
  EXPECT_EQ(run(matcher(open), R"({"city": 1})").first, 9u);  // "city" is the declared one: a string
  EXPECT_EQ(run(matcher(open), R"({"n": "x"})").first, 6u);
  EXPECT_EQ(run(matcher(open), R"({"c\u0069ty": 1})").first, 3u);             // no other spelling of a declared name
  EXPECT_EQ(run(matcher(open), R"({"city": "a", "city": "b"})").first, 19u);  // nor a second time
  EXPECT_TRUE(run(matcher(open), R"({"other": 1, "n": 2})").second);
}

TEST(JsonMatcher, StringsAreWellFormedUtf8WithoutSurrogates) {
  const JsonMatcher str = matcher(R"({"type": "string"})");
  EXPECT_EQ(run(str, "\"\xE0\x80\x80\"").first, 2u);      // overlong
  EXPECT_EQ(run(str, "\"\xED\xA0\x80\"").first, 2u);      // a surrogate's UTF-8
  EXPECT_EQ(run(str, "\"\xF4\x90\x80\x80\"").first, 2u);  // past U+10FFFF
  EXPECT_EQ(run(str, R"("\uD800")").first, 7u);           // a high surrogate alone: the low half is owed
  EXPECT_EQ(run(str, R"("\uDC00")").first, 4u);           // a low surrogate first
  EXPECT_EQ(run(str, R"("\uD83D\u0041")").first, 9u);     // a high surrogate, then no low one
  // a pair of escapes is one character (U+1F600), for the pattern and for the length
  EXPECT_TRUE(run(str, R"("\uD83D\uDE00")").second);
  EXPECT_TRUE(run(matcher(R"({"type": "string", "maxLength": 1})"), R"("\ud83d\ude00")").second);
  const JsonMatcher smile = JsonMatcher(compile_schema({{"type", "string"}, {"pattern", "^\xF0\x9F\x98\x80$"}}));
  EXPECT_TRUE(run(smile, R"("\uD83D\uDE00")").second);
  EXPECT_TRUE(run(smile, "\"\xF0\x9F\x98\x80\"").second);
  EXPECT_EQ(run(smile, R"("\uD83D\uDE01")").first, 12u);
  EXPECT_EQ(run(smile, R"("\u00e9")").first, 3u);  // no character under U+10000 starts \u00
  EXPECT_TRUE(run(str, "\"\xED\x9F\xBF\xF0\x90\x80\x80\\u00e9\"").second);
}

// Patterns against hand-picked texts; RandomWalksMatchStdRegex checks them against std::regex.
TEST(JsonMatcher, StringPatterns) {
  const auto pat = [](const char* p) { return JsonMatcher(compile_schema({{"type", "string"}, {"pattern", p}})); };
  EXPECT_TRUE(run(pat("^[a-z]+-\\d{2,3}$"), R"("abc-12")").second);
  EXPECT_EQ(run(pat("^[a-z]+-\\d{2,3}$"), R"("abc-1234")").first, 8u);
  EXPECT_EQ(run(pat("^[a-z]+-\\d{2,3}$"), R"("Abc")").first, 1u);
  EXPECT_EQ(run(pat("^[a-z]*$"), "\"\xC3\xA9\"").first, 1u);  // a lead byte no allowed character starts with
  EXPECT_TRUE(run(pat("ab"), R"("xxabyy")").second);          // unanchored: anywhere
  EXPECT_EQ(run(pat("ab"), R"("xa")").first, 3u);             // the quote must wait for "ab"
  EXPECT_TRUE(run(pat("^(cat|dog)s?$"), R"("dogs")").second);
  EXPECT_EQ(run(pat("^(cat|dog)s?$"), R"("cow")").first, 2u);
  EXPECT_TRUE(run(pat("^é+$"), "\"\\u00e9\xC3\xA9\"").second);  // an escape is its character
  EXPECT_TRUE(run(pat("^\\d{4}-\\d{2}-\\d{2}$"), R"("2026-12-05")").second);
  EXPECT_TRUE(run(pat("^[^\\s@]+@[^\\s@]+\\.[a-z]{2,}?$"), R"("a.b@c.org")").second);
  // with a length bound too
  EXPECT_EQ(
      run(JsonMatcher(compile_schema({{"type", "string"}, {"pattern", "^a+$"}, {"maxLength", 2}})), R"("aaa")").first,
      3u);
  for (const char* bad : {"(a", "a)", "a**", "\\1", "(?=a)", "\\bx", "\\p{L}", "[z-a]", "a^b", "^a|b$", "[]"}) {
    try {
      pat(bad);
      ADD_FAILURE() << "accepted the pattern " << bad;
    } catch (const SchemaError& e) {
      EXPECT_NE(std::string(e.what()).find("pattern"), std::string::npos) << e.what();
    }
  }
}

// Random strings over a small alphabet: the matcher takes the string's JSON exactly when std::regex (ECMAScript,
// an independent engine) finds the pattern in it; and random walks through what the matcher allows end only in
// strings std::regex matches. Seeds are printed.
TEST(JsonMatcher, RandomWalksMatchStdRegex) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  const std::string alphabet = "ab-1 _.xZ";
  for (const char* p : {"^a+b?$", "a.b", "^(ab|ba)*-?\\d{1,3}$", "^[^ab]{2}[a-z0-9_]*$", "x|Z1", "^\\w+( \\w+)*$",
                        "(?:a|b)+?1$", "^.{0,4}$"}) {
    const std::regex re(p, std::regex::ECMAScript);
    const JsonMatcher m0(compile_schema({{"type", "string"}, {"pattern", p}}));
    for (int i = 0; i < 400; ++i) {
      std::string str;
      for (size_t n = rng() % 8; n > 0; --n) str += alphabet[rng() % alphabet.size()];
      EXPECT_EQ(run(m0, json(str).dump()).second, std::regex_search(str, re))
          << p << " on '" << str << "' seed " << seed;
    }
    for (int walk = 0; walk < 100; ++walk) {
      JsonMatcher m = m0;
      const std::string text = random_walk(m, alphabet + "\"", 30, rng, [&] { return rng() % 3 == 0; });
      if (!m.accepting()) continue;
      EXPECT_TRUE(std::regex_search(json::parse(text).get<std::string>(), re))
          << p << " walked to " << text << " seed " << seed;
    }
  }
}

// A tool's parameters keep their own "#" inside the call wrapper; a required call reaches the 128th tool.
TEST(JsonMatcher, ComposedToolCalls) {
  const Node tree = compile_schema(nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"kid": {"$ref": "#"}}, "additionalProperties": false})"));
  const Node call = closed_object({{"name", constant("t")}, {"arguments", tree}});
  EXPECT_TRUE(run(JsonMatcher(call), R"({"name": "t", "arguments": {"kid": {"kid": {}}}})").second);
  EXPECT_EQ(run(JsonMatcher(call), R"({"name": "t", "arguments": {"name": "t"}})").first, 29u);
  std::vector<Node> tools;
  for (int i = 0; i < 128; ++i)
    tools.push_back(
        closed_object({{"name", constant("tool" + std::to_string(i))},
                       {"arguments", compile_schema({{"type", "object"},
                                                     {"properties", {{"x" + std::to_string(i), {{"type", "integer"}}}}},
                                                     {"additionalProperties", false}})}}));
  EXPECT_TRUE(run(JsonMatcher(one_of(tools)), R"({"name": "tool127", "arguments": {"x127": 5}})").second);
  EXPECT_EQ(run(JsonMatcher(one_of(tools)), R"({"name": "tool127", "arguments": {"x12": 5}})").first, 38u);
}

TEST(JsonMatcher, UnsupportedKeywordsAreNamed) {
  for (const char* s :
       {R"j({"type": "string", "pattern": "(?!a)"})j", R"({"type": "number", "minimum": 0})", R"({"allOf": [{}]})",
        R"({"type": "object", "additionalProperties": {"type": "string"}})", R"({"$ref": "http://x/y"})",
        R"({"type": "date"})", R"({"required": ["a"], "properties": {}})", R"({"enum": []})"}) {
    try {
      compile_schema(nlohmann::ordered_json::parse(s));
      ADD_FAILURE() << "accepted " << s;
    } catch (const SchemaError& e) {
      EXPECT_FALSE(std::string(e.what()).empty());
    }
  }
  try {
    compile_schema(nlohmann::ordered_json::parse(R"({"type": "number", "minimum": 0})"));
    ADD_FAILURE() << "accepted minimum";
  } catch (const SchemaError& e) {
    EXPECT_NE(std::string(e.what()).find("minimum"), std::string::npos);
  }
}

// Random walks: at each step one of the bytes the matcher takes, ending where it is complete; each complete text
// parses and keeps the schema's required keys and bounds.
TEST(JsonMatcher, RandomWalksGiveValidJson) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  const std::string alphabet = "{}[],:\" \n-0123456789.eEtruefalsnlmg\\abcxyz";  // spells the keys too
  int complete = 0;
  for (int walk = 0; walk < 300; ++walk) {
    JsonMatcher m = matcher(kPerson);
    const std::string text = random_walk(m, alphabet, 400, rng, [&] { return rng() % 4 == 0; });
    if (!m.accepting()) continue;
    ++complete;
    json v = json::parse(text, nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << text << " seed " << seed;
    ASSERT_TRUE(v.is_object() && v.contains("name") && v.contains("age")) << text << " seed " << seed;
    EXPECT_TRUE(v["name"].is_string() && !v["name"].get<std::string>().empty()) << text;
    // an integer (past int64, nlohmann reads it as a double: still integral)
    EXPECT_TRUE(v["age"].is_number_integer() ||
                (v["age"].is_number_float() && std::floor(v["age"].get<double>()) == v["age"].get<double>()))
        << text;
    for (const auto& [k, x] : v.items()) EXPECT_TRUE(k == "name" || k == "age" || k == "tags") << text;
    EXPECT_LE(v.value("tags", json::array()).size(), 2u) << text;
  }
  EXPECT_GT(complete, 30) << "seed " << seed;  // the walks reach complete texts
}

std::string smollm_path() {
  const std::string cmd = std::string(TG_PYTHON) + " " + TG_LLM_TEST_DIR + "/model_paths.py smollm 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  char buf[4096];
  std::string out;
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// The trie walk (with its plain-string shortcut) against feeding each token's bytes to a copy of the matcher, on
// SmolLM2's 49152 tokens, from states inside keys, strings, numbers, arrays and after a complete value.
TEST(TokenMask, TrieWalkEqualsFeedingEveryToken) {
  const std::string path = smollm_path();
  if (path.empty() || !std::filesystem::exists(path)) GTEST_SKIP() << "SmolLM2 is not installed (scripts/setup.sh)";
  const Tokenizer tok = Tokenizer::from_gguf(GGUFFile::open(path));
  const TokenTrie trie(tok);
  // kPerson's states, and an open object's key (other keys, none spelling a declared name) and pattern strings
  const char* open =
      R"({"type": "object", "properties": {"city": {"type": "string", "pattern": "^[A-Z][a-z]+( [A-Z][a-z]+)?$"},
    "code": {"type": "string", "pattern": "\\d{3}-é"}}, "additionalProperties": true})";
  const std::vector<std::pair<const char*, const char*>> states = {{kPerson, ""},
                                                                   {kPerson, "{"},
                                                                   {kPerson, R"({"na)"},
                                                                   {kPerson, R"({"name": "Al)"},
                                                                   {kPerson, R"({"name": "A", "age": -1)"},
                                                                   {kPerson, R"({"name": "A", "age": 1, "tags": [)"},
                                                                   {kPerson, R"({"name": "A", "age": 1, "tags": ["a")"},
                                                                   {kPerson, R"({"name": "A\)"},
                                                                   {kPerson, R"({"name": "A", "age": 2})"},
                                                                   {kPerson, "{\"name\": \"\xC3"},
                                                                   {kPerson, "{\"name\": \"\xE2\x82"},
                                                                   {kPerson, "{\"name\": \"\xE0"},
                                                                   {open, R"({")"},
                                                                   {open, R"({"ci)"},
                                                                   {open, R"({"cityz)"},
                                                                   {open, R"({"city": ")"},
                                                                   {open, R"({"city": "Os)"},
                                                                   {open, R"({"city": "New Y)"},
                                                                   {open, R"({"code": "12)"},
                                                                   {open, R"({"code": "x123-)"}};
  for (const auto& [schema, prefix] : states) {
    JsonMatcher m = matcher(schema);
    ASSERT_TRUE(m.feed(std::string_view(prefix))) << prefix;
    std::vector<uint8_t> got;
    trie.allowed(m, got);
    ASSERT_EQ(got.size(), tok.n_tokens());
    size_t allowed = 0;
    for (size_t id = 0; id < got.size(); ++id) {
      const auto t = static_cast<TokenId>(id);
      bool want;
      if (tok.is_end_of_generation(t)) {
        want = m.accepting();
      } else {
        const std::string bytes = tok.token_bytes(t);
        JsonMatcher copy = m;
        want = !bytes.empty() && copy.feed(std::string_view(bytes));
      }
      ASSERT_EQ(got[id] != 0, want) << "after " << prefix << ": token " << id << " '" << tok.token_bytes(t) << "'";
      allowed += want;
    }
    EXPECT_GT(allowed, 0u) << prefix;
  }
}

}  // namespace
}  // namespace tg::llm::constrain
