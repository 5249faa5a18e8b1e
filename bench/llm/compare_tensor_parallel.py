#!/usr/bin/env python3
"""Tensor-parallel tg-llm against one device, on one model (the issue's: gen_shaped.py --shape qwen3-0.6b --wtype
Q8_0): three configurations, each `tg-llm --benchmark --json` over --runs runs (tg-llm reports medians), in the
same invocation so they see the same machine:
  single   one device, all cores (tg-llm's default)
  devices  --devices CPU:0,CPU:1: two ranks as threads of one process, every kernel of each spread over all cores
  mpi      mpirun -np 2 tg-llm --tensor-parallel, one core each (CPU_COUNT=1): two processes over shared memory
Prints one JSON object: each configuration's prefill and decode tok/s, its ratio to `single`, and the time rank 0
spent in collectives (tg-llm's stderr line: collectives, seconds in them, microseconds each) and the allreduces
per decode token (two per layer and one for the logits).

usage: compare_tensor_parallel.py MODEL.gguf [--tg build/bin/tg-llm] [--runs 3] [--prompt-tokens 128]
       [--decode-tokens 64]
"""
import argparse, json, os, re, subprocess, sys

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader,tcp",
           "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    result = json.loads(p.stdout.strip().splitlines()[-1])
    m = re.search(r"(\d+) collectives, ([0-9.]+) s in them \(([0-9.]+) us each\)", p.stderr)
    if m:
        result["collectives"] = int(m.group(1))
        result["collective_s"] = float(m.group(2))
        result["collective_us_each"] = float(m.group(3))
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--tg", default="build/bin/tg-llm")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--decode-tokens", type=int, default=64)
    a = ap.parse_args()
    bench = ["--model", a.model, "--benchmark", "--json", "--runs", str(a.runs), "--prompt-tokens", str(a.prompt_tokens),
             "--decode-tokens", str(a.decode_tokens), "--max-context", str(a.prompt_tokens + a.decode_tokens + 64)]
    out = {"model": os.path.basename(a.model), "runs": a.runs}
    out["single"] = run([a.tg] + bench, {})
    out["devices"] = run([a.tg, "--devices", "CPU:0,CPU:1"] + bench, {})
    out["mpi"] = run(["mpirun", "-np", "2", "-x", "CPU_COUNT=1", a.tg, "--tensor-parallel"] + bench, {**MPI_ENV, "CPU_COUNT": "1"})
    for k in ("devices", "mpi"):
        for m in ("prefill_tok_s", "decode_tok_s"):
            out[k][m + "_ratio_to_single"] = round(out[k][m] / out["single"][m], 3)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
