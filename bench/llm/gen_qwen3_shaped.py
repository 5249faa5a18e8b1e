#!/usr/bin/env python3
"""Writes a GGUF with Qwen3-0.6B's shapes and random weights, for benchmarks (issue: LLM inference, performance):
28 layers, d_model 1024, 16 query heads and 8 KV heads of 128, FFN 3072, QK-norm, tied embeddings, vocabulary
151936 (a SentencePiece-style list of placeholder pieces: the benchmarks feed token ids, not text).

Weights are random blocks written directly in the quantized layout (no float matrix is ever built, so a 600 MB
file takes seconds): Q8_0 = f16 scale + 32 int8; Q4_0 = f16 scale + 16 bytes of 4-bit values (offset 8); IQ4_NL the
same bytes, each nibble indexing the IQ4 codebook. Scales
give each matrix entries of about 1/sqrt(fan-in), so activations stay O(1).

usage: gen_qwen3_shaped.py OUT.gguf --wtype {Q8_0,Q4_0,IQ4_NL} [--seed N]
"""
import argparse

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

D, FF, LAYERS, HEADS, KV, HD, VOCAB = 1024, 3072, 28, 16, 8, 128, 151936


def blocks(rng, rows, cols, wtype):
    """(rows, cols) matrix as raw quantized bytes (rows, cols // 32 * block_bytes)."""
    nb = rows * cols // 32
    scale = np.full((nb, 1), 1.7 / np.sqrt(cols) / (7 if wtype == "Q4_0" else 127), dtype=np.float16).view(np.uint8)
    if wtype == "Q8_0":
        q = rng.integers(-127, 128, size=(nb, 32), dtype=np.int8).view(np.uint8)
    else:
        q = rng.integers(0, 256, size=(nb, 16), dtype=np.uint8)
    return np.concatenate([scale.reshape(nb, 2), q], axis=1).reshape(rows, -1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--wtype", required=True, choices=["Q8_0", "Q4_0", "IQ4_NL"])  # IQ4_NL: Q4_0's block layout
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    qt = Q[a.wtype]
    w = gguf.GGUFWriter(a.out, "qwen3")
    w.add_name(f"qwen3-0.6b-shaped random {a.wtype} seed {a.seed}")
    w.add_context_length(40960)
    w.add_embedding_length(D)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV)
    w.add_key_length(HD)
    w.add_value_length(HD)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1000000.0)
    w.add_tokenizer_model("llama")
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"\u2581w{i}" for i in range(VOCAB - len(tokens))]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    types += [gguf.TokenType.NORMAL] * (VOCAB - len(types))
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * 259 + [-float(i) for i in range(VOCAB - 259)])
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def mat(name, rows, cols):
        raw = blocks(rng, rows, cols, a.wtype)
        w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=qt)

    ones = lambda n: np.ones(n, dtype=np.float32)
    mat("token_embd.weight", VOCAB, D)
    w.add_tensor("output_norm.weight", ones(D))
    for il in range(LAYERS):
        p = f"blk.{il}."
        w.add_tensor(p + "attn_norm.weight", ones(D))
        mat(p + "attn_q.weight", HEADS * HD, D)
        mat(p + "attn_k.weight", KV * HD, D)
        mat(p + "attn_v.weight", KV * HD, D)
        mat(p + "attn_output.weight", D, HEADS * HD)
        w.add_tensor(p + "attn_q_norm.weight", ones(HD))
        w.add_tensor(p + "attn_k_norm.weight", ones(HD))
        w.add_tensor(p + "ffn_norm.weight", ones(D))
        mat(p + "ffn_gate.weight", FF, D)
        mat(p + "ffn_up.weight", FF, D)
        mat(p + "ffn_down.weight", D, FF)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
