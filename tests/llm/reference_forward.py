#!/usr/bin/env python3
"""Reference forward pass of a GGUF decoder (llama, qwen2, qwen3, gemma3) in numpy float64, following llama.cpp's
graphs (src/models/llama.cpp, qwen2.cpp, qwen3.cpp, gemma3.cpp). The weights are read back from the file with
gguf.GGUFReader and dequantized with gguf.quants.dequantize, so the reference sees exactly what is stored and shares
no code with tg.

RoPE as ggml's rope op computes it (rope() below): "normal" (llama) or NEOX (qwen2, qwen3, gemma3) pairs over the
first rope.dimension_count dims (partial RoPE: the rest pass through; of these architectures llama.cpp runs it for
gemma3 only), frequency factors (rope_freqs.weight, Llama 3.1's "llama3" scheme; llama only) dividing each pair's
angle, and the scaling keys as llama.cpp resolves them (rope_scaling_from_gguf: rope.scaling.type none / linear /
yarn, rope.scaling.factor, rope.scaling.original_context_length, rope.scaling.attn_factor). Not gemma3's scaling
(its sliding-window layers keep their own), nor longrope: refused.

usage: reference_forward.py MODEL.gguf --tokens 5,17,42 [--steps 32] [--out PREFIX]
  writes PREFIX.logits.f64: float64 (n_prompt + steps, vocab), the logits of every position of the prompt
         followed by its greedy continuation (row p predicts token p + 1);
         PREFIX.greedy.i32: int32 (steps,), the greedy continuation (argmax, appended, re-run).
  PREFIX defaults to MODEL.gguf.
       reference_forward.py MODEL.gguf --tokens ... --llama-cpp [--llama-cpp-steps N]
  instead compares this reference with llama.cpp itself (with N, also over N of llama.cpp's own greedy steps) (the llama_cpp_python package, where installed; KV cache
  in float32). F32 weights agree to ~1e-6 of max |logit| for llama, qwen2 and qwen3 (with or without RoPE
  scaling) and ~1e-3 for gemma3 (ggml's CPU GELU reads a float16 table); F16 and quantized weights to ~1e-3 and
  ~5e-2, since llama.cpp rounds the activations to float16 or 8 bits for those products.
       reference_forward.py MODEL.gguf --tokens T0,...,T39 --llama-cpp-golden OUT.json [--steps 32]
                            [--golden-name NAME] [--golden-generator "COMMAND LINE"]
  records llama.cpp's own greedy tokens (argmax, appended, one token per eval) for two prompts, [T0] alone (from
  position 0) and the whole list, into OUT.json (an entry per NAME, others kept), with the llama-cpp-python
  version, the generator's command line as given, the smallest top-2 logit gap of each run (a near tie could flip
  elsewhere) and how far this reference's logits of the same tokens are from llama.cpp's.
"""
import argparse
import os
import sys
from typing import NamedTuple

# tiny matrices: BLAS threads only contend with the build for the cores
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np
import gguf
from gguf.quants import dequantize

SUPPORTED = ("llama", "qwen2", "qwen3", "gemma3", "qwen3moe", "olmoe", "deepseek2")
NEOX = ("qwen2", "qwen3", "gemma3", "qwen3moe", "olmoe")  # llama.cpp's LLAMA_ROPE_TYPE_NEOX among them; llama is "normal"

# Products with weights in these formats take the activation rounded to 8 bits per 32 values (llama.cpp's
# quantize_row_q8_0: its vec_dot_type for them; tg's int8 products the same); float weights take it as it is.
_Q = gguf.GGMLQuantizationType
INT8_ACTIVATION_TYPES = {_Q.Q8_0, _Q.Q4_0, _Q.Q4_1, _Q.Q5_0, _Q.Q5_1, _Q.Q4_K, _Q.Q5_K, _Q.Q6_K, _Q.IQ4_NL, _Q.IQ4_XS, _Q.MXFP4}


def q8_round(x):
    """x as Q8_0 stores it, computed in float32 as quantize_row_q8_0 does: per 32 values d = max|x| / 127,
    q = roundf(x * (1 / d)) (half away from zero), value q * d."""
    xs = x.astype(np.float32).reshape(-1, 32)
    d = (np.abs(xs).max(axis=1, keepdims=True) / np.float32(127)).astype(np.float32)
    inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0).astype(np.float32)
    v = (xs * inv).astype(np.float32)
    t = np.trunc(v)
    frac = v - t  # exact in float32
    q = t + np.trunc(frac + frac)  # roundf: half away from zero (trunc(v + 0.5) differs just below halves)
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(x.shape)


def _field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        if default is None:
            raise KeyError(f"{key} missing from the GGUF")
        return default
    return f.contents()


