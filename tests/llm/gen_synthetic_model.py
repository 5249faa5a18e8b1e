#!/usr/bin/env python3
"""Writes a tiny random decoder as a complete GGUF (llama.cpp's tensor names and metadata keys, a small
SentencePiece-style vocabulary) with every matrix in one weight type, then runs reference_forward.py on it.

usage: gen_synthetic_model.py OUT.gguf --arch {llama,qwen2,qwen3,gemma3} --wtype TYPE --seed N
                              [--tokens 1,2,3] [--steps 32] [--vocab 300] [--untied] [--arch-name NAME]
                              [--rope-scaling {none,llama3,linear,yarn}] [--rope-factor F] [--rope-orig-ctx N]
                              [--rope-attn-factor A] [--rope-dims N] [--rope-base B] [--context-length N]
  TYPE: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K IQ4_NL IQ4_XS MXFP4
  --arch qwen2 is llama's layout with NEOX RoPE and float32 biases on q, k and v (blk.N.attn_{q,k,v}.bias, drawn
               N(0, 0.5^2) so that they matter).
  --untied     writes output.weight (otherwise the output projection is tied to token_embd.weight)
  --arch-name  stores the layout of --arch under another general.architecture (and key prefix), without a
               reference (the bad-input tests: "mamba9", llama's layout as "qwen3")
  RoPE (none of these: no key or tensor beyond the plain ones, the files as before):
  --rope-scaling llama3  rope_freqs.weight (llama only): Llama 3.1's frequency factors, computed as
               convert_hf_to_gguf.py does from factor --rope-factor (8), low_freq_factor 1, high_freq_factor 4 and
               original_max_position_embeddings --rope-orig-ctx, here 64 by default (Llama 3.1's is 8192): with it,
               pairs whose wavelength is past 64 positions are slowed 8x, those between 16 and 64 smoothly, so the
               factors move the angles of prompts of a few dozen tokens (with 8192 only pairs that barely turn in
               100 positions would be touched, changes below the tests' tolerances).
  --rope-scaling linear  rope.scaling.type linear, rope.scaling.factor --rope-factor (4): every angle / factor.
  --rope-scaling yarn    rope.scaling.type yarn, rope.scaling.factor --rope-factor (4),
               rope.scaling.original_context_length --rope-orig-ctx (2048: at head_dim 32 and base 500000 the pairs
               0-2 extrapolate, 3-7 ramp and 8-15 interpolate), context_length factor * that unless --context-length,
               and rope.scaling.attn_factor where --rope-attn-factor is given. llama.cpp multiplies cos and sin by
               attn_factor * (1 + 0.1 ln factor).
  --rope-dims N  rope.dimension_count N < head_dim: partial RoPE, gemma3 only (llama.cpp's llama loader refuses it,
               its qwen2 and qwen3 graphs assert n_rot == head_dim).
  --rope-base B  rope.freq_base (default llama 500000, qwen2 / qwen3 / gemma3 1000000).
  --context-length N  context_length (default 128; yarn: factor * original context).
  --yarn-mscale-all-dim M  deepseek2 with yarn: rope.scaling.yarn_log_multiplier 0.1 M, as convert_hf_to_gguf.py
               writes DeepSeek's mscale_all_dim (cos and sin then keep attn_factor; the scores take
               (1 + 0.1 M ln factor)^2).
  --expert-groups G:USED  deepseek2: expert_group_count G and expert_group_used_count USED (DeepSeek-V3's
               group-limited routing).
  Outputs: OUT.gguf, and unless skipped OUT.gguf.logits.f64 and OUT.gguf.greedy.i32 (see reference_forward.py).

Types the gguf package cannot quantize (K-quants, IQ4) are encoded here by small quantizers of our own: their
only job is to give weights of the right scale (so activations stay O(1)); the reference reads back whatever
was stored through gguf.quants.dequantize, so a loose quantizer cannot make the test wrong.
"""
import argparse
import os
import sys

# tiny matrices: BLAS threads only contend with the build for the cores
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q, GGML_QUANT_SIZES
from gguf.quants import dequantize, quantize

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_forward  # noqa: E402

