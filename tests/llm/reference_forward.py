#!/usr/bin/env python3
"""Reference forward pass of a GGUF decoder (llama, qwen3, gemma3) in numpy float64, following llama.cpp's graphs
(src/models/llama.cpp, qwen3.cpp, gemma3.cpp). The weights are read back from the file with gguf.GGUFReader and
dequantized with gguf.quants.dequantize, so the reference sees exactly what is stored and shares no code with tg.

usage: reference_forward.py MODEL.gguf --tokens 5,17,42 [--steps 32] [--out PREFIX]
  writes PREFIX.logits.f64: float64 (n_prompt + steps, vocab), the logits of every position of the prompt
         followed by its greedy continuation (row p predicts token p + 1);
         PREFIX.greedy.i32: int32 (steps,), the greedy continuation (argmax, appended, re-run).
  PREFIX defaults to MODEL.gguf.
       reference_forward.py MODEL.gguf --tokens ... --llama-cpp
  instead compares this reference with llama.cpp itself (the llama_cpp_python package, where installed; KV cache
  in float32). F32 weights agree to ~1e-6 of max |logit| for llama and qwen3 and ~1e-3 for gemma3 (ggml's CPU
  GELU reads a float16 table); F16 and quantized weights to ~1e-3 and ~5e-2, since llama.cpp rounds the
  activations to float16 or 8 bits for those products.
"""
import argparse
import os
import sys

# tiny matrices: BLAS threads only contend with the build for the cores
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np
import gguf
from gguf.quants import dequantize

