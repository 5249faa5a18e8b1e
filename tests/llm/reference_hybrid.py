#!/usr/bin/env python3
"""Reference forward pass of the Qwen3.5 / Qwen3.6 dense hybrid decoder (GGUF architecture `qwen35`) in numpy
float64, written from the math and checked against llama.cpp (llama_cpp_python), sharing no code with tg. The MoE
hybrid (`qwen35moe`) too: its FFNs are reference_forward.moe_ffn's experts plus a shared expert scaled per token by
sigmoid(ffn_gate_inp_shexp . g), as llama.cpp's src/models/qwen35moe.cpp.

usage: reference_hybrid.py MODEL.gguf --tokens 5,17,42 [--steps 32] [--out PREFIX]
  writes PREFIX.logits.f64 and PREFIX.greedy.i32 in reference_forward.py's formats (float64 (n_prompt + steps,
  vocab): the logits of every prompt position, then of each greedy step; int32 (steps,): the greedy tokens).
       reference_hybrid.py MODEL.gguf --tokens ... --llama-cpp
  compares this reference with llama.cpp instead.

============================================ the qwen35 layer, as stored in GGUF ===============================
Shapes are GGUF's, ne0 first: a matrix [ne0 = in, ne1 = out] is applied as y = W x (numpy view: W[out, in]).
Keys are prefixed "qwen35." (general.architecture).

Metadata
  block_count                  n_blk   (includes nextn_predict_layers MTP blocks appended at the end)
  nextn_predict_layers         n_mtp   (optional, default 0) the main stack is n_layer = n_blk - n_mtp; the MTP
                                       blocks blk.{n_layer..} are NOT run for ordinary logits: skip them
  embedding_length             d
  feed_forward_length          n_ff
  attention.head_count         H       (full-attention query heads)
  attention.head_count_kv      KV
  attention.key_length         hd      (= attention.value_length; llama.cpp asserts they are equal)
  attention.layer_norm_rms_epsilon  eps (every RMSNorm AND the L2 norms of the delta net)
  attention.scale              optional; absent or 0 -> 1/sqrt(hd)
  rope.freq_base               base    (Qwen3.5: 1e7)
  rope.dimension_count         n_rot   (partial rotary: Qwen3.5 has hd 256, n_rot 64)
  rope.dimension_sections      int32[4] (Qwen3.5: [11, 11, 10, 0]); REQUIRED by llama.cpp's loader
  ssm.conv_kernel              K       (4)
  ssm.state_size               dk      (key head dim = value head dim of the delta net, 128)
  ssm.group_count              nk      (key heads of the delta net, 16)
  ssm.time_step_rank           nv      (value heads of the delta net, 32 or 48; nv % nk == 0)
  ssm.inner_size               d_inner = nv * dk (value width)
  full_attention_interval      I       (default 4). Layer il is FULL ATTENTION iff (il + 1) % I == 0, i.e. layers
                                       I-1, 2I-1, ...; every other layer is a gated delta net ("linear") layer.
  attention.recurrent_layers   optional bool[n_blk]: when present it overrides the interval rule
                                       (true = delta-net layer).

Tensors common to every layer
  token_embd.weight            [d, vocab]
  output_norm.weight           [d]
  output.weight                [d, vocab]   optional: absent = tied to token_embd.weight
  blk.N.attn_norm.weight       [d]          RMSNorm before the mixer
  blk.N.post_attention_norm.weight [d]      RMSNorm before the FFN (there is no ffn_norm)
  blk.N.ffn_gate.weight        [d, n_ff]
  blk.N.ffn_up.weight          [d, n_ff]
  blk.N.ffn_down.weight        [n_ff, d]
Full-attention layers ((N + 1) % I == 0)
  blk.N.attn_q.weight          [d, 2*H*hd]  per head h, rows [2h*hd, 2h*hd + hd) are the query and
                                            rows [2h*hd + hd, 2h*hd + 2hd) its output gate (interleaved per head,
                                            NOT all queries then all gates)
  blk.N.attn_k.weight          [d, KV*hd]
  blk.N.attn_v.weight          [d, KV*hd]
  blk.N.attn_q_norm.weight     [hd]
  blk.N.attn_k_norm.weight     [hd]
  blk.N.attn_output.weight     [H*hd, d]
Gated delta net layers (the others); key_dim = nk*dk, value_dim = nv*dk = d_inner, conv_dim = 2*key_dim + value_dim
  blk.N.attn_qkv.weight        [d, conv_dim]  output channels: [0, key_dim) q (head g = channels [g*dk, (g+1)*dk)),
                                            [key_dim, 2*key_dim) k (same head layout), [2*key_dim, conv_dim) v
                                            (value head j = channels 2*key_dim + [j*dk, (j+1)*dk))
  blk.N.attn_gate.weight       [d, value_dim]  z (output gate), value head j = channels [j*dk, (j+1)*dk)
  blk.N.ssm_conv1d.weight      [K, conv_dim]   (numpy [conv_dim, K]); tap K-1 multiplies the current token.
                                            Stored F32 (ggml_ssm_conv needs F32)
  blk.N.ssm_dt.bias            [nv]         dt_bias  (note the ".bias" suffix)
  blk.N.ssm_a                  [nv]         NO suffix; holds A = -exp(A_log) (negative), not A_log
  blk.N.ssm_alpha.weight       [d, nv]      decay projection ("a")
  blk.N.ssm_beta.weight        [d, nv]      write-strength projection ("b")
  blk.N.ssm_norm.weight        [dk]         one RMSNorm weight shared by all value heads
  blk.N.ssm_out.weight         [value_dim, d]
Value heads are TILED over key heads: value head j reads q/k head (j mod nk). (HF groups them, j // (nv/nk);
llama.cpp's converter permutes the value-head order of attn_qkv's v part, attn_gate, ssm_alpha, ssm_beta, ssm_a,
ssm_dt, the v channels of ssm_conv1d and the input columns of ssm_out so that a plain repeat works.)
Norm weights are used as stored: the converter already added Qwen3.5's "+1" to attn_norm, post_attention_norm,
output_norm, attn_q_norm, attn_k_norm; ssm_norm never had the offset. RMSNorm(x, w) = x / sqrt(mean(x^2) + eps) * w.

Forward, token positions p = 0..T-1, x = token_embd[tokens] (no scaling)
  per layer N < n_layer:
    h = RMSNorm(x, attn_norm)
    full attention:
      qg = attn_q h -> (H, 2, hd);  q = qg[:, 0], gate = qg[:, 1]            (T, H, hd) each
      q = RMSNorm_per_head(q, attn_q_norm); k = RMSNorm_per_head(attn_k h, attn_k_norm); v = attn_v h
      RoPE on q and k, only the first n_rot dims of each head, NEOX pairing (i, i + n_rot/2) for i < n_rot/2,
        angle p_i * base^(-2i/n_rot); dims n_rot..hd pass through. llama.cpp runs it as interleaved M-RoPE
        (IMROPE) whose text positions are (p, p, p, 0): pair i is in sector s = i mod sum(sections); it uses
        position 0 (no rotation) only when it falls in none of the first three sections (s%3==0 and s<3*sec0, or
        s%3==1 and s<3*sec1, or s%3==2 and s<3*sec2, use p). With Qwen3.5's [11, 11, 10, 0] every pair uses p.
      causal softmax attention, scale 1/sqrt(hd) (or attention.scale), query head h reads kv head h // (H/KV)
      a = attn_output( concat_heads(attn) * sigmoid(gate) )
    gated delta net (state per sequence: conv state (K-1, conv_dim), S (nv, dk, dk), both zero at position 0):
      c = attn_qkv h                              (T, conv_dim)
      c = SiLU(causal depthwise conv over time: y[t, ch] = sum_j xp[t + j, ch] * w[ch, j], xp = [state; c])
      q, k, v = split(c) as above;  q_g = l2norm(q_g), k_g = l2norm(k_g)  with l2norm(x) = x / max(||x||_2, eps)
      q_g *= 1/sqrt(dk)
      z = attn_gate h                             (T, nv, dk)
      beta = sigmoid(ssm_beta h)                  (T, nv)
      alpha = exp(ssm_a * softplus(ssm_alpha h + ssm_dt))   (T, nv), in (0, 1); softplus(x) = log(1 + e^x)
                                                  (ggml returns x for x > 20)
      per value head j (g = j mod nk), per token in order, with S_j a (dv x dk) matrix (rows index v, cols k):
        S   = alpha * S                           (decay first)
        delta = beta * (v_j - S k_g)              (vector over v)
        S   = S + delta k_g^T
        o_j = S q_g                               (read out AFTER the update; equals alpha S_old q + delta (k.q))
      y = RMSNorm_per_head(o, ssm_norm) * SiLU(z);  a = ssm_out(y flattened (T, value_dim))
      (no positions and no KV cache here: decoding carries the conv state (the last K-1 rows of attn_qkv h, before
      the conv) and S from token to token; only the full-attention layers keep a KV cache)
    x = x + a
    x = x + ffn_down( SiLU(ffn_gate g) * ffn_up g ),  g = RMSNorm(x, post_attention_norm)
  logits = output( RMSNorm(x, output_norm) )      (output = token_embd when tied)
================================================================================================================

Agreement with llama.cpp (llama_cpp_python 0.3.36, CPU, 1 thread, F32 KV cache) on gen_synthetic_hybrid.py's
models, max |difference| / max |logit|, prompts of 7 and 100 tokens: F32 1e-6..2e-6 (both llama.cpp paths: the
chunked multi-token delta net and the one-token recurrent step); F16 1e-3..3e-3 (llama.cpp rounds those products'
activations to float16, not modelled); Q8_0 and Q4_0 4e-2..7e-2; Q4_K 0.1..0.2. Quantized products take the
activation rounded to 8 bits, modelled here as Q8_0 per 32 (reference_forward.q8_round: what llama.cpp does for
32-blocks, but K-quants round to Q8_K per 256). The quantized gap is not a modelling error: the first rounding
flips caused by float32-vs-float64 differences change later layers' inputs enough to flip more, and perturbing
this reference's own activations by 1e-6 before rounding moves its logits by ~4e-2 too. Greedy tokens therefore
agree with llama.cpp for F32 only; quantized continuations diverge within a few steps.
"""
import argparse
import os
import sys

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np
import gguf
from gguf.quants import dequantize

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_forward  # noqa: E402
from reference_forward import q8_round, INT8_ACTIVATION_TYPES  # noqa: E402

