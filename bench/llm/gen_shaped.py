#!/usr/bin/env python3
"""Writes a GGUF with a real model's shapes and random weights, for benchmarks (the benchmarks feed token ids, not
text: the vocabulary is a SentencePiece-style list of placeholder pieces). Shapes, from the models' published
configs:
  qwen3-0.6b    qwen3: 28 layers, d_model 1024, 16 query / 8 KV heads of 128, FFN 3072, QK-norm, vocab 151936
  llama3.2-1b   llama: 16 layers, d_model 2048, 32 / 8 heads of 64, FFN 8192, vocab 128256, rope base 500000 with
                Llama 3.1's frequency factors (factor 32, low 1, high 4, original context 8192)
  qwen3.5-0.8b  qwen35: 24 layers (every 4th gated attention: 8 / 2 heads of 256, RoPE on 64 of them), the others
                gated delta nets (16 key and 16 value heads of 128, conv kernel 4), FFN 3584, vocab 248320
  qwen3.5-4b    qwen35: 32 layers, d_model 2560, attention 16 / 4 heads of 256, delta nets 16 key and 32 value
                heads of 128, FFN 9216, vocab 248320
  olmoe-1b-7b   olmoe: 16 layers, d_model 2048, 16 / 16 heads of 128 (q and k normed over all heads), 64 experts
                of 1024, 8 a token, vocab 50304, rope base 10000
  qwen3-30b-a3b qwen3moe: 48 layers, d_model 2048, 32 / 4 heads of 128, QK-norm, 128 experts of 768, 8 a token,
                vocab 151936
  qwen3.6-35b-a3b  qwen35moe: 40 layers as qwen35 (every 4th gated attention, 16 / 2 heads of 256; delta nets 16
                key and 32 value heads of 128), 256 experts of 512, 8 a token, a shared expert of 512, vocab 248320
  glm-4.7-flash deepseek2: 47 layers, d_model 2048, latent attention (20 heads, q_lora 768, kv_lora 512, 192 + 64
                query dims and 256 value dims a head, rope base 1e6), the first layer a dense FFN of 10240, then 64
                experts of 1536, 4 a token, sigmoid routing with a selection bias, scale 1.8, renormalized, and one
                shared expert; vocab 154880. The heads' attn_k_b (192 wide) is Q8_0 whatever --wtype (a K-quant's
                256-block does not fit), as llama.cpp's quantize falls back
All but olmoe tie the output head to the embedding. --layers cuts the stack (the per-layer figures scale to the full model).
The routers (ffn_gate_inp) are float32 N(0, 1/d_model): every expert is picked about equally often.

Weights are random blocks written directly in the quantized layout (no float matrix is ever built, so a 1 GB file
takes seconds): Q8_0 = f16 scale + 32 int8; Q4_0 = f16 scale + 16 bytes of 4-bit values (offset 8); IQ4_NL the
same bytes, each nibble indexing the IQ4 codebook; Q4_K = f16 d and dmin, every sub-block's 6-bit scale and min 32
(so values d * 32 * (q - 7.5): centred), 128 bytes of nibbles. Scales give each matrix entries of about
1/sqrt(fan-in), so activations stay O(1). Norms are 1; the delta nets' ssm_a is -1 and dt bias 0.

usage: gen_shaped.py OUT.gguf --shape SHAPE --wtype {Q8_0,Q4_0,IQ4_NL,Q4_K} [--seed N] [--layers N]
The tensors are written one at a time (a 17 GB file never sits in memory).
"""
import argparse
import math

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