class RopeScaling(NamedTuple):
    """The YaRN / scaling parameters of ggml_rope_ext, as llama.cpp's context passes them (cparams)."""
    freq_scale: float = 1.0     # 1 / rope.scaling.factor: every angle times this (linear), or the interpolated part (yarn)
    ext_factor: float = 0.0     # yarn's mix of extrapolation (1 for rope.scaling.type yarn, else 0)
    attn_factor: float = 1.0    # cos and sin times this (and, when ext_factor != 0, times 1 + 0.1 ln(1 / freq_scale))
    beta_fast: float = 32.0     # yarn's correction range: pairs turning more than beta_fast times in n_ctx_orig extrapolate,
    beta_slow: float = 1.0      # those turning fewer than beta_slow times interpolate, a linear ramp between
    n_ctx_orig: int = 0         # rope.scaling.original_context_length (default: context_length)


def rope_scaling_from_gguf(get, n_ctx_train, yarn_keys=False):
    """RopeScaling as llama.cpp resolves it (llama-model.cpp load_hparams, then llama_context's constructor with
    the context parameters left unset, i.e. "from the model"), or None where it changes nothing.
    get(key, default): the {arch}.KEY metadata value.
    Read for every architecture: rope.scaling.type (absent: linear; none: no scaling whatever the factor),
    rope.scaling.factor (else the old rope.scale_linear; absent or 0: 1), rope.scaling.original_context_length
    (absent: context_length) and rope.scaling.attn_factor (cos and sin times it, linear scaling included).
    yarn_keys: also rope.scaling.yarn_{ext_factor,attn_factor,beta_fast,beta_slow,log_multiplier}, which llama.cpp
    reads only in some architectures' loaders; not llama's (checked against llama.cpp 0c1e570, llama-cpp-python
    0.3.36: a llama file with them decodes as without them), nor qwen2's, qwen3's or gemma3's."""
    key = lambda name, default: get(name, default) if yarn_keys else default
    stype = str(get("rope.scaling.type", "linear"))
    if stype not in ("none", "linear", "yarn"):
        raise ValueError(f"reference_forward: rope.scaling.type {stype!r} is not modelled")
    factor = float(get("rope.scaling.factor", 0.0)) or float(get("rope.scale_linear", 0.0))
    freq_scale = 1.0 / factor if factor != 0.0 else 1.0
    if stype == "none":
        freq_scale = 1.0    # "never scale if scaling type is none"
    ext_factor = float(key("rope.scaling.yarn_ext_factor", -1.0))
    if ext_factor < 0:
        ext_factor = 1.0 if stype == "yarn" else 0.0
    attn_factor = float(key("rope.scaling.yarn_attn_factor", 1.0))
    if ext_factor != 0.0:
        # llama.cpp sets the magnitude itself (get_mscale) and cancels the 1 + 0.1 ln(factor) that ggml's rope then
        # applies, so that what multiplies cos and sin is get_mscale(factor, 1) (over get_mscale(factor, log_mul)
        # where rope.scaling.yarn_log_multiplier is read): 1 + 0.1 ln(factor) for plain yarn
        f = 1.0 / freq_scale
        mscale = lambda m: 1.0 if f <= 1.0 else 0.1 * m * float(np.log(f)) + 1.0
        log_mul = float(key("rope.scaling.yarn_log_multiplier", 0.0))
        attn_factor = (mscale(1.0) / mscale(log_mul)) if log_mul != 0.0 else mscale(1.0)
        attn_factor /= 1.0 + 0.1 * float(np.log(f))
    attn_factor *= float(get("rope.scaling.attn_factor", 1.0))
    s = RopeScaling(freq_scale=freq_scale, ext_factor=ext_factor, attn_factor=attn_factor,
                    beta_fast=float(key("rope.scaling.yarn_beta_fast", 32.0)),
                    beta_slow=float(key("rope.scaling.yarn_beta_slow", 1.0)),
                    n_ctx_orig=int(get("rope.scaling.original_context_length", n_ctx_train)))
    return None if (s.freq_scale == 1.0 and s.ext_factor == 0.0 and s.attn_factor == 1.0) else s