ARCH = "qwen35"


# ---------------------------------------------------------------- loading

def _field(reader, key, default=None, required=True):
    f = reader.fields.get(key)
    if f is None:
        if default is None and required:
            raise KeyError(f"{key} missing from the GGUF")
        return default
    return f.contents()


def load_qwen35(path):
    """(cfg, weights): cfg a dict of hyper-parameters, weights name -> float64 array ([out, in] for matrices)."""
    r = gguf.GGUFReader(path)
    arch = _field(r, "general.architecture")
    if arch not in (ARCH, ARCH + "moe"):
        raise ValueError(f"reference_hybrid: architecture {arch!r} is not {ARCH!r} or {ARCH + 'moe'!r}")
    k = lambda name, default=None, required=True: _field(r, f"{arch}.{name}", default, required)
    n_blk = int(k("block_count"))
    n_mtp = int(k("nextn_predict_layers", 0))
    H = int(k("attention.head_count"))
    hd = int(k("attention.key_length"))
    if int(k("attention.value_length", hd)) != hd:
        raise ValueError("reference_hybrid: key_length != value_length")
    sections = [int(s) for s in k("rope.dimension_sections")]
    sections = (sections + [0, 0, 0, 0])[:4]
    cfg = dict(
        arch=arch,
        n_layers=n_blk - n_mtp,
        d_model=int(k("embedding_length")),
        d_ff=int(k("feed_forward_length")),
        n_heads=H,
        n_kv_heads=int(k("attention.head_count_kv", H)),
        head_dim=hd,
        eps=float(k("attention.layer_norm_rms_epsilon")),
        attn_scale=float(k("attention.scale", 0.0)) or 1.0 / np.sqrt(hd),
        rope_base=float(k("rope.freq_base", 10000.0)),
        n_rot=int(k("rope.dimension_count", hd)),
        sections=sections,
        conv_kernel=int(k("ssm.conv_kernel")),
        d_state=int(k("ssm.state_size")),
        n_k_heads=int(k("ssm.group_count")),
        n_v_heads=int(k("ssm.time_step_rank")),
        d_inner=int(k("ssm.inner_size")),
    )
    if arch == ARCH + "moe":  # llama.cpp's qwen35moe: build_moe_ffn with norm_w, plus the gated shared expert
        cfg.update(n_expert=int(k("expert_count")), n_expert_used=int(k("expert_used_count")),
                   expert_norm=bool(k("expert_weights_norm", True, required=False)),
                   expert_scale=float(k("expert_weights_scale", 1.0, required=False)) or 1.0)
    rec = k("attention.recurrent_layers", None, required=False)
    if rec is not None:
        recurrent = [bool(v) for v in rec][: cfg["n_layers"]]
    else:
        interval = int(k("full_attention_interval", 4))
        recurrent = [(il + 1) % interval != 0 for il in range(cfg["n_layers"])]
    cfg["recurrent"] = recurrent
    if cfg["d_inner"] != cfg["n_v_heads"] * cfg["d_state"] or cfg["n_v_heads"] % cfg["n_k_heads"]:
        raise ValueError("reference_hybrid: ssm.inner_size must be time_step_rank * state_size, "
                         "time_step_rank a multiple of group_count")
    if float(k("rope.scaling.factor", 1.0)) != 1.0:
        raise ValueError("reference_hybrid: RoPE scaling is not modelled")
    weights, cfg["int8_inputs"] = {}, set()
    for t in r.tensors:
        blk = t.name.split(".")
        if blk[0] == "blk" and int(blk[1]) >= cfg["n_layers"]:
            continue   # MTP (nextn) blocks: not part of the main forward
        if t.tensor_type in INT8_ACTIVATION_TYPES:
            cfg["int8_inputs"].add(t.name)
        w = dequantize(np.asarray(t.data), t.tensor_type).astype(np.float64)
        ne = [int(n) for n in t.shape]
        weights[t.name] = w.reshape(list(reversed(ne))) if len(ne) > 1 else w.reshape(-1)
    cfg["vocab"] = weights["token_embd.weight"].shape[0]
    return cfg, weights


