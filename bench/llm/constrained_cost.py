#!/usr/bin/env python3
"""The cost of constrained decoding: tg-llm --serve asked the same greedy questions plainly and with a
`response_format` JSON schema (the mask over the vocabulary computed every token), decode tok/s of each from the
server's request log (medians of --runs), and the mask time per token it logs. Prints one JSON object.

usage: constrained_cost.py MODEL.gguf [--tg build/bin/tg-llm] [--threads 2] [--runs 3] [--max-tokens 160]
"""
import argparse, json, os, re, statistics, subprocess, sys, threading, time, urllib.request

from compare_server import free_port, wait_ready

SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer"}, "languages": {"type": "array", "items": {"type": "string"}, "maxItems": 6},
    "city": {"type": "string"}, "bio": {"type": "string"}}, "required": ["name", "age", "languages", "city", "bio"], "additionalProperties": False}
QUESTION = "Invent a software engineer and describe them as JSON with name, age, languages, city and a two-sentence bio."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--tg", default=os.path.join(os.path.dirname(__file__), "../../build/bin/tg-llm"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=160)
    args = ap.parse_args()
    port = free_port()
    env = dict(os.environ, CPU_COUNT=str(args.threads), DEV=os.environ.get("DEV", "CPU"))
    proc = subprocess.Popen([args.tg, "--model", args.model, "--serve", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    log = []
    threading.Thread(target=lambda: [log.append(l) for l in proc.stderr], daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        res = {}
        for kind in ["plain", "constrained"]:
            rates, masks = [], []
            for _ in range(args.runs + 1):  # the first is a warm-up
                body = {"messages": [{"role": "user", "content": QUESTION}], "temperature": 0, "max_tokens": args.max_tokens}
                if kind == "constrained":
                    body["response_format"] = {"type": "json_schema", "json_schema": {"name": "engineer", "schema": SCHEMA}}
                n = len(log)
                req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
                reply = json.loads(urllib.request.urlopen(req, timeout=900).read())
                for _ in range(100):  # the request's log line follows its reply
                    line = next((l for l in log[n:] if "decode" in l and "tok/s" in l), None)
                    if line:
                        break
                    time.sleep(0.05)
                rates.append(float(re.search(r"decode ([\d.]+) tok/s", line).group(1)))
                m = re.search(r"masks ([\d.]+) ms/token", line)
                masks.append(float(m.group(1)) if m else 0.0)
                res.setdefault(kind + "_reply", reply["choices"][0]["message"]["content"][:160])
            res[kind] = {"decode_tok_s": statistics.median(rates[1:]), "mask_ms_per_token": statistics.median(masks[1:])}
        res["cost"] = 1 - res["constrained"]["decode_tok_s"] / res["plain"]["decode_tok_s"]
        print(json.dumps({"bench": "constrained_cost", "model": args.model, "threads": args.threads, "runs": args.runs, **res}, indent=1))
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
