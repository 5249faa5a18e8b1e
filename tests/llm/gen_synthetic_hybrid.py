#!/usr/bin/env python3
"""Writes a tiny random Qwen3.5 dense hybrid decoder (GGUF architecture `qwen35`: gated delta net layers with every
full_attention_interval-th layer full gated attention) as a complete GGUF, then runs reference_hybrid.py on it.
The layout is the one documented at the top of reference_hybrid.py. With --moe, the MoE hybrid (`qwen35moe`,
Qwen3.6-35B-A3B's layout): every FFN 8 experts, 2 a token, and a shared expert behind a per-token sigmoid gate.

usage: gen_synthetic_hybrid.py OUT.gguf --wtype TYPE --seed N [--tokens 1,2,3] [--steps 32] [--vocab 300]
                               [--untied] [--layers 6] [--interval 3] [--mtp] [--moe] [--llama-cpp]
  TYPE: F32 F16 Q8_0 Q4_0 Q4_K (matrices; norms, ssm_a, ssm_dt and ssm_conv1d stay F32 as llama.cpp's converter
        keeps them)
  Outputs: OUT.gguf, OUT.gguf.logits.f64 and OUT.gguf.greedy.i32 (see reference_forward.py for the formats).

       gen_synthetic_hybrid.py OUT.gguf --wtype TYPE --seed N --llama-cpp
  also compares the reference's logits with llama.cpp's (llama_cpp_python) on the prompt.

       gen_synthetic_hybrid.py --llama-cpp-golden DIR [--json tests/llm/data/golden_llamacpp_qwen35.json]
  writes DIR/qwen35_f32_s11.gguf and DIR/qwen35_q8_0_s12.gguf, and records llama.cpp's greedy tokens (32 steps
  from a 1-token prompt at position 0, and after a 40-token prompt) for both, with the reference's agreement.
"""
import argparse
import json
import os
import re
import sys

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q, GGML_QUANT_SIZES

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_synthetic_model import encode, add_vocabulary, CONTEXT_LENGTH  # noqa: E402
import reference_hybrid  # noqa: E402

WTYPES = ["F32", "F16", "Q8_0", "Q4_0", "Q4_K"]
QK_ALIGN = 0.9


def dims(wtype, layers, interval):
    """Every matrix's input dim must be a multiple of the weight type's block (256 for Q4_K)."""
    big = GGML_QUANT_SIZES[Q[wtype]][0] >= 256
    D = dict(d=256, ff=512, heads=4, kv=2, hd=64, n_rot=16, sections=[3, 3, 2, 0],
             nk=2, nv=4, dk=64, conv=4) if big else \
        dict(d=128, ff=256, heads=4, kv=2, hd=64, n_rot=16, sections=[3, 3, 2, 0],
             nk=2, nv=4, dk=32, conv=4)
    D.update(layers=layers, interval=interval)
    return D