# ---------------------------------------------------------------- building blocks

def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def l2norm(x, eps):
    """x / max(||x||, eps) over the last axis (ggml_l2_norm)."""
    n = np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
    return x / np.maximum(n, eps)


def silu(x):
    return x / (1.0 + np.exp(-x))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.logaddexp(0.0, x)


def causal_conv(x, w, state):
    """Depthwise causal convolution over time. x (T, C), w (C, K) with tap K-1 on the current token,
    state (K-1, C): the K-1 input rows before x. Returns (y (T, C), new state (K-1, C)); no activation."""
    K = w.shape[1]
    xp = np.concatenate([state, x], axis=0)           # (K-1+T, C)
    T = x.shape[0]
    y = np.zeros_like(x)
    for j in range(K):
        y += xp[j:j + T] * w[:, j]
    return y, xp[xp.shape[0] - (K - 1):].copy()


def gated_delta_step(S, q, k, v, alpha, beta):
    """One token of one head. S (d_v, d_k) state, q and k (d_k,) (q already scaled by 1/sqrt(d_k)), v (d_v,),
    alpha the decay in (0, 1), beta the write strength. Returns (o (d_v,), S').
    S' = alpha S + delta k^T with delta = beta (v - alpha S k); o = S' q = alpha S q + delta (k . q)."""
    Sa = alpha * S
    delta = beta * (v - Sa @ k)
    S_new = Sa + np.outer(delta, k)
    return S_new @ q, S_new