KVALUES_IQ4 = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=np.float32)
CONTEXT_LENGTH = 128


def dims(arch, wtype):
    """Model sizes: every matrix's input dim must be a multiple of the weight type's block (256 for K and IQ4_XS)."""
    big = GGML_QUANT_SIZES[Q[wtype]][0] >= 256
    if arch in ("llama", "qwen2"):  # qwen2: llama.cpp sizes q's bias n_embd, so heads * head_dim == d_model
        return dict(d=256, ff=512, heads=4, kv=2, hd=64, layers=2) if big else \
               dict(d=128, ff=256, heads=4, kv=2, hd=32, layers=2)
    if arch == "qwen3":  # q width (heads * head_dim) differs from d_model, as in real Qwen3
        return dict(d=256, ff=512, heads=4, kv=2, hd=128, layers=3) if big else \
               dict(d=128, ff=256, heads=4, kv=2, hd=64, layers=3)
    if arch == "gemma3":  # 6 layers: layers 0-4 slide, layer 5 is global
        return dict(d=256, ff=512, heads=4, kv=1, hd=128, layers=6, window=4) if big else \
               dict(d=64, ff=128, heads=4, kv=1, hd=32, layers=6, window=4)
    if arch == "qwen3moe":  # qwen3's attention; 8 experts, 2 a token, narrower than d_model as in real ones
        return dict(d=256, ff=512, heads=4, kv=2, hd=128, layers=2, experts=8, used=2, ff_exp=256) if big else \
               dict(d=128, ff=256, heads=4, kv=2, hd=64, layers=2, experts=8, used=2, ff_exp=64)
    if arch == "olmoe":  # the q and k norms span all heads: llama.cpp sizes attn_k_norm n_embd, so kv == heads
        return dict(d=256, ff=256, heads=4, kv=4, hd=64, layers=2, experts=8, used=2, ff_exp=256) if big else \
               dict(d=128, ff=64, heads=4, kv=4, hd=32, layers=2, experts=8, used=2, ff_exp=64)
    if arch == "deepseek2":  # latent attention (kv_lora 64, 32 + 16 query dims and 32 value dims a head), one
        # leading dense block, then 8 experts (2 a token) and a shared one; no K-quant sizes (the heads' k_b reads 32)
        return dict(d=128, ff=256, heads=4, kv=1, layers=3, kv_lora=64, nope=32, rope=16, v=32, experts=8, used=2,
                    ff_exp=64, dense=1, hd=32)
    raise SystemExit(f"unknown --arch {arch}")


# ---- quantizers for the formats gguf.quants cannot write. x: (n_blocks, block) float32 -> (n_blocks, bytes) uint8

def _half_bytes(v):
    return v.astype(np.float16).reshape(-1, 1).view(np.uint8)


def _safe_div(a, b):
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape, dtype=np.float32), where=b != 0)