def write_model(path, wtype, seed, vocab, untied, layers=6, interval=3, only=None, mtp=False, moe=False):
    """only: if given, a predicate on tensor names; the matrices it rejects are stored F32 (for bisecting).
    moe: qwen35moe (Qwen3.6-35B-A3B's layout): every FFN 8 experts (2 a token) plus a shared expert behind a
    sigmoid gate, in both layer kinds."""
    D = dims(wtype, layers, interval)
    d, ff, H, KV, hd = D["d"], D["ff"], D["heads"], D["kv"], D["hd"]
    nk, nv, dk, K = D["nk"], D["nv"], D["dk"], D["conv"]
    key_dim, value_dim = nk * dk, nv * dk
    conv_dim = 2 * key_dim + value_dim
    rng = np.random.default_rng(seed)
    mat = lambda out, inp: rng.standard_normal((out, inp)) / np.sqrt(inp)
    norm = lambda n: (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)

    arch = "qwen35moe" if moe else "qwen35"
    w = gguf.GGUFWriter(path, arch)
    w.add_name(f"synthetic {arch} {wtype} seed {seed}")
    block = GGML_QUANT_SIZES[Q[wtype]][0]  # the experts' input widths stay multiples of the weight type's block
    E, used, ff_exp, ff_sh = 8, 2, max(ff // 4, block), max(ff // 2, block)
    if moe:
        w.add_expert_count(E)
        w.add_expert_used_count(used)
        w.add_expert_feed_forward_length(ff_exp)
        w.add_expert_shared_feed_forward_length(ff_sh)
    w.add_context_length(CONTEXT_LENGTH)
    w.add_embedding_length(d)
    w.add_block_count(layers + int(mtp))
    if mtp:
        w.add_nextn_predict_layers(1)
    w.add_feed_forward_length(ff)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_dimension_count(D["n_rot"])
    w.add_rope_dimension_sections(D["sections"])
    w.add_rope_freq_base(10000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_ssm_conv_kernel(K)
    w.add_ssm_state_size(dk)
    w.add_ssm_group_count(nk)
    w.add_ssm_time_step_rank(nv)
    w.add_ssm_inner_size(value_dim)
    w.add_full_attention_interval(interval)
    add_vocabulary(w, vocab)

    def add(name, arr, quantized=True):
        quantized = quantized and (only is None or only(name))
        if arr.ndim == 3:  # stacked experts (E, out, in): encoded as one (E * out, in) matrix, stored 3-D
            data, raw = encode(arr.reshape(-1, arr.shape[2]), wtype) if quantized else (f32(arr.reshape(-1, arr.shape[2])), None)
            w.add_tensor(name, data.reshape(arr.shape[0], arr.shape[1], -1), raw_dtype=raw)
            return
        data, raw = encode(arr, wtype) if quantized else (f32(arr), None)
        w.add_tensor(name, data, raw_dtype=raw)

    def add_ffn(p):
        if not moe:
            add(p + "ffn_gate.weight", mat(ff, d))
            add(p + "ffn_up.weight", mat(ff, d))
            add(p + "ffn_down.weight", mat(d, ff))
            return
        # the router float32 (llama.cpp's quantize keeps it so), its logits ~N(0, 2^2): clear choices
        add(p + "ffn_gate_inp.weight", 2.0 * mat(E, d), quantized=False)
        add(p + "ffn_gate_exps.weight", np.stack([mat(ff_exp, d) for _ in range(E)]))
        add(p + "ffn_up_exps.weight", np.stack([mat(ff_exp, d) for _ in range(E)]))
        add(p + "ffn_down_exps.weight", np.stack([mat(d, ff_exp) for _ in range(E)]))
        add(p + "ffn_gate_inp_shexp.weight", mat(1, d).reshape(d), quantized=False)
        add(p + "ffn_gate_shexp.weight", mat(ff_sh, d))
        add(p + "ffn_up_shexp.weight", mat(ff_sh, d))
        add(p + "ffn_down_shexp.weight", mat(d, ff_sh))

    add("token_embd.weight", mat(vocab, d))
    add("output_norm.weight", norm(d), quantized=False)
    if untied:
        add("output.weight", mat(vocab, d))
    for il in range(layers):
        p = f"blk.{il}."
        add(p + "attn_norm.weight", norm(d), quantized=False)
        if (il + 1) % interval == 0:     # full attention
            add(p + "attn_q.weight", mat(2 * H * hd, d))       # per head: hd query rows, then hd gate rows
            add(p + "attn_k.weight", mat(KV * hd, d))
            add(p + "attn_v.weight", mat(KV * hd, d))
            add(p + "attn_q_norm.weight", norm(hd), quantized=False)
            add(p + "attn_k_norm.weight", norm(hd), quantized=False)
            add(p + "attn_output.weight", mat(d, H * hd))
        else:                            # gated delta net
            # k rows correlated with q rows (and their conv taps alike): with independent random q and k, the
            # read-out S q is a sum that nearly cancels (k.q ~ 1/sqrt(dk)), and ssm_norm then scales its rounding
            # noise up to O(1); trained models align q and k, so the synthetic one does too
            qkv = mat(conv_dim, d)
            qkv[key_dim:2 * key_dim] = QK_ALIGN * qkv[:key_dim] + np.sqrt(1 - QK_ALIGN ** 2) * qkv[key_dim:2 * key_dim]
            add(p + "attn_qkv.weight", qkv)
            add(p + "attn_gate.weight", mat(value_dim, d))
            # conv taps ~ N(0, 1/K), the current token's tap (K-1) raised so that it dominates the K-1 earlier ones
            conv = rng.standard_normal((conv_dim, K)) / np.sqrt(K)
            conv[:, K - 1] += 0.5
            conv[key_dim:2 * key_dim] = conv[:key_dim]
            add(p + "ssm_conv1d.weight", conv, quantized=False)
            # decays alpha = exp(-A softplus(a + dt_bias)) spread over (0, 1): A in [0.5, 8], dt_bias in [-4, 0]
            A = rng.uniform(0.5, 8.0, nv)
            add(p + "ssm_a", -A, quantized=False)                  # stored as -exp(A_log)
            add(p + "ssm_dt.bias", rng.uniform(-4.0, 0.0, nv), quantized=False)
            add(p + "ssm_alpha.weight", mat(nv, d))
            add(p + "ssm_beta.weight", mat(nv, d))
            add(p + "ssm_norm.weight", norm(dk), quantized=False)
            add(p + "ssm_out.weight", mat(d, value_dim))
        add(p + "post_attention_norm.weight", norm(d), quantized=False)
        add_ffn(p)
    if mtp:   # one NextN/MTP block after the main stack (a full-attention block plus its nextn tensors): the main
        p = f"blk.{layers}."      # forward must skip it
        add(p + "attn_norm.weight", norm(d), quantized=False)
        add(p + "attn_q.weight", mat(2 * H * hd, d))
        add(p + "attn_k.weight", mat(KV * hd, d))
        add(p + "attn_v.weight", mat(KV * hd, d))
        add(p + "attn_q_norm.weight", norm(hd), quantized=False)
        add(p + "attn_k_norm.weight", norm(hd), quantized=False)
        add(p + "attn_output.weight", mat(d, H * hd))
        add(p + "post_attention_norm.weight", norm(d), quantized=False)
        add_ffn(p)
        add(p + "nextn.eh_proj.weight", mat(d, 2 * d))
        add(p + "nextn.enorm.weight", norm(d), quantized=False)
        add(p + "nextn.hnorm.weight", norm(d), quantized=False)
        add(p + "nextn.shared_head_norm.weight", norm(d), quantized=False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def default_prompt(seed, vocab, n=7):
    return [int(t) for t in np.random.default_rng(seed + 1).integers(3, vocab, n)]


def compare(path, prompt):
    """max over positions of max |llama.cpp - reference| / max |reference logit|."""
    return reference_hybrid.check_llama_cpp(path, prompt)


def llama_cpp_golden(outdir, json_path, steps=32):
    os.makedirs(outdir, exist_ok=True)
    cases = []
    for wtype, seed, moe in (("F32", 11, False), ("Q8_0", 12, False), ("F32", 13, True)):
        path = os.path.join(outdir, f"qwen35{'moe' if moe else ''}_{wtype.lower()}_s{seed}.gguf")
        write_model(path, wtype, seed, 300, untied=False, moe=moe)
        cfg, W = reference_hybrid.load_qwen35(path)
        runs = []
        for prompt in ([1], default_prompt(seed, 300, 40)):
            lc_toks, lc_logits = reference_hybrid.llama_cpp_greedy(path, prompt, steps)
            ref_toks, ref_logits = reference_hybrid.greedy(cfg, W, prompt, steps)
            # logits compared on llama.cpp's own token sequence (the reference re-run on it)
            seq = prompt + lc_toks[:-1] if steps else prompt
            ref_on_lc = reference_hybrid.forward_qwen35(cfg, W, seq)
            err = np.abs(lc_logits[:len(seq)] - ref_on_lc).max(axis=-1) / np.abs(ref_on_lc).max(axis=-1)
            top2 = np.sort(ref_logits[len(prompt) - 1: len(prompt) - 1 + steps], axis=-1)[:, -2:]
            first = next((i for i, (a, b) in enumerate(zip(lc_toks, ref_toks)) if a != b), None)
            runs.append(dict(prompt=prompt, llama_cpp_greedy=lc_toks, reference_greedy=ref_toks,
                             greedy_agree=lc_toks == ref_toks, first_divergence=first,
                             max_rel_logit_diff=float(f"{err.max():.3g}"),
                             reference_smallest_top2_gap=float(f"{(top2[:, 1] - top2[:, 0]).min():.3g}")))
            print(f"{wtype} prompt {len(prompt)}: llama.cpp {lc_toks}\n  reference agrees {lc_toks == ref_toks} "
                  f"(first divergence {first}), max rel logit diff {err.max():.3g}")
        cases.append(dict(file=os.path.basename(path), wtype=wtype, seed=seed, vocab=300, untied=False,
                          layers=6, full_attention_interval=3, moe=moe, steps=steps, runs=runs))
    import llama_cpp
    doc = dict(
        description="llama.cpp (llama_cpp_python) greedy continuations of synthetic qwen35 and qwen35moe GGUFs: prompt in one "
                    "batch, then one token per decode, KV cache F32, 1 thread",
        command="python3 tests/llm/gen_synthetic_hybrid.py --llama-cpp-golden OUTDIR "
                "--json tests/llm/data/golden_llamacpp_qwen35.json",
        regenerate_model="python3 tests/llm/gen_synthetic_hybrid.py OUT.gguf --wtype WTYPE --seed SEED [--moe]",
        llama_cpp_python=llama_cpp.__version__, gguf_py="0.19.0",
        cases=cases)
    text = json.dumps(doc, indent=1)
    text = re.sub(r"\[\s*([-0-9.,\s]+?)\s*\]", lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]", text)
    with open(json_path, "w") as f:
        f.write(text + "\n")
    print(f"wrote {json_path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?")
    ap.add_argument("--wtype", choices=WTYPES)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--tokens", default=None, help="prompt ids (default: 7 drawn from the seed)")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=300)
    ap.add_argument("--untied", action="store_true")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--interval", type=int, default=3, help="full_attention_interval")
    ap.add_argument("--mtp", action="store_true", help="append one NextN/MTP block (nextn_predict_layers = 1)")
    ap.add_argument("--moe", action="store_true", help="qwen35moe: experts and a shared expert in every FFN")
    ap.add_argument("--llama-cpp", action="store_true", help="also compare the reference with llama.cpp")
    ap.add_argument("--llama-cpp-golden", metavar="DIR", default=None)
    ap.add_argument("--json", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                                                   "golden_llamacpp_qwen35.json"))
    a = ap.parse_args()
    if a.llama_cpp_golden:
        return llama_cpp_golden(a.llama_cpp_golden, a.json, a.steps)
    if not a.out or not a.wtype or a.seed is None:
        ap.error("OUT.gguf, --wtype and --seed are required")
    if a.vocab < 259:
        raise SystemExit("--vocab must hold the 3 specials and 256 byte tokens (>= 259)")
    write_model(a.out, a.wtype, a.seed, a.vocab, a.untied, a.layers, a.interval, mtp=a.mtp, moe=a.moe)
    prompt = [int(t) for t in a.tokens.split(",")] if a.tokens else default_prompt(a.seed, a.vocab)
    reference_hybrid.write_reference(a.out, prompt, a.steps)
    if a.llama_cpp:
        compare(a.out, prompt)


if __name__ == "__main__":
    main()
