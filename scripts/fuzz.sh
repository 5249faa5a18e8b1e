#!/usr/bin/env bash
# Builds one of tg-llm's libFuzzer targets with clang-19 (ASan+UBSan) and runs it for a bounded time on a seed
# corpus of valid inputs. Exit 0 only when no input crashed it.
#   gguf    the GGUF reader; seeds: small files written by the PyPI gguf package
#   openai  the server's request parser and its output (reasoning / tool call / stop) parser; seeds: requests
# usage: scripts/fuzz.sh {gguf|openai} [SECONDS] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-}
secs=${2:-30}
out=${3:-build/fuzz-$target}
mkdir -p "$out/corpus"
case "$target" in
  gguf) sources=(apps/llm/fuzz/fuzz_gguf.cpp apps/llm/gguf.cpp) ;;
  openai) sources=(apps/llm/fuzz/fuzz_openai_request.cpp apps/llm/server/openai_api.cpp apps/llm/server/output_parser.cpp) ;;
  *) echo "fuzz.sh: unknown target $target (gguf, openai)" >&2; exit 2 ;;
esac
clang++-19 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iapps/llm -Icore/include "${sources[@]}" -o "$out/fuzz_$target"
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
else
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
]
for i, s in enumerate(seeds):
    open(f"{d}/seed{i}.json", "w").write(json.dumps(s))
PY
fi
"$out/fuzz_$target" -max_total_time="$secs" -max_len=4096 -print_final_stats=1 "$out/corpus" 2>&1 | tail -n 12
