#!/usr/bin/env python3
"""Expert routing in numpy float64, for moe_test.cpp: llama.cpp's build_moe_ffn gates with the seed's tie rule.

usage: reference_routing.py LOGITS.f32 T E K GATE NORMALIZE SCALE [BIAS.f32] OUT
  LOGITS.f32  float32 (T, E) router logits; GATE softmax or sigmoid; NORMALIZE 0 or 1; SCALE a float;
  BIAS.f32    float32 (E,), added to the scores that select (sigmoid gating), not to the weights.
  writes OUT.ids.i32 (T, K) int32, the experts best first (equal scores: the lower index first), and
         OUT.weights.f64 (T, K): their gate values, divided by their sum (clamped below at 2^-14) where NORMALIZE,
         times SCALE.
"""
import sys

import numpy as np


def main():
    args = sys.argv[1:]
    path, T, E, K, gate, normalize, scale = args[0], int(args[1]), int(args[2]), int(args[3]), args[4], args[5] == "1", float(args[6])
    bias = np.fromfile(args[7], dtype="<f4").astype(np.float64) if len(args) == 9 else np.zeros(E)
    out = args[-1]
    x = np.fromfile(path, dtype="<f4").astype(np.float64).reshape(T, E)
    if gate == "softmax":
        g = np.exp(x - x.max(axis=1, keepdims=True))
        g /= g.sum(axis=1, keepdims=True)
    else:
        g = 1.0 / (1.0 + np.exp(-x))
    score = g + bias
    ids = np.empty((T, K), dtype="<i4")
    weights = np.empty((T, K))
    for t in range(T):
        sel = np.lexsort((np.arange(E), -score[t]))[:K]  # score descending, then index ascending
        w = g[t, sel]
        if normalize:
            w = w / max(w.sum(), 6.103515625e-5)
        ids[t], weights[t] = sel, w * scale
    ids.tofile(out + ".ids.i32")
    weights.astype("<f8").tofile(out + ".weights.f64")


if __name__ == "__main__":
    main()
