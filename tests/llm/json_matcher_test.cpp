// The schema matcher on hand-written texts (where each must stop, and whether it is complete), its refusals of
// unsupported keywords, and random walks through what it allows: every text it calls complete parses as JSON
// (nlohmann), and none breaks a required property or a bound. The token mask is checked against a byte-by-byte
// loop over a vocabulary. Seeds are printed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "constrain/json_matcher.hpp"
#include "constrain/json_schema.hpp"
#include "constrain/token_mask.hpp"
#include "gguf.hpp"
#include "tokenizer.hpp"

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

const char* kPerson = R"({"type": "object", "properties": {"name": {"type": "string", "minLength": 1},
  "age": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}},
  "required": ["name", "age"], "additionalProperties": false})";

TEST(JsonMatcher, ObjectsWithRequiredAndClosedProperties) {
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "Al", "age": 3})"), std::make_pair(size_t{24}, true));
  EXPECT_EQ(run(matcher(kPerson), "{\n  \"name\": \"x\",\n  \"age\": -12,\n  \"tags\": [\"b\"]\n}").second, true);
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "x"})").first, 12u);        // '}' before age
  EXPECT_EQ(run(matcher(kPerson), R"({"age": 3, "name": "x"})").first, 2u);  // the schema's order
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "a", "x": 1})").first, 15u);  // no other key
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "a", "age": 3.5})").first, 22u);  // an integer
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "", "age": 1})").first, 10u);     // minLength 1
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "a", "age": 1, "tags": ["a", "b", "a"]})").first, 41u);  // maxItems
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "a", "name": "b"})").first, 15u);  // a key once
  EXPECT_EQ(run(matcher(kPerson), R"({"name": "a", "age": 1,})").first, 23u);    // nothing left to add
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
  EXPECT_TRUE(run(matcher(R"({"type": "string", "maxLength": 2})"), "\"\xE2\x82\xAC\xF0\x9F\x98\x80\"").second);  // two characters
}

TEST(JsonMatcher, AnyValueRefsAndSurroundingTexts) {
  JsonMatcher any(any_value());
  EXPECT_TRUE(run(any, R"({"a": [1, {"b": "c"}, true, null], "d": -1.5})").second);
  EXPECT_EQ(run(JsonMatcher(any_object()), "[1]").first, 0u);
  const char* tree = R"({"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                        "additionalProperties": false}}, "$ref": "#/$defs/node"})";
  EXPECT_TRUE(run(matcher(tree), R"({"kids": [{"kids": []}, {}]})").second);
  // an anyOf that reaches itself without a byte, and a doubling chain of shared $refs: bounded, no crash
  EXPECT_EQ(run(matcher(R"({"anyOf": [{"$ref": "#"}]})"), "{}").first, 0u);
  std::string defs = R"({"$defs": {"d0": {"type": "object"})";
  for (int i = 1; i <= 30; ++i)
    defs += ", \"d" + std::to_string(i) + "\": {\"anyOf\": [{\"$ref\": \"#/$defs/d" + std::to_string(i - 1) + "\"}, {\"$ref\": \"#/$defs/d" + std::to_string(i - 1) + "\"}]}";
  defs += R"(}, "$ref": "#/$defs/d30"})";
  EXPECT_TRUE(run(JsonMatcher(compile_schema(nlohmann::ordered_json::parse(defs))), "{}").second);
  JsonMatcher call = matcher(R"({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})", "<tool_call>\n", "\n</tool_call>");
  EXPECT_TRUE(run(call, "<tool_call>\n{\"x\": 1}\n</tool_call>").second);
  EXPECT_FALSE(run(call, "<tool_call>\n{\"x\": 1}").second);  // the closing text is still owed
  EXPECT_EQ(run(call, "{\"x\": 1}").first, 0u);
  // whitespace is bounded; nothing, not even whitespace, follows a complete value
  EXPECT_EQ(run(any, std::string(200, ' ')).first, static_cast<size_t>(JsonMatcher::kMaxWhitespace));
  EXPECT_EQ(run(any, "1 ").first, 1u);
}

TEST(JsonMatcher, UnsupportedKeywordsAreNamed) {
  for (const char* s : {R"({"type": "string", "pattern": "^a"})", R"({"type": "number", "minimum": 0})", R"({"allOf": [{}]})",
                        R"({"type": "object", "additionalProperties": {"type": "string"}})", R"({"$ref": "http://x/y"})", R"({"type": "date"})",
                        R"({"required": ["a"], "properties": {}})", R"({"enum": []})"}) {
    try {
      compile_schema(nlohmann::ordered_json::parse(s));
      ADD_FAILURE() << "accepted " << s;
    } catch (const SchemaError& e) {
      EXPECT_FALSE(std::string(e.what()).empty());
    }
  }
  try {
    compile_schema(nlohmann::ordered_json::parse(R"({"type": "string", "pattern": "^a"})"));
  } catch (const SchemaError& e) {
    EXPECT_NE(std::string(e.what()).find("pattern"), std::string::npos);
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
    std::string text;
    for (int i = 0; i < 400; ++i) {
      if (m.accepting() && rng() % 4 == 0) break;
      std::vector<char> ok;
      for (char c : alphabet) {
        JsonMatcher t = m;
        if (t.feed(c)) ok.push_back(c);
      }
      if (ok.empty()) break;
      const char c = ok[rng() % ok.size()];
      ASSERT_TRUE(m.feed(c));
      text += c;
    }
    if (!m.accepting()) continue;
    ++complete;
    json v = json::parse(text, nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << text << " seed " << seed;
    ASSERT_TRUE(v.is_object() && v.contains("name") && v.contains("age")) << text << " seed " << seed;
    EXPECT_TRUE(v["name"].is_string() && !v["name"].get<std::string>().empty()) << text;
    // an integer (past int64, nlohmann reads it as a double: still integral)
    EXPECT_TRUE(v["age"].is_number_integer() || (v["age"].is_number_float() && std::floor(v["age"].get<double>()) == v["age"].get<double>())) << text;
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
  for (const char* prefix : {"", "{", R"({"na)", R"({"name": "Al)", R"({"name": "A", "age": -1)", R"({"name": "A", "age": 1, "tags": [)",
                             R"({"name": "A", "age": 1, "tags": ["a")", R"({"name": "A\)", R"({"name": "A", "age": 2})",
                             "{\"name\": \"\xC3", "{\"name\": \"\xE2\x82"}) {
    JsonMatcher m = matcher(kPerson);
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