def load(path):
    """(cfg, weights): cfg a dict of hyper-parameters, weights name -> float64 array ([out, in] for matrices)."""
    r = gguf.GGUFReader(path)
    arch = _field(r, "general.architecture")
    if arch not in SUPPORTED:
        raise ValueError(f"reference_forward: architecture {arch!r} is not one of {SUPPORTED}")
    k = lambda name, default=None: _field(r, f"{arch}.{name}", default)
    n_heads = int(k("attention.head_count"))
    d_model = int(k("embedding_length"))
    cfg = dict(
        arch=arch,
        n_layers=int(k("block_count")),
        d_model=d_model,
        d_ff=int(k("feed_forward_length")),
        n_heads=n_heads,
        n_kv_heads=int(k("attention.head_count_kv", n_heads)),
        head_dim=int(k("attention.key_length", d_model // n_heads)),
        eps=float(k("attention.layer_norm_rms_epsilon")),
        rope_base=float(k("rope.freq_base", 10000.0)),
        # gemma3: llama.cpp hard-codes the sliding-window layers' base (rope_freq_base_train_swa = 10000)
        rope_base_local=10000.0,
        sliding_window=int(k("attention.sliding_window", 0)) if arch == "gemma3" else 0,
        n_ctx_train=int(k("context_length", 0)),
    )
    if arch in ("qwen3moe", "olmoe", "deepseek2"):  # llama.cpp's build_moe_ffn: norm_w true for qwen3moe, else the key
        cfg.update(n_expert=int(k("expert_count")), n_expert_used=int(k("expert_used_count")),
                   expert_norm=bool(k("expert_weights_norm", arch == "qwen3moe")),
                   expert_scale=float(k("expert_weights_scale", 1.0)) or 1.0,
                   expert_gating="sigmoid" if int(k("expert_gating_func", 1)) == 2 else "softmax")
    if arch == "deepseek2":  # latent attention: the cache row sizes in key/value_length, the heads' in the _mla keys
        n_rot = int(k("rope.dimension_count"))
        cfg.update(kv_lora=int(k("attention.kv_lora_rank")), q_lora=int(k("attention.q_lora_rank", 0)), rope_dims=n_rot,
                   nope=int(k("attention.key_length_mla")) - n_rot, v_dim=int(k("attention.value_length_mla")),
                   dense=int(k("leading_dense_block_count", 0)),
                   groups=int(k("expert_group_count", 1)) or 1, groups_used=int(k("expert_group_used_count", 1)))
    weights, cfg["int8_inputs"] = {}, set()
    for t in r.tensors:
        if t.tensor_type in INT8_ACTIVATION_TYPES:
            cfg["int8_inputs"].add(t.name)
        # ne[0] is contiguous, so the numpy view is [rows, cols] = [out, in]; dequantize keeps that shape
        w = dequantize(np.asarray(t.data), t.tensor_type).astype(np.float64)
        ne = [int(n) for n in t.shape]
        weights[t.name] = w.reshape(list(reversed(ne))) if len(ne) > 1 else w.reshape(-1)
    cfg["vocab"] = weights["token_embd.weight"].shape[0]
    # RoPE: None where it is the plain one (every dim, no factors, no scaling)
    n_rot = int(k("rope.dimension_count", cfg["head_dim"]))
    cfg["n_rot"] = None if n_rot == cfg["head_dim"] or arch == "deepseek2" else n_rot
    cfg["freq_factors"] = weights.pop("rope_freqs.weight", None)
    cfg["rope_scaling"] = rope_scaling_from_gguf(k, cfg["n_ctx_train"])
    if arch == "deepseek2" and cfg["rope_scaling"] is not None:
        cfg["rope_scaling"], cfg["score_mscale"] = deepseek_yarn(cfg["rope_scaling"], k)
    # what llama.cpp would do differently that this reference does not model (or refuses): refuse rather than be wrong
    if not (0 < n_rot <= cfg["head_dim"] and n_rot % 2 == 0):
        raise ValueError(f"reference_forward: rope.dimension_count {n_rot} with head_dim {cfg['head_dim']}")
    if arch != "gemma3" and cfg["n_rot"] is not None:  # llama's loader throws "invalid n_rot", qwen2's and qwen3's graphs assert
        raise ValueError(f"reference_forward: llama.cpp refuses partial RoPE (rope.dimension_count != head_dim) for {arch}")
    if cfg["freq_factors"] is not None and (arch != "llama" or cfg["freq_factors"].shape != (n_rot // 2,)):
        raise ValueError("reference_forward: rope_freqs.weight is read for llama only, n_rot / 2 values")
    if arch == "gemma3" and cfg["rope_scaling"] is not None:
        raise ValueError("reference_forward: RoPE scaling of gemma3 (its sliding-window layers' own) is not modelled")
    if arch == "gemma3" and cfg["sliding_window"] <= 0:
        raise ValueError("reference_forward: gemma3 without a sliding window (llama.cpp's soft-capped variant) is not modelled")
    return cfg, weights


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def yarn_corr_dims(n_dims, n_ctx_orig, base, beta_fast, beta_slow):
    """ggml_rope_yarn_corr_dims: the pair indices where yarn's ramp from extrapolation to interpolation starts and
    ends (the pair that turns n_rot times over n_ctx_orig positions is n_dims ln(n_ctx_orig / (2 pi n_rot)) / (2 ln base))."""
    corr = lambda n_turns: n_dims * np.log(n_ctx_orig / (n_turns * 2 * np.pi)) / (2 * np.log(base))
    return max(0.0, float(np.floor(corr(beta_fast)))), min(n_dims - 1.0, float(np.ceil(corr(beta_slow))))


def rope(x, pos, base, neox, n_rot=None, freq_factors=None, scaling=None):
    """ggml's rope (ggml_rope_ext) in float64. x: (T, heads, hd), pos: (T,) positions.
    The first n_rot dims (default all) rotate, the rest pass through. ggml "normal" mode rotates adjacent pairs
    (2i, 2i+1); NEOX rotates (i, i + n_rot/2); pair i by the angle pos * base^(-2i/n_rot) / freq_factors[i].
    scaling (RopeScaling, None: none) then takes the angle theta to freq_scale * theta (linear), or with
    ext_factor != 0 (yarn) to a mix of freq_scale * theta and theta, the share of theta 1 for pairs below yarn's
    correction range, 0 above it, linear within (times ext_factor); and multiplies cos and sin by attn_factor, for
    yarn also by 1 + 0.1 ln(1 / freq_scale) (q and k each: the scores by its square)."""
    hd = x.shape[-1]
    n = hd if n_rot is None else int(n_rot)
    i = np.arange(n // 2, dtype=np.float64)
    theta = pos[:, None] * base ** (-2.0 * i / n)          # (T, n/2)
    if freq_factors is not None:
        theta = theta / np.asarray(freq_factors, dtype=np.float64)[: n // 2]
    mscale = 1.0
    if scaling is not None:
        interp = scaling.freq_scale * theta
        mscale = scaling.attn_factor
        if scaling.ext_factor != 0.0:
            lo, hi = yarn_corr_dims(n, scaling.n_ctx_orig, base, scaling.beta_fast, scaling.beta_slow)
            ramp = (1.0 - np.clip((i - lo) / max(0.001, hi - lo), 0.0, 1.0)) * scaling.ext_factor
            theta = interp * (1.0 - ramp) + theta * ramp
            mscale *= 1.0 + 0.1 * np.log(1.0 / scaling.freq_scale)
        else:
            theta = interp
    c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    if mscale != 1.0:
        c, s = c * mscale, s * mscale
    xr = x[..., :n]
    if neox:
        x0, x1 = xr[..., : n // 2], xr[..., n // 2:]
    else:
        x0, x1 = xr[..., 0::2], xr[..., 1::2]
    y0, y1 = x0 * c - x1 * s, x0 * s + x1 * c
    out = np.empty_like(x)
    if neox:
        out[..., : n // 2], out[..., n // 2: n] = y0, y1
    else:
        out[..., 0:n:2], out[..., 1:n:2] = y0, y1
    out[..., n:] = x[..., n:]
    return out


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def is_local(cfg, il):
    # llama.cpp set_swa_pattern(6): every sixth layer (il % 6 == 5) is global, the others slide
    return cfg["arch"] == "gemma3" and cfg["sliding_window"] > 0 and il % 6 != 5


def deepseek_yarn(s, get):
    """DeepSeek's YaRN (modeling_deepseek.py: DeepseekV2YarnRotaryEmbedding and the softmax_scale of its attention),
    with the magnitude llama.cpp gives it: -> (the rope's RopeScaling, the scores' extra factor).
    yarn_get_mscale(f, m) = 1 + 0.1 m ln f (1 for f <= 1). The file holds 0.1 * mscale_all_dim as
    rope.scaling.yarn_log_multiplier (convert_hf_to_gguf.py), and mscale = mscale_all_dim: cos and sin are scaled by
    A * yarn_get_mscale(f, mscale) / yarn_get_mscale(f, mscale_all_dim) = A (A = rope.scaling.attn_factor, 1 if
    absent), the scores by (A * yarn_get_mscale(f, mscale_all_dim))^2 besides 1 / sqrt(head dims). Without the key:
    the plain yarn magnitude A * yarn_get_mscale(f, 1) on cos and sin, and its square on the scores."""
    if s.ext_factor == 0.0:
        raise ValueError("reference_forward: deepseek2 with linear RoPE scaling is not modelled")
    f = 1.0 / s.freq_scale
    m_all = float(get("rope.scaling.yarn_log_multiplier", 0.0)) / 0.1
    A = float(get("rope.scaling.attn_factor", 1.0))
    gm = lambda m: 1.0 if f <= 1.0 else 1.0 + 0.1 * m * float(np.log(f))
    magnitude = A * (gm(m_all) / gm(m_all) if m_all != 0.0 else gm(1.0))
    # rope() multiplies cos and sin by attn_factor * (1 + 0.1 ln f) for yarn
    scaling = s._replace(attn_factor=magnitude / (1.0 + 0.1 * float(np.log(f))))
    return scaling, (magnitude * (1.0 + 0.1 * m_all * float(np.log(f)))) ** 2


def top_k(p, k):
    """The k best of p, best first; equal values: the lower index first."""
    return np.lexsort((np.arange(len(p)), -p))[:k]


def moe_ffn(cfg, W, il, h, mm):
    """llama.cpp's build_moe_ffn with softmax gating: probabilities over all experts, the top k (ties: the lower
    index), their probabilities (renormalized where expert_weights_norm, the sum clamped below at 2^-14, times
    expert_weights_scale) weighting SiLU-gated experts. Experts (E, out, in) as the stacked tensors hold them."""
    logits = mm(h, f"blk.{il}.ffn_gate_inp.weight")
    if cfg.get("expert_gating") == "sigmoid":  # deepseek2: exp_probs_b (if any) only selects
        probs = 1.0 / (1.0 + np.exp(-logits))
    else:
        probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
    score = probs + W.get(f"blk.{il}.exp_probs_b.bias", 0.0)
    G = cfg.get("groups", 1)
    if G > 1:  # DeepSeek-V3's group limit: a group's score is the sum of its two best; the others' experts barred
        per = score.shape[-1] // G
        group_score = np.sort(score.reshape(-1, G, per), axis=-1)[..., -2:].sum(axis=-1)
        for t in range(score.shape[0]):
            keep = np.zeros(G, dtype=bool)
            keep[top_k(group_score[t], cfg["groups_used"])] = True
            score[t, ~np.repeat(keep, per)] = -np.inf
    names = [f"blk.{il}.ffn_{n}_exps.weight" for n in ("gate", "up", "down")]
    gate, up, down = (W[n] for n in names)
    # each expert product's input rounded as the weight format's product takes it (mm's rule)
    rnd = lambda x, name: q8_round(x) if name in cfg["int8_inputs"] else x
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        sel = top_k(score[t], cfg["n_expert_used"])
        w = probs[t, sel]
        if cfg["expert_norm"]:
            w = w / max(w.sum(), 6.103515625e-5)
        xg, xu = rnd(h[t], names[0]), rnd(h[t], names[1])
        for e, we in zip(sel, w * cfg["expert_scale"]):
            out[t] += we * (down[e] @ rnd(silu(gate[e] @ xg) * (up[e] @ xu), names[2]))
    if f"blk.{il}.ffn_gate_shexp.weight" in W and f"blk.{il}.ffn_gate_inp_shexp.weight" not in W:  # deepseek2's, ungated
        P = lambda x, n: mm(x, f"blk.{il}.{n}.weight")
        out = out + P(silu(P(h, "ffn_gate_shexp")) * P(h, "ffn_up_shexp"), "ffn_down_shexp")
    return out


def mla_attention(cfg, W, il, h, pos, mm, rope_kw):
    """llama.cpp's deepseek2 attention, absorbed form: q = attn_q h (or attn_q_b norm(attn_q_a h)) split per head
    into q_nope and q_pe; [c | k_pe] = attn_kv_a_mqa h with c RMS-normed; q_pe and k_pe (one for all heads) rotated
    on adjacent pairs; per head q_lat = k_b[h] q_nope, scores ([q_lat | q_pe] . [c | k_pe]) / sqrt(nope + rope),
    causal softmax, out = v_b[h] (p . c); attn_output of the heads. Inputs rounded as mm's rule for their weights."""
    T, H, C, N, R, V = h.shape[0], cfg["n_heads"], cfg["kv_lora"], cfg["nope"], cfg["rope_dims"], cfg["v_dim"]
    eps = cfg["eps"]
    L = lambda n: W[f"blk.{il}.{n}.weight"]
    P = lambda x, n: mm(x, f"blk.{il}.{n}.weight")
    rnd = lambda x, n: q8_round(x) if f"blk.{il}.{n}.weight" in cfg["int8_inputs"] else x
    if f"blk.{il}.attn_q_a.weight" in W:
        q = P(rmsnorm(P(h, "attn_q_a"), L("attn_q_a_norm"), eps), "attn_q_b")
    else:
        q = P(h, "attn_q")
    q = q.reshape(T, H, N + R)
    kv = P(h, "attn_kv_a_mqa")
    c = rmsnorm(kv[:, :C], L("attn_kv_a_norm"), eps)
    k_pe = rope(kv[:, None, C:], pos, cfg["rope_base"], False, **rope_kw)[:, 0, :]
    q_pe = rope(q[:, :, N:], pos, cfg["rope_base"], False, **rope_kw)
    k_b, v_b = L("attn_k_b"), L("attn_v_b")  # (H, C, N), (H, V, C)
    causal = np.arange(T)[None, :] <= np.arange(T)[:, None]
    out = np.empty((T, H, V))
    for hh in range(H):
        q_lat = np.stack([k_b[hh] @ rnd(q[t, hh, :N], "attn_k_b") for t in range(T)])  # (T, C)
        s = (q_lat @ c.T + q_pe[:, hh, :] @ k_pe.T) * cfg.get("score_mscale", 1.0) / np.sqrt(N + R)
        s = np.where(causal, s, -np.inf)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        lat = (s / s.sum(axis=-1, keepdims=True)) @ c  # (T, C)
        out[:, hh, :] = np.stack([v_b[hh] @ rnd(lat[t], "attn_v_b") for t in range(T)])
    return P(out.reshape(T, H * V), "attn_output")


def forward(cfg, W, tokens):
    """Logits (T, vocab) of every position of `tokens` (positions 0..T-1)."""
    arch, eps = cfg["arch"], cfg["eps"]

    def mm(x, name):  # x @ W[name].T, the activation rounded as the weight format's product takes it
        return (q8_round(x) if name in cfg["int8_inputs"] else x) @ W[name].T

    H, KV, hd = cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"]
    T = len(tokens)
    pos = np.arange(T, dtype=np.float64)
    neox = arch in NEOX
    rope_kw = dict(n_rot=cfg.get("n_rot"), freq_factors=cfg.get("freq_factors"), scaling=cfg.get("rope_scaling"))
    x = W["token_embd.weight"][np.asarray(tokens)]
    if arch == "gemma3":
        x = x * np.sqrt(cfg["d_model"])
    p, j = np.arange(T)[:, None], np.arange(T)[None, :]
    causal = j <= p
    for il in range(cfg["n_layers"]):
        L = lambda n: W[f"blk.{il}.{n}.weight"]
        P = lambda x, n: mm(x, f"blk.{il}.{n}.weight")
        h = rmsnorm(x, L("attn_norm"), eps)
        if arch == "deepseek2":
            x = x + mla_attention(cfg, W, il, h, pos, mm, rope_kw)
            h = rmsnorm(x, L("ffn_norm"), eps)
            if f"blk.{il}.ffn_gate_inp.weight" in W:
                x = x + moe_ffn(cfg, W, il, h, mm)
            else:
                x = x + P(silu(P(h, "ffn_gate")) * P(h, "ffn_up"), "ffn_down")
            continue
        # biases where the file has them (qwen2's q, k and v; llama.cpp adds them for llama too)
        Pb = lambda x, n: P(x, n) + W[f"blk.{il}.{n}.bias"] if f"blk.{il}.{n}.bias" in W else P(x, n)
        q, k = Pb(h, "attn_q"), Pb(h, "attn_k")
        if arch == "olmoe":  # over the whole projection, before the split into heads
            q, k = rmsnorm(q, L("attn_q_norm"), eps), rmsnorm(k, L("attn_k_norm"), eps)
        q, k = q.reshape(T, H, hd), k.reshape(T, KV, hd)
        v = Pb(h, "attn_v").reshape(T, KV, hd)
        if arch in ("qwen3", "gemma3", "qwen3moe"):
            q = rmsnorm(q, L("attn_q_norm"), eps)   # per head, over head_dim, before RoPE
            k = rmsnorm(k, L("attn_k_norm"), eps)
        local = is_local(cfg, il)
        base = cfg["rope_base_local"] if local else cfg["rope_base"]
        q, k = rope(q, pos, base, neox, **rope_kw), rope(k, pos, base, neox, **rope_kw)
        mask = causal & ((p - j) < cfg["sliding_window"]) if local else causal
        att = np.empty((T, H, hd))
        for hh in range(H):
            kh = hh // (H // KV)                      # GQA: consecutive q heads share a kv head
            s = q[:, hh, :] @ k[:, kh, :].T / np.sqrt(hd)
            s = np.where(mask, s, -np.inf)
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            att[:, hh, :] = (s / s.sum(axis=-1, keepdims=True)) @ v[:, kh, :]
        a = P(att.reshape(T, H * hd), "attn_output")
        if arch == "gemma3":
            x = x + rmsnorm(a, L("post_attention_norm"), eps)
        else:
            x = x + a
        h = rmsnorm(x, L("ffn_norm"), eps)
        if f"blk.{il}.ffn_gate_inp.weight" in W:
            f = moe_ffn(cfg, W, il, h, mm)
        else:
            g, u = P(h, "ffn_gate"), P(h, "ffn_up")
            f = P((gelu_tanh(g) if arch == "gemma3" else silu(g)) * u, "ffn_down")
        if arch == "gemma3":
            x = x + rmsnorm(f, L("post_ffw_norm"), eps)
        else:
            x = x + f
    x = rmsnorm(x, W["output_norm.weight"], eps)
    return mm(x, "output.weight" if "output.weight" in W else "token_embd.weight")   # tied when output.weight is absent


def greedy(cfg, W, prompt, steps, forward=forward):
    """(tokens, logits): `steps` argmax tokens, each appended and the sequence re-run; logits
    (len(prompt) + steps, vocab), row p from the pass whose last position was p. `forward`: another
    architecture's (reference_hybrid.py)."""
    seq = list(prompt)
    first = forward(cfg, W, seq)
    rows = list(first)
    out = []
    for _ in range(steps):
        t = int(np.argmax(rows[-1]))
        out.append(t)
        seq.append(t)
        rows.append(forward(cfg, W, seq)[-1])
    return out, np.stack(rows)


def write_reference(path, prompt, steps, prefix=None, load=load, forward=forward):
    prefix = prefix or path
    cfg, W = load(path)
    toks, logits = greedy(cfg, W, prompt, steps, forward)
    logits.astype("<f8").tofile(prefix + ".logits.f64")
    np.asarray(toks, dtype="<i4").tofile(prefix + ".greedy.i32")
    # the smallest margin between the best and second-best logit: a near tie could flip under float32
    top2 = np.sort(logits[len(prompt) - 1: len(prompt) - 1 + steps], axis=-1)[:, -2:]
    gap = float((top2[:, 1] - top2[:, 0]).min()) if steps else float("nan")
    print(f"reference {cfg['arch']}: {len(prompt)} prompt tokens, greedy {toks}, max|logit| "
          f"{np.abs(logits).max():.4g}, smallest top-2 gap {gap:.3g}")
    return toks, logits


def _llama_cpp_model(path, n_ctx):
    """llama.cpp over the file: every position's logits kept, KV cache in float32, one thread, and the RoPE / YaRN
    context parameters left to the model (-1, 0: "from the model"; llama-cpp-python's own defaults would pin
    yarn_attn_factor, yarn_beta_fast and yarn_beta_slow to 1, 32 and 1, overriding the file's keys)."""
    import llama_cpp  # optional: only the llama.cpp modes need it
    n_ctx = max(64, n_ctx)
    return llama_cpp.Llama(path, logits_all=True, verbose=False, n_ctx=n_ctx, n_batch=n_ctx, n_threads=1,
                           type_k=0, type_v=0,  # 0: GGML_TYPE_F32
                           yarn_ext_factor=-1.0, yarn_attn_factor=-1.0, yarn_beta_fast=-1.0, yarn_beta_slow=-1.0)


def llama_cpp_greedy(path, prompt, steps):
    """(tokens, logits): llama.cpp's own greedy continuation, the prompt at once then one token an eval; logits
    (len(prompt) + steps - 1, vocab), row p llama.cpp's prediction after position p (the last token is not fed)."""
    m = _llama_cpp_model(path, len(prompt) + steps)
    m.eval(prompt)
    toks = []
    for s in range(steps):
        toks.append(int(np.argmax(m.scores[m.n_tokens - 1])))
        if s + 1 < steps:
            m.eval([toks[-1]])
    return toks, np.asarray(m.scores[:m.n_tokens], dtype=np.float64)


def _relative_rows(got, ref):
    return np.abs(got - ref).max(axis=-1) / np.abs(ref).max(axis=-1)


def check_llama_cpp(path, prompt, steps=0):
    """Prints max |llama.cpp - reference| / max |reference| per prompt position; with steps, also over llama.cpp's
    greedy continuation (its own tokens fed back), and whether the reference's argmax picks the same tokens."""
    cfg, W = load(path)
    ref = forward(cfg, W, prompt)
    m = _llama_cpp_model(path, len(prompt))
    m.eval(prompt)
    got = np.asarray(m.scores[:len(prompt)], dtype=np.float64)
    err = _relative_rows(got, ref)
    print(f"llama.cpp vs reference ({cfg['arch']}): max |difference| / max |logit| per position "
          f"{np.array2string(err, precision=2)}; worst {err.max():.3g}")
    if steps > 0:
        toks, got = llama_cpp_greedy(path, prompt, steps)
        ref = forward(cfg, W, list(prompt) + toks[:-1])
        err = _relative_rows(got, ref)
        mine = [int(t) for t in np.argmax(ref[len(prompt) - 1:], axis=-1)]
        print(f"  greedy {steps} steps: llama.cpp {toks}; reference argmax agrees at {sum(a == b for a, b in zip(mine, toks))}"
              f"/{steps}; worst relative difference {err.max():.3g} (position {int(err.argmax())})")
    return err.max()


def _top2_gap(logits):
    top2 = np.sort(logits, axis=-1)[:, -2:]
    return float((top2[:, 1] - top2[:, 0]).min())


def _llama_cpp_build_commit(llama_cpp):
    """The llama.cpp commit llama-cpp-python was built from, where its wheel left lib/cmake/llama (else None)."""
    import re
    cfg = os.path.join(os.path.dirname(os.path.dirname(llama_cpp.__file__)), "lib", "cmake", "llama", "llama-config.cmake")
    try:
        with open(cfg) as f:
            m = re.search(r"set\(LLAMA_BUILD_COMMIT\s+(\w+)\)", f.read())
        return m.group(1) if m else None
    except OSError:
        return None


def golden_llama_cpp(path, prompt, steps, out, name=None, generator=None):
    """Adds (or replaces) the entry `name` of the JSON file `out`: llama.cpp's greedy tokens for [prompt[0]] and
    for the whole prompt, each with the reference's agreement."""
    import json
    import re
    import llama_cpp
    cfg, W = load(path)
    name = name or os.path.basename(path)
    runs = []
    for p in ([prompt[0]], list(prompt)):
        toks, got = llama_cpp_greedy(path, p, steps)
        ref = forward(cfg, W, p + toks[:-1])
        mine = [int(t) for t in np.argmax(ref[len(p) - 1:], axis=-1)]
        runs.append(dict(prompt=[int(t) for t in p], greedy=toks,
                         min_top2_gap=round(_top2_gap(got[len(p) - 1:]), 6),
                         max_abs_logit=round(float(np.abs(got).max()), 6),
                         reference_max_rel_diff=float(f"{_relative_rows(got, ref).max():.3g}"),
                         reference_argmax_agrees=sum(a == b for a, b in zip(mine, toks))))
        print(f"golden {name}: prompt of {len(p)}: llama.cpp greedy {toks}; smallest top-2 gap {runs[-1]['min_top2_gap']:.3g}; "
              f"reference within {runs[-1]['reference_max_rel_diff']:.3g} of max |logit|, argmax agrees "
              f"{runs[-1]['reference_argmax_agrees']}/{steps}")
    r = gguf.GGUFReader(path)
    types = sorted({gguf.GGMLQuantizationType(t.tensor_type).name for t in r.tensors if len(t.shape) > 1})
    rope = dict(type="neox" if cfg["arch"] in NEOX else "normal", base=cfg["rope_base"], n_rot=cfg["n_rot"] or cfg["head_dim"],
                freq_factors=None if cfg["freq_factors"] is None else [float(f) for f in cfg["freq_factors"]],
                scaling=None if cfg["rope_scaling"] is None else cfg["rope_scaling"]._asdict())
    import hashlib
    import importlib.metadata
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    entry = dict(name=name, file=os.path.basename(path), generator=generator, gguf_sha256=sha,
                 gguf_py=importlib.metadata.version("gguf"), arch=cfg["arch"], matrix_types=types, rope=rope,
                 llama_cpp_python=llama_cpp.__version__, llama_cpp_commit=_llama_cpp_build_commit(llama_cpp),
                 kv_cache="f32", steps=steps, runs=runs)
    doc = dict(about="llama.cpp's own greedy tokens (llama-cpp-python, KV cache float32, 1 thread, argmax appended and "
                     "evaluated one at a time; from position 0) for synthetic GGUFs written by tests/llm/gen_synthetic_model.py "
                     "with the command line of each entry (run from the repository root); written by "
                     "tests/llm/reference_forward.py --llama-cpp-golden", models=[])
    if os.path.exists(out):
        with open(out) as f:
            doc = json.load(f)
    doc["models"] = [e for e in doc["models"] if e["name"] != name] + [entry]
    text = json.dumps(doc, indent=1)
    # lists of numbers on one line each
    text = re.sub(r"\[\s*([-+0-9.eE,\s]+?)\s*\]", lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",")) + "]", text)
    with open(out, "w") as f:
        f.write(text + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True, help="comma-separated prompt token ids")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--out", default=None)
    ap.add_argument("--llama-cpp", action="store_true", help="compare with llama.cpp instead of writing files")
    ap.add_argument("--llama-cpp-steps", type=int, default=0, help="with --llama-cpp: also compare this many greedy steps")
    ap.add_argument("--llama-cpp-golden", metavar="OUT.json", default=None,
                    help="record llama.cpp's greedy tokens (--steps of them) into OUT.json instead of writing files")
    ap.add_argument("--golden-name", default=None, help="the entry's name in OUT.json (default: the file's name)")
    ap.add_argument("--golden-generator", default=None, help="the generator command line that wrote MODEL, as recorded")
    a = ap.parse_args()
    tokens = [int(t) for t in a.tokens.split(",")]
    if a.llama_cpp_golden:
        return golden_llama_cpp(a.model, tokens, a.steps, a.llama_cpp_golden, a.golden_name, a.golden_generator)
    if a.llama_cpp:
        check_llama_cpp(a.model, tokens, a.llama_cpp_steps)
        return
    write_reference(a.model, tokens, a.steps, a.out)


if __name__ == "__main__":
    sys.exit(main())
