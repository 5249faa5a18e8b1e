#!/usr/bin/env python3
"""Expert routing in numpy float64, for moe_test.cpp: llama.cpp's build_moe_ffn gates with the seed's tie rule.

usage: reference_routing.py LOGITS.f32 T E K GATE NORMALIZE SCALE OUT [--bias BIAS.f32] [--groups G --groups-used GU]
  LOGITS.f32  float32 (T, E) router logits; GATE softmax or sigmoid; NORMALIZE 0 or 1; SCALE a float;
  BIAS.f32    float32 (E,), added to the scores that select (sigmoid gating), not to the weights;
  G, GU       DeepSeek-V3's group limit (modeling_deepseek.py's n_group / topk_group, llama.cpp's
              expert_group_count / expert_group_used_count): the E experts in G groups of consecutive indices, a
              group scored by the sum of its two largest selection scores, only the experts of the GU best groups
              (equal group scores: the lower group) selectable (the others' scores -inf, as llama.cpp masks them).
  writes OUT.ids.i32 (T, K) int32, the experts best first (equal scores: the lower index first), and
         OUT.weights.f64 (T, K): their gate values, divided by their sum (clamped below at 2^-14) where NORMALIZE,
         times SCALE.
"""
import argparse

import numpy as np


def best_first(v, k):
    """The k best indices of v, best first; equal values: the lower index first."""
    return np.lexsort((np.arange(len(v)), -v))[:k]


def main():
    ap = argparse.ArgumentParser()
    for name in ("logits", "T", "E", "K", "gate", "normalize", "scale", "out"):
        ap.add_argument(name)
    ap.add_argument("--bias")
    ap.add_argument("--groups", type=int, default=1)
    ap.add_argument("--groups-used", type=int, default=1)
    a = ap.parse_args()
    T, E, K, normalize, scale = int(a.T), int(a.E), int(a.K), a.normalize == "1", float(a.scale)
    bias = np.fromfile(a.bias, dtype="<f4").astype(np.float64) if a.bias else np.zeros(E)
    x = np.fromfile(a.logits, dtype="<f4").astype(np.float64).reshape(T, E)
    if a.gate == "softmax":
        g = np.exp(x - x.max(axis=1, keepdims=True))
        g /= g.sum(axis=1, keepdims=True)
    else:
        g = 1.0 / (1.0 + np.exp(-x))
    score = g + bias
    ids = np.empty((T, K), dtype="<i4")
    weights = np.empty((T, K))
    for t in range(T):
        s = score[t].copy()
        if a.groups > 1:
            per = E // a.groups
            groups = s.reshape(a.groups, per)
            group_score = np.sort(groups, axis=1)[:, -2:].sum(axis=1)
            keep = np.zeros(a.groups, dtype=bool)
            keep[best_first(group_score, a.groups_used)] = True
            s[~np.repeat(keep, per)] = -np.inf
        sel = best_first(s, K)
        w = g[t, sel]
        if normalize:
            w = w / max(w.sum(), 6.103515625e-5)
        ids[t], weights[t] = sel, w * scale
    ids.tofile(a.out + ".ids.i32")
    weights.astype("<f8").tofile(a.out + ".weights.f64")


if __name__ == "__main__":
    main()
