#!/usr/bin/env python3
"""tg-llm --serve next to llama.cpp's server (llama-cpp-python's `llama_cpp.server`, the same AVX-512/VNNI build
compare_llamacpp.py uses, plus its server extras: pip install uvicorn fastapi sse-starlette starlette-context
pydantic-settings) on the same GGUF, threads and loopback load. For 1 and 4 concurrent clients, each streaming
--requests completions of --max-tokens tokens (temperature 0), it reports time to first token, tokens/s per
client and aggregate tokens/s (medians over --runs), and the ratios tg / llama.cpp (>1: tg is better; for TTFT
the ratio is llama.cpp / tg so that >1 is better too). Prints one JSON object. tg runs with --parallel set to the
largest client count (its requests are decoded together); llama_cpp.server runs one request at a time (it has
no parallel slots) with --interrupt_requests False (its default lets a new request cut off the running one).

usage: compare_server.py MODEL.gguf [--tg build/bin/tg-llm] [--peer-python ~/.venvs/llamacpp/bin/python]
       [--threads 2] [--clients 1,4] [--requests 2] [--max-tokens 64] [--runs 3]
"""
import argparse, json, os, re, socket, statistics, subprocess, sys, threading, time, urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_ready(url, proc, timeout=600):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited ({proc.returncode})")
        try:
            urllib.request.urlopen(url + "/v1/models", timeout=5).read()
            return
        except Exception:
            time.sleep(0.5)
    raise SystemExit("server not ready")


def one_request(url, model, prompt, max_tokens):
    """Streams one completion: (time to first token, token times)."""
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    times = []
    with urllib.request.urlopen(req, timeout=600) as r:
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            c = json.loads(line[6:])
            if c.get("choices") and c["choices"][0].get("text"):
                times.append(time.perf_counter() - t0)
    return times


def load(url, model, clients, requests, max_tokens, run):
    out = [None] * clients

    def client(i):
        rows = []
        for k in range(requests):
            prompt = f"Story {run}-{i}-{k}: Once upon a time, in a village by the sea, there lived"
            rows.append(one_request(url, model, prompt, max_tokens))
        out[i] = rows

    t0 = time.perf_counter()
    ts = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    reqs = [r for rows in out for r in rows]
    tokens = sum(len(r) for r in reqs)
    ttft = statistics.median(r[0] for r in reqs if r)
    per_client = statistics.median((len(r) - 1) / (r[-1] - r[0]) for r in reqs if len(r) > 1)
    return {"ttft_ms": ttft * 1e3, "client_tok_s": per_client, "aggregate_tok_s": tokens / wall, "tokens": tokens}


def measure(name, url, model, a):
    rows = {}
    for c in [int(x) for x in a.clients.split(",")]:
        load(url, model, c, 1, 8, -1)  # warm this concurrency once
        runs = [load(url, model, c, a.requests, a.max_tokens, r) for r in range(a.runs)]
        rows[str(c)] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"{name} {c} clients: {rows[str(c)]}", file=sys.stderr)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--tg", default=os.path.join(os.path.dirname(__file__), "../../build/bin/tg-llm"))
    ap.add_argument("--peer-python", default=os.path.expanduser("~/.venvs/llamacpp/bin/python"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clients", default="1,4")
    ap.add_argument("--requests", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ctx", type=int, default=2048)
    a = ap.parse_args()
    model_id = os.path.splitext(os.path.basename(a.model))[0]
    out = {"bench": "llm_server", "model": a.model, "threads": a.threads, "max_tokens": a.max_tokens,
           "requests_per_client": a.requests, "runs": a.runs}

    env = dict(os.environ, CPU_COUNT=str(a.threads), DEV=os.environ.get("DEV", "CPU"))
    parallel = max(int(x) for x in a.clients.split(","))  # tg decodes the concurrent requests together
    out["tg_parallel"] = parallel
    tg = subprocess.Popen([a.tg, "--model", a.model, "--serve", "0", "--max-context", str(a.ctx), "--queue", "64",
                           "--parallel", str(parallel)],
                          env=env, stderr=subprocess.PIPE, text=True)
    for line in tg.stderr:
        m = re.search(r"ready: (http://[0-9.]+:\d+)/", line)
        if m:
            break
    else:
        raise SystemExit("tg-llm did not start")
    threading.Thread(target=lambda: [None for _ in tg.stderr], daemon=True).start()
    try:
        out["tg"] = measure("tg", m.group(1), model_id, a)
    finally:
        tg.terminate()
        tg.wait()

    if os.path.exists(a.peer_python):
        port = free_port()
        peer = subprocess.Popen([a.peer_python, "-m", "llama_cpp.server", "--model", a.model, "--model_alias", model_id,
                                 "--n_threads", str(a.threads), "--n_threads_batch", str(a.threads), "--n_ctx", str(a.ctx),
                                 "--host", "127.0.0.1", "--port", str(port), "--interrupt_requests", "False"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_ready(url, peer)
            out["llama_cpp_server"] = measure("llama.cpp", url, model_id, a)
        finally:
            peer.terminate()
            peer.wait()
        out["ratios"] = {c: {"aggregate_tok_s": out["tg"][c]["aggregate_tok_s"] / out["llama_cpp_server"][c]["aggregate_tok_s"],
                             "client_tok_s": out["tg"][c]["client_tok_s"] / out["llama_cpp_server"][c]["client_tok_s"],
                             "ttft": out["llama_cpp_server"][c]["ttft_ms"] / out["tg"][c]["ttft_ms"]} for c in out["tg"]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