def _kquant_affine(x, qmax):
    """Q4_K/Q5_K: 8 sub-blocks of 32, value = d*sc*q - dmin*m with 6-bit sc, m and q in [0, qmax]."""
    nb = x.shape[0]
    sub = x.reshape(nb, 8, 32)
    lo = np.minimum(sub.min(-1), 0)
    scale, offs = (sub.max(-1) - lo) / qmax, -lo
    d, dmin = (scale.max(-1) / 63).astype(np.float16), (offs.max(-1) / 63).astype(np.float16)
    df, dmf = d.astype(np.float32)[:, None], dmin.astype(np.float32)[:, None]
    sc = np.clip(np.round(_safe_div(scale, df)), 0, 63).astype(np.uint8)
    m = np.clip(np.ceil(_safe_div(offs, dmf)), 0, 63).astype(np.uint8)
    es, em = (df * sc)[..., None], (dmf * m)[..., None]
    q = np.clip(np.round(_safe_div(sub + em, es)), 0, qmax).astype(np.uint8)
    # 12 scale bytes: bytes 0-3 / 4-7 hold sc / m of sub-blocks 0-3 in 6 bits and the top 2 bits of sub-blocks
    # 4-7; bytes 8-11 hold the low 4 bits of sc (low nibble) and m (high nibble) of sub-blocks 4-7
    s = np.zeros((nb, 12), dtype=np.uint8)
    s[:, 0:4] = sc[:, :4] | ((sc[:, 4:] >> 4) << 6)
    s[:, 4:8] = m[:, :4] | ((m[:, 4:] >> 4) << 6)
    s[:, 8:12] = (sc[:, 4:] & 0xF) | ((m[:, 4:] & 0xF) << 4)
    # 128 nibble bytes: byte c*32+i holds element i of sub-block 2c (low) and of 2c+1 (high)
    lo4 = q & 0xF
    qs = (lo4[:, 0::2, :] | (lo4[:, 1::2, :] << 4)).reshape(nb, 128)
    head = np.concatenate([_half_bytes(d), _half_bytes(dmin), s], axis=1)
    if qmax == 15:
        return np.concatenate([head, qs], axis=1)
    # Q5_K: bit j of qh[i] is the fifth bit of element i of sub-block j
    qh = np.zeros((nb, 32), dtype=np.uint8)
    for j in range(8):
        qh |= ((q[:, j, :] >> 4) & 1) << j
    return np.concatenate([head, qh, qs], axis=1)


def _q6_k(x):
    """16 sub-blocks of 16, value = d * sc * (q - 32) with int8 sc and 6-bit q."""
    nb = x.shape[0]
    sub = x.reshape(nb, 16, 16)
    scale = np.abs(sub).max(-1) / 31
    d = (scale.max(-1) / 127).astype(np.float16)
    df = d.astype(np.float32)[:, None]
    sc = np.clip(np.round(_safe_div(scale, df)), 0, 127).astype(np.int8)
    q = (np.clip(np.round(_safe_div(sub, (df * sc)[..., None])), -32, 31) + 32).astype(np.uint8).reshape(nb, 256)
    # element h*128 + s*64 + e: low nibble in ql[h*64 + e] at shift 4s; element h*128 + t*32 + e: high 2 bits
    # in qh[h*32 + e] at shift 2t
    ql = np.zeros((nb, 128), dtype=np.uint8)
    qh = np.zeros((nb, 64), dtype=np.uint8)
    for h in range(2):
        for s in range(2):
            ql[:, h * 64:(h + 1) * 64] |= (q[:, h * 128 + s * 64: h * 128 + (s + 1) * 64] & 0xF) << (4 * s)
        for t in range(4):
            qh[:, h * 32:(h + 1) * 32] |= ((q[:, h * 128 + t * 32: h * 128 + (t + 1) * 32] >> 4) & 3) << (2 * t)
    return np.concatenate([ql, qh, sc.view(np.uint8), _half_bytes(d)], axis=1)


def _nearest_iq4(y):
    return np.abs(y[..., None] - KVALUES_IQ4).argmin(-1).astype(np.uint8)


def _pack_iq4_nibbles(q):
    # 32 elements -> 16 bytes: element e in the low nibble of byte e, element 16+e in its high nibble
    return q[..., :16] | (q[..., 16:] << 4)


def _iq4_nl(x):
    nb = x.shape[0]
    # d signed so that the largest-magnitude element lands on the table's -127 end
    xm = np.take_along_axis(x, np.abs(x).argmax(-1)[:, None], -1)[:, 0]
    d = (xm / -127).astype(np.float16)
    q = _nearest_iq4(_safe_div(x, d.astype(np.float32)[:, None]))
    return np.concatenate([_half_bytes(d), _pack_iq4_nibbles(q).reshape(nb, 16)], axis=1)