def gated_delta_net(q, k, v, alpha, beta, S0=None):
    """q, k (T, nk, dk) normalized (q scaled), v (T, nv, dv), alpha, beta (T, nv); value head j uses key head j % nk.
    Returns (o (T, nv, dv), S (nv, dv, dk))."""
    T, nk, dk = q.shape
    nv, dv = v.shape[1], v.shape[2]
    S = np.zeros((nv, dv, dk)) if S0 is None else S0.copy()
    o = np.empty((T, nv, dv))
    for j in range(nv):
        g = j % nk
        for t in range(T):
            o[t, j], S[j] = gated_delta_step(S[j], q[t, g], k[t, g], v[t, j], alpha[t, j], beta[t, j])
    return o, S


def rope_positions(cfg, pos):
    """(T, n_rot/2) position each rotated pair uses: llama.cpp's IMROPE with text positions (p, p, p, 0)."""
    sec = cfg["sections"]
    n_pairs = cfg["n_rot"] // 2
    total = sum(sec)
    use_p = np.zeros(n_pairs, dtype=bool)
    for i in range(n_pairs):
        s = i % total if total else 0
        use_p[i] = (s % 3 == 0 and s < 3 * sec[0]) or (s % 3 == 1 and s < 3 * sec[1]) or \
                   (s % 3 == 2 and s < 3 * sec[2])
    return pos[:, None] * use_p[None, :]