SUPPORTED = ("llama", "qwen3", "gemma3")

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
    )
    weights, cfg["int8_inputs"] = {}, set()
    for t in r.tensors:
        if t.tensor_type in INT8_ACTIVATION_TYPES:
            cfg["int8_inputs"].add(t.name)
        # ne[0] is contiguous, so the numpy view is [rows, cols] = [out, in]; dequantize keeps that shape
        w = dequantize(np.asarray(t.data), t.tensor_type).astype(np.float64)
        ne = [int(n) for n in t.shape]
        weights[t.name] = w.reshape(list(reversed(ne))) if len(ne) > 1 else w.reshape(-1)
    cfg["vocab"] = weights["token_embd.weight"].shape[0]
    # what llama.cpp would do differently that this reference does not model: refuse rather than be wrong
    if float(k("rope.scaling.factor", 1.0)) != 1.0 or "rope_freqs.weight" in weights:
        raise ValueError("reference_forward: RoPE scaling is not modelled")
    if int(k("rope.dimension_count", cfg["head_dim"])) != cfg["head_dim"]:
        raise ValueError("reference_forward: partial RoPE (rope.dimension_count < head_dim) is not modelled")
    if arch == "gemma3" and cfg["sliding_window"] <= 0:
        raise ValueError("reference_forward: gemma3 without a sliding window (llama.cpp's soft-capped variant) is not modelled")
    return cfg, weights


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, base, neox):
    """x: (T, heads, hd). ggml "normal" mode rotates adjacent pairs (2i, 2i+1); NEOX rotates (i, i + hd/2);
    both with angle pos * base^(-2i/hd)."""
    hd = x.shape[-1]
    i = np.arange(hd // 2, dtype=np.float64)
    theta = pos[:, None] * base ** (-2.0 * i / hd)          # (T, hd/2)
    c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    if neox:
        x0, x1 = x[..., : hd // 2], x[..., hd // 2:]
    else:
        x0, x1 = x[..., 0::2], x[..., 1::2]
    y0, y1 = x0 * c - x1 * s, x0 * s + x1 * c
    out = np.empty_like(x)
    if neox:
        out[..., : hd // 2], out[..., hd // 2:] = y0, y1
    else:
        out[..., 0::2], out[..., 1::2] = y0, y1
    return out


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def is_local(cfg, il):
    # llama.cpp set_swa_pattern(6): every sixth layer (il % 6 == 5) is global, the others slide
    return cfg["arch"] == "gemma3" and cfg["sliding_window"] > 0 and il % 6 != 5


def forward(cfg, W, tokens):
    """Logits (T, vocab) of every position of `tokens` (positions 0..T-1)."""
    arch, eps = cfg["arch"], cfg["eps"]

    def mm(x, name):  # x @ W[name].T, the activation rounded as the weight format's product takes it
        return (q8_round(x) if name in cfg["int8_inputs"] else x) @ W[name].T

    H, KV, hd = cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"]
    T = len(tokens)
    pos = np.arange(T, dtype=np.float64)
    neox = arch in ("qwen3", "gemma3")
    x = W["token_embd.weight"][np.asarray(tokens)]
    if arch == "gemma3":
        x = x * np.sqrt(cfg["d_model"])
    p, j = np.arange(T)[:, None], np.arange(T)[None, :]
    causal = j <= p
    for il in range(cfg["n_layers"]):
        L = lambda n: W[f"blk.{il}.{n}.weight"]
        P = lambda x, n: mm(x, f"blk.{il}.{n}.weight")
        h = rmsnorm(x, L("attn_norm"), eps)
        q = P(h, "attn_q").reshape(T, H, hd)
        k = P(h, "attn_k").reshape(T, KV, hd)
        v = P(h, "attn_v").reshape(T, KV, hd)
        if arch in ("qwen3", "gemma3"):
            q = rmsnorm(q, L("attn_q_norm"), eps)   # per head, over head_dim, before RoPE
            k = rmsnorm(k, L("attn_k_norm"), eps)
        local = is_local(cfg, il)
        base = cfg["rope_base_local"] if local else cfg["rope_base"]
        q, k = rope(q, pos, base, neox), rope(k, pos, base, neox)
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
        g, u = P(h, "ffn_gate"), P(h, "ffn_up")
        f = P((gelu_tanh(g) if arch == "gemma3" else silu(g)) * u, "ffn_down")
        if arch == "gemma3":
            x = x + rmsnorm(f, L("post_ffw_norm"), eps)
        else:
            x = x + f
    x = rmsnorm(x, W["output_norm.weight"], eps)
    return mm(x, "output.weight" if "output.weight" in W else "token_embd.weight")   # tied when output.weight is absent


def greedy(cfg, W, prompt, steps):
    """(tokens, logits): `steps` argmax tokens, each appended and the sequence re-run; logits
    (len(prompt) + steps, vocab), row p from the pass whose last position was p."""
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


def write_reference(path, prompt, steps, prefix=None):
    prefix = prefix or path
    cfg, W = load(path)
    toks, logits = greedy(cfg, W, prompt, steps)
    logits.astype("<f8").tofile(prefix + ".logits.f64")
    np.asarray(toks, dtype="<i4").tofile(prefix + ".greedy.i32")
    # the smallest margin between the best and second-best logit: a near tie could flip under float32
    top2 = np.sort(logits[len(prompt) - 1: len(prompt) - 1 + steps], axis=-1)[:, -2:]
    gap = float((top2[:, 1] - top2[:, 0]).min()) if steps else float("nan")
    print(f"reference {cfg['arch']}: {len(prompt)} prompt tokens, greedy {toks}, max|logit| "
          f"{np.abs(logits).max():.4g}, smallest top-2 gap {gap:.3g}")
    return toks, logits


def check_llama_cpp(path, prompt):
    import llama_cpp  # optional: only this check needs it
    cfg, W = load(path)
    ref = forward(cfg, W, prompt)
    m = llama_cpp.Llama(path, logits_all=True, verbose=False, n_ctx=max(64, len(prompt)), n_batch=max(64, len(prompt)),
                        n_threads=1, type_k=0, type_v=0)  # 0: GGML_TYPE_F32
    m.eval(prompt)
    got = np.asarray(m.scores[:len(prompt)], dtype=np.float64)
    err = np.abs(got - ref).max(axis=-1) / np.abs(ref).max(axis=-1)
    print(f"llama.cpp vs reference ({cfg['arch']}): max |difference| / max |logit| per position "
          f"{np.array2string(err, precision=2)}; worst {err.max():.3g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True, help="comma-separated prompt token ids")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--out", default=None)
    ap.add_argument("--llama-cpp", action="store_true", help="compare with llama.cpp instead of writing files")
    a = ap.parse_args()
    if a.llama_cpp:
        return check_llama_cpp(a.model, [int(t) for t in a.tokens.split(",")])
    write_reference(a.model, [int(t) for t in a.tokens.split(",")], a.steps, a.out)


if __name__ == "__main__":
    sys.exit(main())
