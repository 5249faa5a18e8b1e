"""tg-llm --serve tensor-parallel: over two devices of one process (--devices CPU:0,CPU:1) and over two MPI ranks
(mpirun -np 2 tg-llm --tensor-parallel), rank 0 serves and the other rank replays its generator's calls
(apps/llm/generation/lockstep.hpp). On float32 synthetic models (no 8-bit activations, so the split model's logits are the
single device's to rounding) every reply is the single-device server's: greedy and seeded sampling with n choices,
logprobs and echo, two requests decoded together, a prefix reused (a llama's KV cache; a hybrid's recurrent-state
checkpoint), prompt lookup's drafted steps, a prompt longer than the context (the same 400 on every rank, and the
server goes on). The split servers run with TG_COMM_TIMEOUT_S=2 and sit idle for 5 s before the last request: rank 0's
keepalives hold the other rank.
"""
import concurrent.futures
import json
import os
import shutil
import time
import unittest
import urllib.error
import urllib.request

from server_harness import Server, generated_model
from test_hybrid import hybrid_model

WORDS = " ".join(f"w{(i * 7) % 40}" for i in range(20))
MPIEXEC = os.environ.get("TG_MPIEXEC") or shutil.which("mpirun")
# mpirun on this machine only, as root where CI runs as root (tests/CMakeLists.txt's TG_MPI_ENV)
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader,tcp",
           "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def llama_model():
    """A float32 llama (4 heads in 2 KV groups: one group a rank) from gen_synthetic_model.py."""
    return generated_model("llama-f32.gguf", "gen_synthetic_model.py", "--arch", "llama", "--wtype", "F32", "--seed", "5", "--steps", "0")


def post(server, path, body):
    req = urllib.request.Request(server.url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        return json.loads(urllib.request.urlopen(req, timeout=120).read())
    except urllib.error.HTTPError as e:
        return {"status": e.code}


def replies(server, lookup):
    """What a client sees of a fixed series of requests, ids and times left out."""
    out = []
    complete = lambda **kw: post(server, "/v1/completions", {"max_tokens": 6, "temperature": 0, **kw})
    out.append(complete(prompt=WORDS))
    out.append(complete(prompt=WORDS))  # the prefix again
    out.append(complete(prompt=WORDS + " w3 w4", temperature=0.9, seed=11, n=2, logprobs=2, echo=True))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two slots, one batched step a token
        out += list(pool.map(lambda p: complete(prompt=p, max_tokens=8), [WORDS, WORDS.replace("w7", "w9")]))
    if lookup:  # a repetitive prompt: prompt lookup's guesses, checked in drafted steps
        out.append(complete(prompt=" ".join(["w1 w2"] * 4), max_tokens=16))
    out.append(complete(prompt=" ".join(["w5"] * 400)))  # past the context: 400
    for r in out:
        r.pop("id", None), r.pop("created", None)
    return out


def close(a, b, path="reply"):
    """a == b, floats to 1e-4 (logprobs: the split model's sums add in another order)."""
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-4 or f"{path}: {a} != {b}"
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            if (r := close(a[k], b[k], f"{path}.{k}")) is not True:
                return r
        return True
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if (r := close(x, y, f"{path}[{i}]")) is not True:
                return r
        return True
    return a == b or f"{path}: {a!r} != {b!r}"


class TensorParallelServer(unittest.TestCase):
    def check(self, model, *args, lookup=False):
        single = Server(model, "--max-context", "160", "--parallel", "2", *args)
        try:
            want = replies(single, lookup)
        finally:
            self.assertEqual(single.stop(), 0)
        self.assertEqual(want[-1], {"status": 400})
        self.assertTrue(all("choices" in r for r in want[:-1]), want)
        splits = [("--devices", [], ["--devices", "CPU:0,CPU:1"], {})]
        if MPIEXEC:
            splits.append(("mpirun", [MPIEXEC, "-np", "2"], ["--tensor-parallel"], MPI_ENV))
        for name, launcher, how, env in splits:
            with self.subTest(name):
                split = Server(model, "--max-context", "160", "--parallel", "2", *args, *how, launcher=launcher,
                               env={**env, "TG_COMM_TIMEOUT_S": "2"})
                try:
                    got = replies(split, lookup)
                    self.assertIs(close(got, want), True)
                    if lookup:  # the line may reach the log after the reply (mpirun relays the ranks' stderr late)
                        split.wait_for(r"tg-llm: request \d+ .*drafted", timeout=30)
                    time.sleep(5)  # idle past the other rank's bound: only keepalives reach it
                    again = post(split, "/v1/completions", {"prompt": WORDS, "max_tokens": 6, "temperature": 0})
                    again.pop("id"), again.pop("created")
                    self.assertEqual(again["choices"], want[0]["choices"])
                finally:
                    rc = split.stop()
                # mpirun forwards the SIGTERM to its ranks and then exits 1 whatever they do: there, the server's own
                # line says it stopped
                if not launcher:
                    self.assertEqual(rc, 0, "\n".join(split.log))
                self.assertTrue(any("terminated, stopping" in line for line in split.log), "\n".join(split.log))

    def test_llama(self):
        self.check(llama_model(), "--lookup-ngram", "2", "--draft-always", lookup=True)

    def test_hybrid(self):
        self.check(hybrid_model())


if __name__ == "__main__":
    unittest.main()