def rope_partial(x, ppos, base, n_rot):
    """x (T, heads, hd); NEOX pairs (i, i + n_rot/2) for i < n_rot/2 rotated by ppos[t, i] * base^(-2i/n_rot)."""
    half = n_rot // 2
    i = np.arange(half, dtype=np.float64)
    theta = ppos * base ** (-2.0 * i / n_rot)           # (T, half)
    c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    out = x.copy()
    x0, x1 = x[..., :half], x[..., half:n_rot]
    out[..., :half] = x0 * c - x1 * s
    out[..., half:n_rot] = x0 * s + x1 * c
    return out


# ---------------------------------------------------------------- forward

def forward_qwen35(cfg, W, tokens):
    """Logits (T, vocab) of every position of `tokens` (positions 0..T-1)."""
    eps = cfg["eps"]

    def mm(x, name):   # x @ W[name].T, the activation rounded as llama.cpp's product with that weight format takes it
        return (q8_round(x) if name in cfg["int8_inputs"] else x) @ W[name].T

    H, KV, hd = cfg["n_heads"], cfg["n_kv_heads"], cfg["head_dim"]
    nk, nv, dk = cfg["n_k_heads"], cfg["n_v_heads"], cfg["d_state"]
    key_dim = nk * dk
    T = len(tokens)
    pos = np.arange(T, dtype=np.float64)
    ppos = rope_positions(cfg, pos)
    x = W["token_embd.weight"][np.asarray(tokens)]
    p_, j_ = np.arange(T)[:, None], np.arange(T)[None, :]
    causal = j_ <= p_
    for il in range(cfg["n_layers"]):
        L = lambda n: W[f"blk.{il}.{n}"]
        P = lambda x, n: mm(x, f"blk.{il}.{n}.weight")
        h = rmsnorm(x, L("attn_norm.weight"), eps)
        if not cfg["recurrent"][il]:
            qg = P(h, "attn_q").reshape(T, H, 2, hd)
            q, gate = qg[:, :, 0, :], qg[:, :, 1, :].reshape(T, H * hd)
            k = P(h, "attn_k").reshape(T, KV, hd)
            v = P(h, "attn_v").reshape(T, KV, hd)
            q = rmsnorm(q, L("attn_q_norm.weight"), eps)
            k = rmsnorm(k, L("attn_k_norm.weight"), eps)
            q = rope_partial(q, ppos, cfg["rope_base"], cfg["n_rot"])
            k = rope_partial(k, ppos, cfg["rope_base"], cfg["n_rot"])
            att = np.empty((T, H, hd))
            for hh in range(H):
                kh = hh // (H // KV)
                s = q[:, hh, :] @ k[:, kh, :].T * cfg["attn_scale"]
                s = np.where(causal, s, -np.inf)
                s = np.exp(s - s.max(axis=-1, keepdims=True))
                att[:, hh, :] = (s / s.sum(axis=-1, keepdims=True)) @ v[:, kh, :]
            a = P(att.reshape(T, H * hd) * sigmoid(gate), "attn_output")
        else:
            K = cfg["conv_kernel"]
            c = P(h, "attn_qkv")                                         # (T, conv_dim)
            c, _ = causal_conv(c, L("ssm_conv1d.weight"), np.zeros((K - 1, c.shape[1])))
            c = silu(c)
            q = l2norm(c[:, :key_dim].reshape(T, nk, dk), eps) / np.sqrt(dk)
            k = l2norm(c[:, key_dim:2 * key_dim].reshape(T, nk, dk), eps)
            v = c[:, 2 * key_dim:].reshape(T, nv, dk)
            z = P(h, "attn_gate").reshape(T, nv, dk)
            beta = sigmoid(P(h, "ssm_beta"))                               # (T, nv)
            alpha = np.exp(L("ssm_a") * softplus(P(h, "ssm_alpha") + L("ssm_dt.bias")))
            o, _ = gated_delta_net(q, k, v, alpha, beta)
            y = rmsnorm(o, L("ssm_norm.weight"), eps) * silu(z)
            a = P(y.reshape(T, nv * dk), "ssm_out")
        x = x + a
        g = rmsnorm(x, L("post_attention_norm.weight"), eps)
        if f"blk.{il}.ffn_gate_inp.weight" in W:  # experts, and the shared one scaled by sigmoid(w . g) per token
            shared = P(silu(P(g, "ffn_gate_shexp")) * P(g, "ffn_up_shexp"), "ffn_down_shexp")
            x = x + reference_forward.moe_ffn(cfg, W, il, g, mm) + shared * sigmoid(g @ L("ffn_gate_inp_shexp.weight"))[:, None]
        else:
            x = x + P(silu(P(g, "ffn_gate")) * P(g, "ffn_up"), "ffn_down")
    x = rmsnorm(x, W["output_norm.weight"], eps)
    return mm(x, "output.weight" if "output.weight" in W else "token_embd.weight")


