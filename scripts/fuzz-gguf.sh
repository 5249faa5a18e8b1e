#!/usr/bin/env bash
# Builds the GGUF parser's libFuzzer target with clang-19 (ASan+UBSan) and runs it for a bounded time on a seed
# corpus of small valid files written by the PyPI gguf package. Exit 0 only when no input crashed it.
# usage: scripts/fuzz-gguf.sh [SECONDS] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
out=${2:-build/fuzz-gguf}
mkdir -p "$out/corpus"
clang++-19 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iapps/llm -Icore/include apps/llm/fuzz/fuzz_gguf.cpp apps/llm/gguf.cpp -o "$out/fuzz_gguf"
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
"$out/fuzz_gguf" -max_total_time="$secs" -max_len=4096 -print_final_stats=1 "$out/corpus" 2>&1 | tail -n 12
