#!/usr/bin/env python3
"""Prompt lookup decoding (draft-free speculative decoding) on a code edit: a real instruction model is given a
~300-token Python file and asked to return it whole with one line changed, greedy. Measures decode tok/s of
tg-llm --serve without and with --lookup-ngram, and of llama.cpp (llama-cpp-python, the AVX-512/VNNI build of
compare_llamacpp.py) without and with its own prompt lookup (LlamaPromptLookupDecoding), each in the same run,
medians of --runs after one warm-up request each. Decode tok/s = completion tokens / (time of the last token - time of the first), from a
streamed reply. Prints one JSON object: both engines' figures, each one's lookup speedup, tg's acceptance rate
(/metrics), whether each engine's reply is the same with and without lookup (greedy: it must be), and the ratio
of tg with lookup to llama.cpp with lookup.

With --draft-model DRAFT.gguf the guesses come from that smaller model of the same vocabulary instead (tg-llm
--draft-model; llama.cpp: a LlamaDraftModel that runs the draft greedily in a second Llama, reusing its prefix).

usage: compare_lookup.py MODEL.gguf [--tg build/bin/tg-llm] [--peer-python ~/.venvs/llamacpp/bin/python]
       [--threads 2] [--runs 3] [--ngram 3] [--draft-max 15] [--max-tokens 400] [--draft-model DRAFT.gguf] [--always]
"""
import argparse, json, os, statistics, subprocess, sys, time, urllib.request

from compare_server import free_port, wait_ready

CODE = '''import math
from dataclasses import dataclass


@dataclass
class Sample:
    name: str
    values: list


def mean(values):
    """The arithmetic mean of a non-empty list."""
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


def variance(values):
    """The population variance."""
    m = mean(values)
    return sum((v - m) ** 2 for v in values) / len(values)


def stddev(values):
    return math.sqrt(variance(values))


def summarize(samples):
    """One line per sample: its name, mean and standard deviation."""
    lines = []
    for s in samples:
        lines.append(f"{s.name}: mean={mean(s.values):.3f} sd={stddev(s.values):.3f}")
    return "\\n".join(lines)


if __name__ == "__main__":
    data = [Sample("a", [1.0, 2.0, 3.0]), Sample("b", [2.5, 2.5, 4.0, 1.0])]
    print(summarize(data))
'''

MESSAGES = [{"role": "user", "content":
             "Here is a Python file:\n```python\n" + CODE + "```\nReturn the whole file, unchanged except that the "
             "docstring of `stddev` is added: \"\"\"The population standard deviation.\"\"\". Reply with the full "
             "file in one python code block and nothing else."}]

PEER = r'''
import json, sys, time
from llama_cpp import Llama
from llama_cpp.llama_speculative import LlamaDraftModel, LlamaPromptLookupDecoding
import numpy as np
model, threads, runs, max_tokens, lookup, draft_path, k = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
                                                           sys.argv[5] == "1", sys.argv[6], int(sys.argv[7]))
messages = json.loads(sys.stdin.read())

class ModelDraft(LlamaDraftModel):
    """k greedy tokens of a second Llama (generate() reuses the prefix it already holds)."""
    def __init__(self):
        self.llm = Llama(model_path=draft_path, n_ctx=1024, n_threads=threads, n_threads_batch=threads, verbose=False)
    def __call__(self, input_ids, **kwargs):
        out = []
        for t in self.llm.generate(list(input_ids), top_k=1, temp=0.0):
            out.append(t)
            if len(out) == k:
                break
        return np.array(out, dtype=np.intc)

draft = (ModelDraft() if draft_path else LlamaPromptLookupDecoding(num_pred_tokens=10)) if lookup else None
# logits_all with a draft model: llama-cpp-python sets it itself but sizes its score rows by n_batch unless asked
# (0.3.36: a reply past 512 tokens of context fails to broadcast its logits)
llm = Llama(model_path=model, n_ctx=1024, n_threads=threads, n_threads_batch=threads, verbose=False, logits_all=lookup, draft_model=draft)
out = []
for r in range(runs + 1):  # the first is a warm-up, as tg's
    llm.reset()
    t0 = time.perf_counter(); times = []; text = ""
    for c in llm.create_chat_completion(messages=messages, temperature=0, max_tokens=max_tokens, stream=True):
        d = c["choices"][0]["delta"].get("content")
        if d:
            times.append(time.perf_counter() - t0); text += d
    n = len(llm.tokenize(text.encode(), add_bos=False, special=True))
    out.append({"tokens": n, "ttft_s": times[0], "decode_tok_s": (n - 1) / (times[-1] - times[0]), "text": text})
print(json.dumps(out[1:]))
'''