def _iq4_xs(x):
    nb = x.shape[0]
    sub = x.reshape(nb, 8, 32)
    xm = np.take_along_axis(sub, np.abs(sub).argmax(-1)[..., None], -1)[..., 0]
    s = xm / -127
    d = (np.abs(s).max(-1) / 32).astype(np.float16)
    df = d.astype(np.float32)[:, None]
    ls = (np.clip(np.round(_safe_div(s, df)), -32, 31) + 32).astype(np.uint8)   # stored as ls, means ls - 32
    q = _nearest_iq4(_safe_div(sub, (df * (ls.astype(np.float32) - 32))[..., None]))
    scales_l = (ls[:, 0::2] & 0xF) | ((ls[:, 1::2] & 0xF) << 4)                 # (nb, 4)
    scales_h = np.zeros(nb, dtype=np.uint16)
    for j in range(8):
        scales_h |= ((ls[:, j].astype(np.uint16) >> 4) & 3) << (2 * j)
    qs = _pack_iq4_nibbles(q).reshape(nb, 128)
    return np.concatenate([_half_bytes(d), scales_h.reshape(-1, 1).view(np.uint8), scales_l, qs], axis=1)


OWN_QUANTIZERS = {"Q4_K": lambda x: _kquant_affine(x, 15), "Q5_K": lambda x: _kquant_affine(x, 31),
                  "Q6_K": _q6_k, "IQ4_NL": _iq4_nl, "IQ4_XS": _iq4_xs}


def encode(w, wtype):
    """w (rows, cols) float -> (array for GGUFWriter.add_tensor, raw_dtype)."""
    w = np.ascontiguousarray(w, dtype=np.float32)
    if wtype == "F32":
        return w, None
    if wtype == "F16":
        return w.astype(np.float16), None
    qt = Q[wtype]
    if wtype in OWN_QUANTIZERS:
        block, nbytes = GGML_QUANT_SIZES[qt]
        raw = OWN_QUANTIZERS[wtype](w.reshape(-1, block)).reshape(w.shape[0], -1)
        assert raw.dtype == np.uint8 and raw.shape[1] == w.shape[1] // block * nbytes, (wtype, raw.shape)
    else:
        raw = quantize(w, qt)
    # a layout slip would decode to noise: the round trip through gguf's decoder must stay close
    back = dequantize(raw, qt)
    err = np.sqrt(np.mean((back - w) ** 2) / np.mean(w ** 2))
    assert err < 0.2, f"{wtype} round-trip error {err:.3f}"
    return raw, qt