SHAPES = {
    "qwen3-0.6b": dict(arch="qwen3", d=1024, ff=3072, layers=28, heads=16, kv=8, hd=128, vocab=151936, base=1e6, ctx=40960),
    "llama3.2-1b": dict(arch="llama", d=2048, ff=8192, layers=16, heads=32, kv=8, hd=64, vocab=128256, base=5e5, ctx=131072),
    "qwen3.5-0.8b": dict(arch="qwen35", d=1024, ff=3584, layers=24, heads=8, kv=2, hd=256, vocab=248320, base=1e7, ctx=262144,
                         n_rot=64, interval=4, nk=16, nv=16, dk=128, conv=4),
    "qwen3.5-4b": dict(arch="qwen35", d=2560, ff=9216, layers=32, heads=16, kv=4, hd=256, vocab=248320, base=1e7, ctx=262144,
                       n_rot=64, interval=4, nk=16, nv=32, dk=128, conv=4),
    "olmoe-1b-7b": dict(arch="olmoe", d=2048, ff=1024, layers=16, heads=16, kv=16, hd=128, vocab=50304, base=1e4, ctx=4096,
                        experts=64, used=8),
    "qwen3-30b-a3b": dict(arch="qwen3moe", d=2048, ff=6144, layers=48, heads=32, kv=4, hd=128, vocab=151936, base=1e6, ctx=40960,
                          experts=128, used=8, ff_exp=768),
    "qwen3.6-35b-a3b": dict(arch="qwen35moe", d=2048, ff=512, layers=40, heads=16, kv=2, hd=256, vocab=248320, base=1e7, ctx=262144,
                            n_rot=64, interval=4, nk=16, nv=32, dk=128, conv=4, experts=256, used=8, ff_exp=512, ff_shared=512),
    "glm-4.7-flash": dict(arch="deepseek2", d=2048, ff=10240, layers=47, heads=20, kv=1, hd=576, vocab=154880, base=1e6,
                          ctx=202752, n_rot=64, q_lora=768, kv_lora=512, nope=192, v=256, dense=1, experts=64, used=4,
                          ff_exp=1536, shared=1, scale=1.8),
}
HYBRID = ("qwen35", "qwen35moe")


def blocks(rng, rows, cols, wtype):
    """(rows, cols) matrix as raw quantized bytes (rows, cols // block * block_bytes)."""
    target = 1.7 / np.sqrt(cols)
    if wtype == "Q4_K":
        nb = rows * cols // 256
        d = np.full((nb, 1), target / (32 * 4.6), dtype=np.float16).view(np.uint8)
        dmin = np.full((nb, 1), target / (32 * 4.6) * 7.5, dtype=np.float16).view(np.uint8)
        scales = np.tile(np.array([160] * 8 + [0] * 4, dtype=np.uint8), (nb, 1))  # every sc and m = 32
        q = rng.integers(0, 256, size=(nb, 128), dtype=np.uint8)
        return np.concatenate([d.reshape(nb, 2), dmin.reshape(nb, 2), scales, q], axis=1).reshape(rows, -1)
    nb = rows * cols // 32
    scale = np.full((nb, 1), target / (7 if wtype == "Q4_0" else 127), dtype=np.float16).view(np.uint8)
    if wtype == "Q8_0":
        q = rng.integers(-127, 128, size=(nb, 32), dtype=np.int8).view(np.uint8)
    else:
        q = rng.integers(0, 256, size=(nb, 16), dtype=np.uint8)
    return np.concatenate([scale.reshape(nb, 2), q], axis=1).reshape(rows, -1)


