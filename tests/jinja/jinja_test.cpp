// The template engine alone (apps/llm/jinja, the tg_jinja library): this executable links it without tg's core or
// tg::llm, and renders templates that use the language's parts (loops and loop controls, macros, namespaces,
// filters, tests, string and dict methods, slicing, arithmetic, %-formatting, whitespace control, UTF-8 text)
// against Python's jinja2 in the environment transformers gives chat templates (jinja_reference.py). A template
// that jinja2 rejects must be rejected here too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "jinja/jinja_interpreter.hpp"
#include "jinja/jinja_lexer.hpp"
#include "jinja/jinja_parser.hpp"
#include "tg/error.hpp"

namespace jinja = tg::llm::jinja;
using nlohmann::ordered_json;

namespace {

struct Case {
  const char* name;
  const char* source;
  const char* context;  // JSON
};

const Case kCases[] = {
    {"loop",
     "{% for m in messages %}{{ loop.index }}:{{ m.role|upper }}={{ m.content|trim }}{% if not loop.last %}, {% endif "
     "%}{% endfor %}",
     R"({"messages": [{"role": "user", "content": " hi "}, {"role": "assistant", "content": "yo\n"}]})"},
    {"lists",
     "{{ xs|join('-') }} {{ xs|length }} {{ xs[1:] }} {{ xs|first }} {{ xs|last }} {{ xs[::-1] }} {{ xs[-1] }}",
     R"({"xs": [1, 2, 3]})"},
    {"namespace",
     "{% set ns = namespace(n=0) %}{% for x in xs %}{% if x is even %}{% set ns.n = ns.n + x %}{% endif %}{% endfor "
     "%}{{ ns.n }}",
     R"({"xs": [1, 2, 3, 4, 6]})"},
    {"macro",
     "{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', "
     "punct='?') }}",
     "{}"},
    {"dicts",
     "{{ d|tojson }} {{ d.items()|list|length }}{% for k, v in d|dictsort %} {{ k }}={{ v }}{% endfor %} {{ "
     "d.get('zz', 'dflt') }} {{ d.keys()|list }}",
     R"({"d": {"b": 2, "a": [1, "x"], "c": null}})"},
    {"strings",
     "{{ 'a,b,,c'.split(',') }} [{{ '  x  '.strip() }}] {{ 'Hello'.startswith('He') }} {{ 'abc'.replace('b', 'B') }} "
     "{{ 'x' * 3 }} {{ 'ab' ~ 1 }}",
     "{}"},
    {"tests",
     "{{ none is none }} {{ undefined_var is defined }} {{ 'x' is string }} {{ 3 is number }} {{ [1] is iterable }} {{ "
     "{} is mapping }}",
     "{}"},
    {"whitespace", "a  {%- if true -%}  b  {%- endif -%}  c\n{% if true %}\n  d\n{% endif %}\ne {# gone #}f", "{}"},
    {"format", "{{ '%s has %d items (%.2f)'|format('cart', 3, 2.5) }} {{ '%-5s|' % 'ab' }} {{ '%05.1f' % 3.14159 }}",
     "{}"},
    {"filters",
     "{{ range(5)|select('odd')|list }} {{ [3, 1, 2]|sort|reverse|list }} {{ [1, 2, 3]|map('string')|join }} {{ "
     "xs|selectattr('a')|map(attribute='b')|list }} {{ xs|rejectattr('a')|list|length }}",
     R"({"xs": [{"a": 1, "b": "x"}, {"a": 0, "b": "y"}]})"},
    {"arithmetic",
     "{{ 7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ -3|abs }} {{ 3.7|int }} {{ '12'|int + 1 }} {{ 1.0 }} {{ 10 "
     "/ 4 }} {{ 1e3 }}",
     "{}"},
    {"loop_controls",
     "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% "
     "endfor %}",
     "{}"},
    {"utf8", "{{ s|upper }} {{ s|length }} {{ s[1] }} {{ s[::-1] }} {{ s|title }}", R"({"s": "héllo wörld ☃ 𝄞"})"},
    {"logic",
     "{% if a and not b or c %}yes{% else %}no{% endif %} {{ a if b else 'z' }} {{ [] or 'empty' }} {{ 0 == 0.0 }}",
     R"({"a": 1, "b": 0, "c": 0})"},
    {"attributes",
     "{{ messages[0]['content'] }} {{ messages|map(attribute='role')|unique|list }} {{ messages|length > 1 }}",
     R"({"messages": [{"role": "user", "content": "q"}, {"role": "user", "content": "r"}, {"role": "tool", "content": "s"}]})"},
    {"case",
     "{{ 'Title case words'|title }} {{ 'abc'|capitalize }} {{ 'A B'|lower }} {{ 'x'|default('d') }} {{ "
     "missing|default('d') }}",
     "{}"},
    {"raise", "{{ raise_exception('bad input') }}", "{}"},
    {"unclosed", "{% for x in xs %}{{ x }}", R"({"xs": [1]})"},
};

// Renders as chat/chat_template.cpp does; an error comes back as "error: ..." (both engines' messages differ).
ordered_json render(const Case& c) {
  try {
    jinja::Body body = jinja::parse(jinja::tokenize(c.source, jinja::LexerOptions{}));
    jinja::check_names(body);
    return {{"out", jinja::render_program(body, jinja::Value::from_json(ordered_json::parse(c.context)),
                                          jinja::RenderLimits{})}};
  } catch (const tg::Error& e) {
    return {{"error", e.what()}};
  }
}

TEST(Jinja, RendersAsJinja2Does) {
  const std::string dir = ::testing::TempDir(), in = dir + "jinja_cases_" + std::to_string(::getpid()) + ".json",
                    out = dir + "jinja_expected_" + std::to_string(::getpid()) + ".json";
  ordered_json cases = ordered_json::array();
  for (const Case& c : kCases) cases.push_back({{"template", c.source}, {"context", ordered_json::parse(c.context)}});
  std::ofstream(in) << cases.dump();
  const std::string cmd = std::string(TG_PYTHON) + " " + TG_JINJA_REFERENCE + " " + in + " " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << " (python3 -m pip install jinja2, or scripts/setup.sh)";
  ordered_json want;
  std::ifstream(out) >> want;
  ASSERT_EQ(want.size(), std::size(kCases));
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const ordered_json got = render(kCases[i]);
    if (want[i].contains("error"))
      EXPECT_TRUE(got.contains("error")) << kCases[i].name << ": jinja2 fails (" << want[i]["error"]
                                         << "), here it renders " << got;
    else
      EXPECT_EQ(got, want[i]) << kCases[i].name << ": " << kCases[i].source;
  }
  std::remove(in.c_str());
  std::remove(out.c_str());
}

}  // namespace
