#!/usr/bin/env python3
"""Writes random packed weight blocks for every format tg decodes, with the PyPI `gguf` package's numpy
dequantization of them (gguf.quants.dequantize, an implementation independent of tg's kernels).

usage: gen_quant_fixture.py OUT_DIR [SEED]   ->  OUT_DIR/<TYPE>.bin (raw rows), OUT_DIR/<TYPE>.f32 (float32 values)
"""
import sys, os
import numpy as np
from gguf import GGMLQuantizationType as Q, GGML_QUANT_SIZES
from gguf.quants import dequantize

ROWS, COLS = 3, 512
# byte offsets of the float16 fields in each block: random bytes there could be NaN or huge, so they get
# ordinary halves instead (everything else stays random)
HALF_FIELDS = {"Q8_0": [0], "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q4_K": [0, 2],
               "Q5_K": [0, 2], "Q6_K": [208], "IQ4_NL": [0], "IQ4_XS": [0], "MXFP4": [], "Q2_K": [80, 82], "Q3_K": [108],
               "TQ1_0": [52], "TQ2_0": [64], "IQ2_XXS": [0], "IQ2_XS": [0], "IQ2_S": [0], "IQ3_XXS": [0], "IQ3_S": [0],
               "IQ1_S": [0], "IQ1_M": []}
# MXFP4's scale is an e8m0 byte (2^(e - 128)): kept to [100, 140] so that values stay ordinary floats
E8M0_FIELDS = {"MXFP4": [0]}

def main():
    out, seed = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name in ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4",
                 "Q2_K", "Q3_K", "TQ1_0", "TQ2_0", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"]:
        qt = Q[name]
        block, nbytes = GGML_QUANT_SIZES[qt]
        nblocks = ROWS * COLS // block
        if name == "F32":
            raw = rng.standard_normal(ROWS * COLS).astype(np.float32).view(np.uint8)
        elif name == "F16":
            raw = rng.standard_normal(ROWS * COLS).astype(np.float16).view(np.uint8)
        elif name == "BF16":
            raw = (rng.standard_normal(ROWS * COLS).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
        else:
            raw = rng.integers(0, 256, size=(nblocks, nbytes), dtype=np.uint8)
            for off in HALF_FIELDS[name]:
                h = (rng.standard_normal(nblocks) * 0.05).astype(np.float16)
                raw[:, off:off + 2] = h.view(np.uint8).reshape(nblocks, 2)
            for off in E8M0_FIELDS.get(name, []):
                raw[:, off] = rng.integers(100, 141, size=nblocks, dtype=np.uint8)
            if name == "IQ1_M":  # its float16 d is spread over the top nibbles of the four uint16 scales at 48
                h = (rng.standard_normal(nblocks) * 0.05).astype(np.float16).view(np.uint16).astype(np.uint32)
                sc = raw[:, 48:56].copy().view(np.uint16).astype(np.uint32)
                for i in range(4):
                    sc[:, i] = (sc[:, i] & 0x0FFF) | (((h >> (4 * i)) & 0xF) << 12)
                raw[:, 48:56] = sc.astype(np.uint16).view(np.uint8).reshape(nblocks, 8)
            raw = raw.reshape(-1)
        rows = raw.reshape(ROWS, -1)
        values = dequantize(rows, qt).astype(np.float32).reshape(ROWS, COLS)
        rows.tofile(os.path.join(out, name + ".bin"))
        values.tofile(os.path.join(out, name + ".f32"))
    print(f"wrote {out} (seed {seed})")

if __name__ == "__main__":
    main()