def greedy(cfg, W, prompt, steps):
    return reference_forward.greedy(cfg, W, prompt, steps, forward_qwen35)


def write_reference(path, prompt, steps, prefix=None):
    """PREFIX.logits.f64 and PREFIX.greedy.i32 exactly as reference_forward.write_reference writes them."""
    return reference_forward.write_reference(path, prompt, steps, prefix, load_qwen35, forward_qwen35)


# ---------------------------------------------------------------- llama.cpp comparison

def llama_cpp_model(path, n_ctx=128):
    import llama_cpp  # optional: only the check needs it
    return llama_cpp.Llama(path, logits_all=True, verbose=False, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx,
                           n_threads=1, n_threads_batch=1, type_k=0, type_v=0)   # 0: GGML_TYPE_F32 KV cache


def llama_cpp_logits(path, prompt):
    m = llama_cpp_model(path, max(128, len(prompt)))
    m.eval(prompt)
    return np.asarray(m.scores[:len(prompt)], dtype=np.float64)


def llama_cpp_greedy(path, prompt, steps):
    """llama.cpp's own greedy continuation: the prompt in one batch, then one token per decode (the recurrent
    single-token path). Returns (tokens, logits rows (len(prompt) + steps, vocab))."""
    m = llama_cpp_model(path, max(128, len(prompt) + steps))
    m.eval(prompt)
    out = []
    for _ in range(steps):
        t = int(np.argmax(m.scores[m.n_tokens - 1]))
        out.append(t)
        m.eval([t])
    return out, np.asarray(m.scores[:m.n_tokens], dtype=np.float64)


def check_llama_cpp(path, prompt):
    cfg, W = load_qwen35(path)
    ref = forward_qwen35(cfg, W, prompt)
    got = llama_cpp_logits(path, prompt)
    err = np.abs(got - ref).max(axis=-1) / np.abs(ref).max(axis=-1)
    print(f"llama.cpp vs reference ({cfg['arch']}): max |difference| / max |logit| per position "
          f"{np.array2string(err, precision=2)}; worst {err.max():.3g}")
    return float(err.max())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True, help="comma-separated prompt token ids")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--out", default=None)
    ap.add_argument("--llama-cpp", action="store_true", help="compare with llama.cpp instead of writing files")
    a = ap.parse_args()
    prompt = [int(t) for t in a.tokens.split(",")]
    if a.llama_cpp:
        check_llama_cpp(a.model, prompt)
        return
    write_reference(a.model, prompt, a.steps, a.out)


if __name__ == "__main__":
    sys.exit(main())