def tg_runs(args, lookup):
    port = free_port()
    cmd = [args.tg, "--model", args.model, "--serve", str(port), "--max-context", "4096"]
    if lookup:
        cmd += (["--draft-model", args.draft_model] if args.draft_model else ["--lookup-ngram", str(args.ngram)]) + ["--draft-max", str(args.draft_max)]
        cmd += ["--draft-always"] if args.always else []
    env = dict(os.environ, CPU_COUNT=str(args.threads), DEV=os.environ.get("DEV", "CPU"))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        out = []
        for _ in range(args.runs + 1):  # the first is a warm-up: it compiles the captures of its key lengths
            body = json.dumps({"messages": MESSAGES, "temperature": 0, "max_tokens": args.max_tokens, "stream": True,
                               "stream_options": {"include_usage": True}}).encode()
            req = urllib.request.Request(url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
            t0 = time.perf_counter()
            times, text, n = [], "", 0
            with urllib.request.urlopen(req, timeout=900) as r:
                for line in r:
                    line = line.decode().strip()
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    c = json.loads(line[6:])
                    if c.get("usage"):
                        n = c["usage"]["completion_tokens"]
                    if c.get("choices") and c["choices"][0]["delta"].get("content"):
                        times.append(time.perf_counter() - t0)
                        text += c["choices"][0]["delta"]["content"]
            out.append({"tokens": n, "ttft_s": times[0], "decode_tok_s": (n - 1) / (times[-1] - times[0]), "text": text})
        out = out[1:]
        metrics = urllib.request.urlopen(url + "/metrics").read().decode()
        m = {k: int(v) for k, v in (l.split() for l in metrics.splitlines() if l.startswith("tg_llm_draft"))}
        return out, m
    finally:
        proc.terminate()
        proc.wait()


def peer_runs(args, lookup):
    r = subprocess.run([args.peer_python, "-c", PEER, args.model, str(args.threads), str(args.runs), str(args.max_tokens),
                        "1" if lookup else "0", args.draft_model, str(args.draft_max)], input=json.dumps(MESSAGES), capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def summary(runs):
    return {"decode_tok_s": statistics.median(r["decode_tok_s"] for r in runs), "ttft_s": statistics.median(r["ttft_s"] for r in runs),
            "tokens": runs[0]["tokens"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--tg", default=os.path.join(os.path.dirname(__file__), "../../build/bin/tg-llm"))
    ap.add_argument("--peer-python", default=os.path.expanduser("~/.venvs/llamacpp/bin/python"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ngram", type=int, default=3)
    ap.add_argument("--draft-max", type=int, default=15)
    ap.add_argument("--max-tokens", type=int, default=400)
    ap.add_argument("--draft-model", default="", help="guesses from this model (same vocabulary), not prompt lookup")
    ap.add_argument("--always", action="store_true", help="tg checks --draft-max guesses every step (--draft-always), not where it pays")
    args = ap.parse_args()
    tg_plain, _ = tg_runs(args, False)
    tg_lookup, m = tg_runs(args, True)
    res = {"bench": "draft_model" if args.draft_model else "prompt_lookup", "model": args.model, "draft_model": args.draft_model, "threads": args.threads, "runs": args.runs,
           "tg": summary(tg_plain), "tg_lookup": summary(tg_lookup),
           "tg_same_reply": tg_plain[0]["text"] == tg_lookup[0]["text"],
           "tg_drafted": m.get("tg_llm_draft_tokens_total", 0),
           "tg_acceptance": m.get("tg_llm_draft_tokens_accepted_total", 0) / max(1, m.get("tg_llm_draft_tokens_total", 0))}
    res["tg_lookup_speedup"] = res["tg_lookup"]["decode_tok_s"] / res["tg"]["decode_tok_s"]
    if os.path.exists(args.peer_python):
        peer_plain, peer_lookup = peer_runs(args, False), peer_runs(args, True)
        res.update({"llamacpp": summary(peer_plain), "llamacpp_lookup": summary(peer_lookup),
                    "llamacpp_same_reply": peer_plain[0]["text"] == peer_lookup[0]["text"]})
        res["llamacpp_lookup_speedup"] = res["llamacpp_lookup"]["decode_tok_s"] / res["llamacpp"]["decode_tok_s"]
        res["lookup_ratio"] = res["tg_lookup"]["decode_tok_s"] / res["llamacpp_lookup"]["decode_tok_s"]
        res["plain_ratio"] = res["tg"]["decode_tok_s"] / res["llamacpp"]["decode_tok_s"]
    res["reply_head"] = tg_lookup[0]["text"][:200]
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
