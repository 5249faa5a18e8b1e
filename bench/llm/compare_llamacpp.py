#!/usr/bin/env python3
"""tg-llm --benchmark next to llama.cpp (PyPI llama-cpp-python) on the same GGUF, CPU, same thread count, in one
run; prints one JSON object with both sides and the ratios (tg / llama.cpp; >1 means tg is faster).

The peer lives in a venv outside the repo, built for this host's ISA (see README "Benchmarks"); --no-cache-dir, or
pip hands back a wheel built for another host:
  python3 -m venv ~/.venvs/llamacpp && CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_AMX_INT8=OFF" \
    ~/.venvs/llamacpp/bin/pip install --no-cache-dir llama-cpp-python==0.3.36
usage: compare_llamacpp.py MODEL.gguf [--tg build/bin/tg-llm] [--peer-python ~/.venvs/llamacpp/bin/python]
       [--prompt-tokens 512] [--decode-tokens 64] [--depths 0,512] [--threads 2] [--runs 3]
"""
import argparse, json, os, subprocess, sys, textwrap

PEER = textwrap.dedent(r'''
    import json, resource, statistics, sys, time
    from llama_cpp import Llama
    model, threads, prompt_n, decode_n, depth, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    t0 = time.perf_counter()
    llm = Llama(model_path=model, n_ctx=max(prompt_n, depth + decode_n + 8), n_threads=threads, n_threads_batch=threads,
                n_batch=512, n_ubatch=512, verbose=False)
    load_s = time.perf_counter() - t0
    vocab = llm.n_vocab()
    toks = lambda n, off: [(vocab // 4 + (i + off) * 7919) % (vocab // 2) + vocab // 8 for i in range(n)]
    pre, dec = [], []
    for r in range(runs):
        llm.reset(); llm._ctx.kv_cache_clear()
        t = time.perf_counter(); llm.eval(toks(prompt_n, r)); pre.append(prompt_n / (time.perf_counter() - t))
        llm.reset(); llm._ctx.kv_cache_clear()
        llm.eval(toks(max(1, depth), 100 + r))
        t = time.perf_counter()
        for i in range(decode_n): llm.eval([toks(1, 1000 + i)[0]])
        dec.append(decode_n / (time.perf_counter() - t))
    print(json.dumps({"load_s": load_s, "prefill_tok_s": statistics.median(pre), "decode_tok_s": statistics.median(dec),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
''')

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--tg", default=os.path.join(os.path.dirname(__file__), "../../build/bin/tg-llm"))
    ap.add_argument("--peer-python", default=os.path.expanduser("~/.venvs/llamacpp/bin/python"))
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--depths", default="0,512")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    out = {"bench": "llm", "model": a.model, "threads": a.threads, "rows": []}
    env = dict(os.environ, CPU_COUNT=str(a.threads), DEV=os.environ.get("DEV", "CPU"))
    for depth in [int(d) for d in a.depths.split(",")]:
        ctx = max(a.prompt_tokens, depth + a.decode_tokens + 8)
        # one unmeasured run first fills tg's disk caches for this context size: the measured runs are then warm
        # starts, without the in-process compiler (LLVM) in their RSS
        subprocess.run([a.tg, "--model", a.model, "--benchmark", "--json", "--max-context", str(ctx), "--prompt-tokens",
                        str(a.prompt_tokens), "--decode-tokens", "2", "--decode-position", str(depth), "--runs", "1"],
                       env=env, check=True, capture_output=True, text=True)
        tg = json.loads(subprocess.run([a.tg, "--model", a.model, "--benchmark", "--json", "--max-context", str(ctx),
                                        "--prompt-tokens", str(a.prompt_tokens), "--decode-tokens", str(a.decode_tokens),
                                        "--decode-position", str(depth), "--runs", str(a.runs)],
                                       env=env, check=True, capture_output=True, text=True).stdout)
        row = {"depth": depth, "tg": tg}
        if os.path.exists(a.peer_python):
            p = subprocess.run([a.peer_python, "-c", PEER, a.model, str(a.threads), str(a.prompt_tokens), str(a.decode_tokens),
                                str(depth), str(a.runs)], capture_output=True, text=True)
            if p.returncode == 0:
                peer = json.loads(p.stdout.strip().splitlines()[-1])
                row["llamacpp"] = peer
                row["decode_ratio"] = tg["decode_tok_s"] / peer["decode_tok_s"]
                row["prefill_ratio"] = tg["prefill_tok_s"] / peer["prefill_tok_s"]
                row["rss_ratio"] = tg["peak_rss_mb"] / peer["peak_rss_mb"]
            else:
                row["llamacpp_error"] = p.stderr.strip().splitlines()[-1:] 
        else:
            row["llamacpp_error"] = f"no peer at {a.peer_python} (see this script's docstring)"
        out["rows"].append(row)
    print(json.dumps(out, indent=1))

if __name__ == "__main__":
    sys.exit(main())
