#!/usr/bin/env bash
# Builds one of tg-llm's libFuzzer targets with clang-19 (ASan+UBSan) and runs it for a bounded time on a seed
# corpus of valid inputs. Exit 0 only when no input crashed it, hung past -timeout or grew past -rss_limit_mb;
# otherwise the input that did is in OUT_DIR (crash-*, timeout-*, oom-*; replay: OUT_DIR/fuzz_TARGET FILE).
#   gguf    the GGUF reader; seeds: small files written by the PyPI gguf package
#   openai  the server's request parsers (four APIs), the JSON schema compiler and matcher, and its output
#           (reasoning / tool call / stop) parser; seeds: requests
#   jinja   the chat-template engine (parse and render); seeds: tests/llm/data/templates and small handwritten
#           templates, each with a JSON context after a NUL byte; a dictionary of Jinja tokens
# usage: scripts/fuzz.sh {gguf|openai|jinja} [SECONDS] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-}
secs=${2:-30}
out=${3:-build/fuzz-$target}
mkdir -p "$out/corpus"
case "$target" in
  gguf) sources=(apps/llm/fuzz/fuzz_gguf.cpp apps/llm/gguf/gguf.cpp) ;;
  openai) sources=(apps/llm/fuzz/fuzz_openai_request.cpp apps/llm/server/openai_api.cpp apps/llm/server/anthropic_api.cpp
                  apps/llm/server/responses_api.cpp apps/llm/server/output_parser.cpp apps/llm/constrain/json_schema.cpp
                  apps/llm/constrain/json_matcher.cpp apps/llm/constrain/string_pattern.cpp) ;;
  jinja) sources=(apps/llm/fuzz/fuzz_jinja.cpp apps/llm/chat/chat_template.cpp apps/llm/jinja/*.cpp) ;;
  *) echo "fuzz.sh: unknown target $target (gguf, openai, jinja)" >&2; exit 2 ;;
esac
# one object a source, through ccache when there is one (a rerun, or CI with a kept cache, compiles nothing)
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iapps/llm -Icore/include)
cache=$(command -v ccache || true)
objects=()
for src in "${sources[@]}"; do
  obj="$out/obj/${src//\//_}.o"
  mkdir -p "$out/obj"
  ${cache:+"$cache"} clang++-19 "${flags[@]}" -c "$src" -o "$obj"
  objects+=("$obj")
done
clang++-19 "${flags[@]}" "${objects[@]}" -o "$out/fuzz_$target" $([ "$target" = jinja ] && echo -licuuc)
if [ "$target" = gguf ]; then
python3 - "$out/corpus" <<'PY'
import sys, numpy as np
from gguf import GGUFWriter, GGMLQuantizationType
d = sys.argv[1]
for i, (arch, n) in enumerate([("llama", 8), ("gemma3", 32), ("qwen3", 64)]):
    w = GGUFWriter(f"{d}/seed{i}.gguf", arch)
    w.add_block_count(1); w.add_string("s", "x" * i); w.add_array("a", [1, 2, 3][: i + 1]); w.add_float32("f", 0.5)
    w.add_tensor("t", np.arange(n, dtype=np.float32).reshape(-1, 8))
    w.add_tensor("q", np.zeros(34, dtype=np.uint8), raw_shape=(1, 34), raw_dtype=GGMLQuantizationType.Q8_0)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
PY
elif [ "$target" = openai ]; then
python3 - "$out/corpus" <<'PY'
import json, sys
d = sys.argv[1]
seeds = [
    {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "stream_options": {"include_usage": True}},
    {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "x"}]},
                  {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
                   "function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "content": "1"}],
     "tools": [{"type": "function", "function": {"name": "f"}}], "chat_template_kwargs": {"enable_thinking": False},
     "temperature": 0.5, "top_p": 0.9, "seed": 3, "stop": ["a", "b"], "max_tokens": 8},
    {"prompt": "<think>a</think>b<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call>", "max_completion_tokens": 2},
    {"messages": [{"role": "user", "content": "d"}], "n": 2, "response_format": {"type": "json_schema", "json_schema": {"name": "r",
     "schema": {"type": "object", "properties": {"d": {"type": "string", "pattern": "^\\d{4}-(0[1-9]|1[0-2])$"}}, "required": ["d"]}}}},
    {"type": "object", "properties": {"a": {"pattern": "[^a-c]+?x|(?:y\\w){2,3}$"}}, "additionalProperties": True},
]
for i, s in enumerate(seeds):
    open(f"{d}/seed{i}.json", "w").write(json.dumps(s))
PY
else
# A seed is template, NUL, JSON context; the real templates are longer than 4096 bytes, hence max_len.
max_len=16384
extra=(-dict="$out/jinja.dict")
python3 - "$out" tests/llm/data/templates <<'PY'
import glob, json, sys
out, templates = sys.argv[1:]
msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"k": 1}}}]},
        {"role": "tool", "content": "42"}, {"role": "user", "content": [{"type": "text", "text": "Bye"}]}]
ctx = {"messages": msgs, "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
       "documents": None, "add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": False,
       "extra": {"flag": True, "nested": {"list": [1, 2], "name": "n"}}}
seeds = [open(p, "rb").read() + b"\0" + json.dumps(ctx).encode() for p in sorted(glob.glob(templates + "/*.jinja"))]
for src in [
    "{% for m in messages %}{{ loop.index }}{{ m.role | upper }}{% if not loop.last %},{% endif %}{% else %}-{% endfor %}",
    "{% macro f(n, s='x') %}{% if n > 0 %}{{ s }}{{ f(n - 1, s ~ n) }}{% endif %}{% endmacro %}{{ f(3) }}"
    "{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}in{% endcall %}",
    "{% set ns = namespace(n=0, l=[]) %}{% for i in range(5) %}{% set ns.n = ns.n + i %}{% set ns.l = ns.l + [i] %}{% endfor %}"
    "{{ ns.n }}{{ ns.l[1:-1] }}{{ ns.l[::-2] }}{{ 'héllo'[1:4] }}{{ 'abc'[-1] }}",
    "{{ '%s=%d %.2f %r' % ('a', 3, 1.5, 'q') }}{{ '%05d|%-4s|' | format(7, 'x') }}{{ 'a' * 3 }}{{ [1] * 2 }}",
    "{{ messages | map(attribute='role') | select('ne', 'tool') | unique | sort | join(', ') }}{{ tools | tojson(indent=2) }}"
    "{{ ' a b '.split() | reverse | list }}{{ 'x,y'.split(',') | length }}{{ {'b': 1, 'a': 2} | dictsort }}"
    "{% filter upper %}{{ 'f' | replace('f', 'g') | trim | indent(2, true) }}{% endfilter %}{% raw %}{{ raw }}{% endraw %}",
]:
    seeds.append(src.encode() + b"\0" + json.dumps(ctx).encode())
seeds.append(b"{{ messages[0].content }}{{ bos_token }}")  # no NUL: the fixed conversation
for i, s in enumerate(seeds):
    open(f"{out}/corpus/seed{i}.jinja", "wb").write(s)
words = ["{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", "if", "elif", "else", "endif", "for", "in",
         "endfor", "set", "endset", "macro", "endmacro", "call", "endcall", "caller()", "filter", "endfilter", "raw", "endraw",
         "break", "continue", "namespace(", "range(", "dict(", "loop.index", "loop.cycle(", "is", "not", "and", "or", "none",
         "true", "messages", "tools", "|tojson", "|join", "|map(", "|select(", "|selectattr(", "|sort", "|unique", "|replace(",
         "|indent(", "|format(", "|length", "|list", "|items", "|dictsort", "|trim", "|title", "|string", "|int", "|round(",
         "[::-1]", "[1:]", "[:", "**", "//", "~", "%s", "%d", "%05.2f", ".split(", ".strip(", ".join(", ".replace(",
         ".startswith(", ".items()", ".get(", "\\x00", "\\u00e9", "9223372036854775807", "100000", "*1000000", " in ",
         "|sum"]
open(f"{out}/jinja.dict", "w").write("".join(json.dumps(w) + "\n" for w in words))
PY
fi
# -timeout: a template that spends the renderer's whole step budget runs 5-13 s under ASan (under 1.5 s in a
# release build), so only a real hang passes 25 s.
"$out/fuzz_$target" -max_total_time="$secs" -max_len="${max_len:-4096}" -timeout=25 -rss_limit_mb=2048 ${extra[@]+"${extra[@]}"} \
  -artifact_prefix="$out/" -print_final_stats=1 "$out/corpus" 2>&1 | tail -n 12