def llama3_freq_factors(hd, base, factor=32.0, low=1.0, high=4.0, orig=8192):
    """Llama 3.1's rope_freqs: per rotated pair, 1 for short wavelengths, `factor` for long ones, smooth between."""
    out = []
    for i in range(hd // 2):
        wavelen = 2 * math.pi / base ** (-2 * i / hd)
        if wavelen < orig / high:
            out.append(1.0)
        elif wavelen > orig / low:
            out.append(factor)
        else:
            smooth = (orig / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype=np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--shape", default="qwen3-0.6b", choices=sorted(SHAPES))
    ap.add_argument("--wtype", required=True, choices=["Q8_0", "Q4_0", "IQ4_NL", "Q4_K"])  # IQ4_NL: Q4_0's block layout
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=None, help="cut the stack to N layers")
    a = ap.parse_args()
    S = SHAPES[a.shape]
    D, FF, L, H, KV, HD, V = S["d"], S["ff"], a.layers or S["layers"], S["heads"], S["kv"], S["hd"], S["vocab"]
    rng = np.random.default_rng(a.seed)
    w = gguf.GGUFWriter(a.out, S["arch"])
    w.add_name(f"{a.shape}-shaped random {a.wtype} seed {a.seed}")
    w.add_context_length(S["ctx"])
    w.add_embedding_length(D)
    w.add_block_count(L)
    w.add_feed_forward_length(FF)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_key_length(HD)
    w.add_value_length(S.get("kv_lora", HD))  # deepseek2: the latent cache rows, [c | k_pe] and c
    w.add_layer_norm_rms_eps(1e-6 if S["arch"] != "llama" else 1e-5)
    w.add_rope_freq_base(S["base"])
    w.add_rope_dimension_count(S.get("n_rot", HD))
    if "experts" in S:
        w.add_expert_count(S["experts"])
        w.add_expert_used_count(S["used"])
        if "ff_exp" in S:
            w.add_expert_feed_forward_length(S["ff_exp"])
        if "ff_shared" in S:
            w.add_expert_shared_feed_forward_length(S["ff_shared"])
    if S["arch"] == "deepseek2":
        A = S["arch"]
        w.add_uint32(f"{A}.attention.key_length_mla", S["nope"] + S["n_rot"])
        w.add_uint32(f"{A}.attention.value_length_mla", S["v"])
        w.add_uint32(f"{A}.attention.kv_lora_rank", S["kv_lora"])
        w.add_uint32(f"{A}.attention.q_lora_rank", S["q_lora"])
        w.add_uint32(f"{A}.leading_dense_block_count", S["dense"])
        w.add_uint32(f"{A}.expert_shared_count", S["shared"])
        w.add_uint32(f"{A}.expert_gating_func", 2)  # sigmoid
        w.add_bool(f"{A}.expert_weights_norm", True)
        w.add_float32(f"{A}.expert_weights_scale", S["scale"])
    if S["arch"] in HYBRID:
        w.add_rope_dimension_sections([11, 11, 10, 0])
        w.add_ssm_conv_kernel(S["conv"])
        w.add_ssm_state_size(S["dk"])
        w.add_ssm_group_count(S["nk"])
        w.add_ssm_time_step_rank(S["nv"])
        w.add_ssm_inner_size(S["nv"] * S["dk"])
        w.add_full_attention_interval(S["interval"])
    w.add_tokenizer_model("llama")
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"\u2581w{i}" for i in range(V - len(tokens))]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    types += [gguf.TokenType.NORMAL] * (V - len(types))
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * 259 + [-float(i) for i in range(V - 259)])
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    # every tensor is declared first (name, shape, type, bytes) and made only when its data is written
    makers = []

    def add(name, shape, dtype, raw_dtype, nbytes, make):
        w.add_tensor_info(name, shape, np.dtype(dtype), nbytes, raw_dtype=raw_dtype)
        makers.append(make)

    def mat(name, rows, cols, experts=0, wtype=None):
        wt = wtype or a.wtype
        block, block_bytes = gguf.GGML_QUANT_SIZES[Q[wt]]
        n = max(experts, 1)
        shape = (n, rows, cols // block * block_bytes) if experts else (rows, cols // block * block_bytes)
        add(name, shape, np.uint8, Q[wt], n * rows * cols // block * block_bytes,
            lambda: np.stack([blocks(rng, rows, cols, wt) for _ in range(n)]) if experts else blocks(rng, rows, cols, wt))

    def vec(name, make):
        v = make()
        add(name, v.shape, np.float32, None, v.nbytes, lambda: v)

    ones = lambda n: (lambda: np.ones(n, dtype=np.float32))
    mat("token_embd.weight", V, D)
    if S["arch"] == "olmoe":  # llama.cpp's olmoe loader requires its own head
        mat("output.weight", V, D)
    vec("output_norm.weight", ones(D))
    if S["arch"] == "llama":
        vec("rope_freqs.weight", lambda: llama3_freq_factors(HD, S["base"]))
    for il in range(L):
        p = f"blk.{il}."
        vec(p + "attn_norm.weight", ones(D))
        if S["arch"] == "deepseek2":  # latent attention, as llama.cpp's MLA loader reads it
            ql, kl, R, N = S["q_lora"], S["kv_lora"], S["n_rot"], S["nope"]
            mat(p + "attn_q_a.weight", ql, D)
            vec(p + "attn_q_a_norm.weight", ones(ql))
            mat(p + "attn_q_b.weight", H * (N + R), ql)
            mat(p + "attn_kv_a_mqa.weight", kl + R, D)
            vec(p + "attn_kv_a_norm.weight", ones(kl))
            mat(p + "attn_k_b.weight", kl, N, H, wtype="Q8_0")
            mat(p + "attn_v_b.weight", S["v"], kl, H)
            mat(p + "attn_output.weight", D, H * S["v"])
        elif S["arch"] in HYBRID and (il + 1) % S["interval"] != 0:  # a gated delta net
            nk, nv, dk, K = S["nk"], S["nv"], S["dk"], S["conv"]
            conv_dim = (2 * nk + nv) * dk
            mat(p + "attn_qkv.weight", conv_dim, D)
            mat(p + "attn_gate.weight", nv * dk, D)
            mat(p + "ssm_alpha.weight", nv, D)
            mat(p + "ssm_beta.weight", nv, D)
            mat(p + "ssm_out.weight", D, nv * dk)
            vec(p + "ssm_conv1d.weight", lambda: (rng.standard_normal((conv_dim, K)) / 2).astype(np.float32))
            vec(p + "ssm_dt.bias", lambda: np.zeros(nv, dtype=np.float32))
            vec(p + "ssm_a", lambda: -np.ones(nv, dtype=np.float32))
            vec(p + "ssm_norm.weight", ones(dk))
        else:
            gate = 2 if S["arch"] in HYBRID else 1  # qwen35's attn_q also emits the output gate
            mat(p + "attn_q.weight", gate * H * HD, D)
            mat(p + "attn_k.weight", KV * HD, D)
            mat(p + "attn_v.weight", KV * HD, D)
            mat(p + "attn_output.weight", D, H * HD)
            if S["arch"] != "llama":  # olmoe's norms span all heads
                vec(p + "attn_q_norm.weight", ones(H * HD if S["arch"] == "olmoe" else HD))
                vec(p + "attn_k_norm.weight", ones(KV * HD if S["arch"] == "olmoe" else HD))
        vec(p + ("post_attention_norm.weight" if S["arch"] in HYBRID else "ffn_norm.weight"), ones(D))
        if "experts" in S and il >= S.get("dense", 0):
            E, FE = S["experts"], S.get("ff_exp", FF)
            vec(p + "ffn_gate_inp.weight", lambda: (rng.standard_normal((E, D)) / np.sqrt(D)).astype(np.float32))
            mat(p + "ffn_gate_exps.weight", FE, D, E)
            mat(p + "ffn_up_exps.weight", FE, D, E)
            mat(p + "ffn_down_exps.weight", D, FE, E)
            if "ff_shared" in S:
                FS = S["ff_shared"]
                vec(p + "ffn_gate_inp_shexp.weight", lambda: (rng.standard_normal(D) / np.sqrt(D)).astype(np.float32))
                mat(p + "ffn_gate_shexp.weight", FS, D)
                mat(p + "ffn_up_shexp.weight", FS, D)
                mat(p + "ffn_down_shexp.weight", D, FS)
            if S["arch"] == "deepseek2":
                vec(p + "exp_probs_b.bias", lambda: np.zeros(E, dtype=np.float32))
                FS = S["shared"] * FE
                mat(p + "ffn_gate_shexp.weight", FS, D)
                mat(p + "ffn_up_shexp.weight", FS, D)
                mat(p + "ffn_down_shexp.weight", D, FS)
            continue
        mat(p + "ffn_gate.weight", FF, D)
        mat(p + "ffn_up.weight", FF, D)
        mat(p + "ffn_down.weight", D, FF)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for make in makers:
        w.write_tensor_data(make())
    w.close()
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
