#!/usr/bin/env python3
"""Writes a copy of a GGUF model with every quantized weight dequantized (PyPI gguf's gguf.quants) and stored as
F16, Q8_0 or F32: the same model, larger and slower, with the same vocabulary and metadata. With only one size of a
model family installed, this gives speculative decoding a same-vocabulary pair to measure on (the original as the
draft model, the larger copy as the model): bench/llm/compare_lookup.py --draft-model.

usage: requantize.py IN.gguf OUT.gguf [--type F16|Q8_0|F32]
"""
import argparse

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--type", default="F16", choices=["F16", "Q8_0", "F32"])
    a = ap.parse_args()
    r = gguf.GGUFReader(a.src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(a.out, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture" or name == "general.file_type":
            continue
        vtype = f.types[0]
        sub = f.types[1] if vtype == gguf.GGUFValueType.ARRAY and len(f.types) > 1 else None
        w.add_key_value(name, f.contents(), vtype, sub_type=sub)
    target = Q[a.type]
    for t in r.tensors:
        shape = [int(x) for x in reversed(t.shape)]  # numpy order: the last dimension is ggml's first
        if t.tensor_type in (Q.F32, Q.F16) or len(shape) == 1:
            data = gguf.quants.dequantize(t.data, t.tensor_type).reshape(shape).astype(np.float32)
            if t.tensor_type == Q.F16 and len(shape) > 1:
                w.add_tensor(t.name, data.astype(np.float16))
            else:
                w.add_tensor(t.name, data)
            continue
        data = gguf.quants.dequantize(t.data, t.tensor_type).reshape(shape).astype(np.float32)
        if target == Q.F32:
            w.add_tensor(t.name, data)
        elif target == Q.F16:
            w.add_tensor(t.name, data.astype(np.float16))
        else:
            w.add_tensor(t.name, gguf.quants.quantize(data, target), raw_dtype=target)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