def vocabulary(n):
    """SentencePiece-style: <unk> <s> </s>, the 256 byte tokens, then word pieces."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    i = 0
    while len(tokens) < n:
        tokens.append("\u2581w" + str(i))
        types.append(gguf.TokenType.NORMAL)
        i += 1
    scores = [0.0] * 259 + [-float(k) for k in range(len(tokens) - 259)]
    return tokens[:n], scores[:n], types[:n]


def llama3_rope_factors(base, dim, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, old_context_len=8192):
    """Llama 3.1's frequency factors (rope_freqs.weight) as convert_hf_to_gguf.py computes them: 1 for pairs whose
    wavelength 2 pi / freq is below old_context_len / high_freq_factor, factor past old_context_len / low_freq_factor,
    and 1 / ((1 - smooth) / factor + smooth) between, smooth = (old_context_len / wavelength - low) / (high - low)."""
    freqs = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    wavelen = 2 * np.pi / freqs
    smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    with np.errstate(divide="ignore"):  # (only the band between the two wavelengths is taken)
        mid = 1.0 / ((1 - smooth) / factor + smooth)
    ff = np.where(wavelen < old_context_len / high_freq_factor, 1.0,
                  np.where(wavelen > old_context_len / low_freq_factor, factor, mid))
    return ff.astype(np.float32)


ROPE_DEFAULTS = {"llama3": dict(factor=8.0, orig_ctx=64), "linear": dict(factor=4.0, orig_ctx=None),
                 "yarn": dict(factor=4.0, orig_ctx=2048)}


def add_vocabulary(w, n):
    """vocabulary(n) as a SentencePiece ("llama") tokenizer with <unk> <s> </s> as unk, bos and eos."""
    tokens, scores, types = vocabulary(n)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


def add_deepseek2_layer(add, mat, norm, rng, p, il, D, d, H, q_lora):
    """One deepseek2 layer as llama.cpp's MLA loader reads it: attn_q (or attn_q_a, its norm and attn_q_b),
    attn_kv_a_mqa and its norm, the heads' attn_k_b (H, kv_lora, nope) and attn_v_b (H, v, kv_lora), attn_output;
    a dense FFN in the leading blocks, else a sigmoid router with exp_probs_b, experts and a shared expert."""
    C, N, R, V = D["kv_lora"], D["nope"], D["rope"], D["v"]
    if q_lora:
        add(p + "attn_q_a.weight", mat(q_lora, d))
        add(p + "attn_q_a_norm.weight", norm(q_lora), quantized=False)
        add(p + "attn_q_b.weight", mat(H * (N + R), q_lora))
    else:
        add(p + "attn_q.weight", mat(H * (N + R), d))
    add(p + "attn_kv_a_mqa.weight", mat(C + R, d))
    add(p + "attn_kv_a_norm.weight", norm(C), quantized=False)
    add(p + "attn_k_b.weight", np.stack([mat(C, N) for _ in range(H)]))
    add(p + "attn_v_b.weight", np.stack([mat(V, C) for _ in range(H)]))
    add(p + "attn_output.weight", mat(d, H * V))
    add(p + "ffn_norm.weight", norm(d), quantized=False)
    if il < D["dense"]:
        add(p + "ffn_gate.weight", mat(D["ff"], d))
        add(p + "ffn_up.weight", mat(D["ff"], d))
        add(p + "ffn_down.weight", mat(d, D["ff"]))
        return
    E, fe = D["experts"], D["ff_exp"]
    add(p + "ffn_gate_inp.weight", (2.0 * mat(E, d)).astype(np.float32), quantized=False)
    add(p + "exp_probs_b.bias", (0.5 * rng.standard_normal(E)).astype(np.float32), quantized=False)
    add(p + "ffn_gate_exps.weight", np.stack([mat(fe, d) for _ in range(E)]))
    add(p + "ffn_up_exps.weight", np.stack([mat(fe, d) for _ in range(E)]))
    add(p + "ffn_down_exps.weight", np.stack([mat(d, fe) for _ in range(E)]))
    add(p + "ffn_gate_shexp.weight", mat(fe, d))
    add(p + "ffn_up_shexp.weight", mat(fe, d))
    add(p + "ffn_down_shexp.weight", mat(d, fe))


def write_model(path, arch, wtype, seed, vocab, untied, arch_name, rope=None, q_lora=0, set_ints=(), drop_keys=(),
                groups=None):
    """rope: None (plain RoPE), or a dict of scaling ("none", "llama3", "linear", "yarn"), factor, orig_ctx,
    attn_factor, dims, base, context_length (None: the default), mscale_all_dim (deepseek2's yarn).
    groups: None, or (expert_group_count, expert_group_used_count) for deepseek2."""
    rope = dict(rope or {})
    D = dims(arch, wtype)
    d, ff, H, KV, hd, L = D["d"], D["ff"], D["heads"], D["kv"], D["hd"], D["layers"]
    rng = np.random.default_rng(seed)
    # N(0, 1/fan_in) keeps every projection's output O(1); norm weights near 1 (gemma's +1 is already in them)
    mat = lambda out, inp: rng.standard_normal((out, inp)) / np.sqrt(inp)
    norm = lambda n: (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    eps = {"llama": 1e-5, "qwen2": 1e-6, "qwen3": 1e-6, "gemma3": 1e-6, "qwen3moe": 1e-6, "olmoe": 1e-5, "deepseek2": 1e-6}[arch]
    base = {"llama": 500000.0, "qwen2": 1000000.0, "qwen3": 1000000.0, "gemma3": 1000000.0, "qwen3moe": 1000000.0, "olmoe": 10000.0,
            "deepseek2": 10000.0}[arch]
    scaling = rope.get("scaling") or "none"
    if rope.get("base") is not None:
        base = float(rope["base"])
    n_rot = int(rope["dims"]) if rope.get("dims") is not None else hd
    factor = float(rope["factor"]) if rope.get("factor") is not None else ROPE_DEFAULTS.get(scaling, {}).get("factor")
    orig_ctx = int(rope["orig_ctx"]) if rope.get("orig_ctx") is not None else ROPE_DEFAULTS.get(scaling, {}).get("orig_ctx")
    context = CONTEXT_LENGTH
    if rope.get("context_length") is not None:
        context = int(rope["context_length"])
    elif scaling == "yarn":
        context = int(round(factor * orig_ctx))

    w = gguf.GGUFWriter(path, arch_name)
    w.add_name(f"synthetic {arch} {wtype} seed {seed}" + (f" rope {scaling}" if scaling != "none" else ""))
    w.add_context_length(context)
    w.add_embedding_length(d)
    w.add_block_count(L)
    w.add_feed_forward_length(ff)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    if arch == "deepseek2":  # the cache rows ([c | k_pe], c), and the per-head sizes in the _mla keys
        n_rot = D["rope"]
        w.add_key_length(D["kv_lora"] + n_rot)
        w.add_value_length(D["kv_lora"])
        w.add_uint32(f"{arch_name}.attention.key_length_mla", D["nope"] + n_rot)
        w.add_uint32(f"{arch_name}.attention.value_length_mla", D["v"])
        w.add_uint32(f"{arch_name}.attention.kv_lora_rank", D["kv_lora"])
        w.add_uint32(f"{arch_name}.attention.q_lora_rank", q_lora)
        w.add_uint32(f"{arch_name}.leading_dense_block_count", D["dense"])
        w.add_uint32(f"{arch_name}.expert_shared_count", 1)
        w.add_uint32(f"{arch_name}.expert_gating_func", 2)  # sigmoid
        w.add_bool(f"{arch_name}.expert_weights_norm", True)
        w.add_float32(f"{arch_name}.expert_weights_scale", 2.5)
        w.add_expert_feed_forward_length(D["ff_exp"])
    else:
        w.add_key_length(hd)
        w.add_value_length(hd)
    w.add_rope_dimension_count(n_rot)
    w.add_layer_norm_rms_eps(eps)
    w.add_rope_freq_base(base)
    if scaling in ("linear", "yarn"):
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR if scaling == "linear" else gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(factor)
    if scaling == "yarn":
        w.add_rope_scaling_orig_ctx_len(orig_ctx)
        if rope.get("attn_factor") is not None:
            w.add_rope_scaling_attn_factors(float(rope["attn_factor"]))
        if rope.get("mscale_all_dim") is not None:  # as convert_hf_to_gguf.py writes DeepSeek's: 0.1 * mscale_all_dim
            w.add_rope_scaling_yarn_log_mul(0.1 * float(rope["mscale_all_dim"]))
    if groups is not None:
        w.add_expert_group_count(groups[0])
        w.add_expert_group_used_count(groups[1])
    if arch == "gemma3":
        w.add_sliding_window(D["window"])
    if "experts" in D:
        w.add_expert_count(D["experts"])
        w.add_expert_used_count(D["used"])
        if arch == "qwen3moe":  # olmoe's experts are feed_forward_length wide (llama.cpp reads no other key); deepseek2 above
            w.add_expert_feed_forward_length(D["ff_exp"])
    add_vocabulary(w, vocab)

    def add(name, arr, quantized=True):
        if arr.ndim == 3:  # stacked experts (E, out, in): encoded as one (E * out, in) matrix, stored 3-D
            data, raw = encode(arr.reshape(-1, arr.shape[2]), wtype)
            w.add_tensor(name, data.reshape(arr.shape[0], arr.shape[1], -1), raw_dtype=raw)
            return
        data, raw = encode(arr, wtype) if quantized else (arr, None)
        w.add_tensor(name, data, raw_dtype=raw)

    add("token_embd.weight", mat(vocab, d))
    add("output_norm.weight", norm(d), quantized=False)
    if scaling == "llama3":
        add("rope_freqs.weight", llama3_rope_factors(base, n_rot, factor=factor, old_context_len=orig_ctx), quantized=False)
    if untied or arch == "olmoe":  # llama.cpp's olmoe loader requires output.weight (OLMoE's head is its own)
        add("output.weight", mat(vocab, d))
    for il in range(L):
        p = f"blk.{il}."
        add(p + "attn_norm.weight", norm(d), quantized=False)
        if arch == "deepseek2":
            add_deepseek2_layer(add, mat, norm, rng, p, il, D, d, H, q_lora)
            continue
        add(p + "attn_q.weight", mat(H * hd, d))
        add(p + "attn_k.weight", mat(KV * hd, d))
        add(p + "attn_v.weight", mat(KV * hd, d))
        if arch == "qwen2":
            bias = lambda n: (0.5 * rng.standard_normal(n)).astype(np.float32)
            add(p + "attn_q.bias", bias(H * hd), quantized=False)
            add(p + "attn_k.bias", bias(KV * hd), quantized=False)
            add(p + "attn_v.bias", bias(KV * hd), quantized=False)
        add(p + "attn_output.weight", mat(d, H * hd))
        if arch in ("qwen3", "gemma3", "qwen3moe"):
            add(p + "attn_q_norm.weight", norm(hd), quantized=False)
            add(p + "attn_k_norm.weight", norm(hd), quantized=False)
        if arch == "olmoe":  # over all heads at once
            add(p + "attn_q_norm.weight", norm(H * hd), quantized=False)
            add(p + "attn_k_norm.weight", norm(KV * hd), quantized=False)
        if arch == "gemma3":
            add(p + "post_attention_norm.weight", norm(d), quantized=False)
        add(p + "ffn_norm.weight", norm(d), quantized=False)
        if "experts" in D:
            E, fe = D["experts"], D["ff_exp"] if arch == "qwen3moe" else ff
            # the router float32 (llama.cpp's quantize keeps it so), its logits spread ~N(0, 2^2): clear choices
            add(p + "ffn_gate_inp.weight", (2.0 * mat(E, d)).astype(np.float32), quantized=False)
            add(p + "ffn_gate_exps.weight", np.stack([mat(fe, d) for _ in range(E)]))
            add(p + "ffn_up_exps.weight", np.stack([mat(fe, d) for _ in range(E)]))
            add(p + "ffn_down_exps.weight", np.stack([mat(d, fe) for _ in range(E)]))
            continue
        add(p + "ffn_gate.weight", mat(ff, d))
        add(p + "ffn_up.weight", mat(ff, d))
        add(p + "ffn_down.weight", mat(d, ff))
        if arch == "gemma3":
            add(p + "post_ffw_norm.weight", norm(d), quantized=False)
    for key in drop_keys:  # bad-input files: keys removed or overridden
        w.kv_data[0].pop(key, None)
    for key, value in set_ints:
        w.kv_data[0].pop(key, None)
        w.add_uint32(key, value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--arch", required=True, choices=["llama", "qwen2", "qwen3", "gemma3", "qwen3moe", "olmoe", "deepseek2"])
    ap.add_argument("--q-lora-rank", type=int, default=0, help="deepseek2: q through attn_q_a / attn_q_b of this rank (0: attn_q)")
    ap.add_argument("--set-int", action="append", default=[], metavar="KEY=N", help="bad input: store KEY as uint32 N (no reference)")
    ap.add_argument("--drop-key", action="append", default=[], metavar="KEY", help="bad input: leave KEY out (no reference)")
    ap.add_argument("--wtype", required=True, choices=["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
                                                      "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4"])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--tokens", default=None, help="prompt ids (default: 7 drawn from the seed)")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=300)
    ap.add_argument("--untied", action="store_true")
    ap.add_argument("--arch-name", default=None)
    ap.add_argument("--rope-scaling", default="none", choices=["none", "llama3", "linear", "yarn"])
    ap.add_argument("--rope-factor", type=float, default=None, help="llama3 8, linear and yarn 4")
    ap.add_argument("--rope-orig-ctx", type=int, default=None, help="llama3's original context 64, yarn's 2048")
    ap.add_argument("--rope-attn-factor", type=float, default=None, help="yarn: rope.scaling.attn_factor (none written)")
    ap.add_argument("--rope-dims", type=int, default=None, help="rope.dimension_count (default head_dim)")
    ap.add_argument("--rope-base", type=float, default=None, help="rope.freq_base (default per architecture)")
    ap.add_argument("--context-length", type=int, default=None, help=f"default {CONTEXT_LENGTH}; yarn: factor * original")
    ap.add_argument("--yarn-mscale-all-dim", type=float, default=None,
                    help="deepseek2 with --rope-scaling yarn: DeepSeek's mscale_all_dim (written as yarn_log_multiplier)")
    ap.add_argument("--expert-groups", default=None, metavar="G:USED",
                    help="deepseek2: group-limited routing, G groups of experts, the picks from the USED best")
    a = ap.parse_args()
    if a.vocab < 259:
        raise SystemExit("--vocab must hold the 3 specials and 256 byte tokens (>= 259)")
    if a.rope_scaling == "llama3" and a.arch != "llama":
        raise SystemExit("--rope-scaling llama3 (rope_freqs.weight): llama.cpp reads the factors for llama only")
    if a.rope_scaling != "none" and a.arch == "gemma3":
        raise SystemExit("--rope-scaling: gemma3's scaling is not modelled by the reference")
    if a.rope_attn_factor is not None and a.rope_scaling != "yarn":
        raise SystemExit("--rope-attn-factor goes with --rope-scaling yarn")
    if a.yarn_mscale_all_dim is not None and (a.rope_scaling != "yarn" or a.arch != "deepseek2"):
        raise SystemExit("--yarn-mscale-all-dim goes with --arch deepseek2 --rope-scaling yarn")
    if a.rope_scaling == "linear" and a.arch == "deepseek2":
        raise SystemExit("--rope-scaling linear: deepseek2 runs none or yarn")
    groups = tuple(int(v) for v in a.expert_groups.split(":")) if a.expert_groups else None
    if groups is not None and a.arch != "deepseek2":
        raise SystemExit("--expert-groups goes with --arch deepseek2")
    if a.rope_dims is not None and a.arch != "gemma3":
        raise SystemExit("--rope-dims: llama.cpp runs partial RoPE for gemma3 only (llama refuses it, qwen2 / qwen3 assert)")
    if a.rope_dims is not None and (a.rope_dims <= 0 or a.rope_dims % 2 or a.rope_dims > dims(a.arch, a.wtype)["hd"]):
        raise SystemExit(f"--rope-dims must be even and at most head_dim ({dims(a.arch, a.wtype)['hd']})")
    rope = dict(scaling=a.rope_scaling, factor=a.rope_factor, orig_ctx=a.rope_orig_ctx, attn_factor=a.rope_attn_factor,
                dims=a.rope_dims, base=a.rope_base, context_length=a.context_length,
                mscale_all_dim=a.yarn_mscale_all_dim)
    set_ints = [(kv.split("=")[0], int(kv.split("=")[1])) for kv in a.set_int]
    write_model(a.out, a.arch, a.wtype, a.seed, a.vocab, a.untied, a.arch_name or a.arch, rope, q_lora=a.q_lora_rank, set_ints=set_ints,
                drop_keys=a.drop_key, groups=groups)
    if set_ints or a.drop_key:
        print(f"wrote {a.out} (keys changed: no reference)")
        return
    if a.arch_name not in (None, a.arch):  # one architecture's layout under another's name: bad input, no reference
        print(f"wrote {a.out} ({a.arch}'s layout as architecture {a.arch_name}: no reference)")
        return
    if a.tokens:
        prompt = [int(t) for t in a.tokens.split(",")]
    else:
        prompt = [int(t) for t in np.random.default_rng(a.seed + 1).integers(3, a.vocab, 7)]
    reference_forward.write_reference(a.out, prompt, a.steps)


if __name__ == "__main__":
    main()
