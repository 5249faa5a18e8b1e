"""A bounded load test on loopback: 16 clients x 20 requests against one tg-llm --serve (scripted model), a mix
of chat, streamed chat, completions, clients that hang up mid-stream and clients that send garbage, on four
KV-cache slots decoded together. Every good
request must get its exact scripted answer, the server must survive, and its resident memory must come back
within 10% of where it started. The request mix is drawn from a seed (printed; TG_LOAD_SEED repeats it).
"""
import http.client
import json
import os
import random
import socket
import threading
import time
import unittest

from server_harness import Server, scripted_model

CLIENTS, REQUESTS = 16, 20


class Load(unittest.TestCase):
    def setUp(self):
        self.server = Server(scripted_model(), "--max-context", "256", "--queue", "32", "--timeout", "5", "--parallel", "4")
        self.host, port = self.server.url.split("//")[1].split(":")
        self.port = int(port)

    def tearDown(self):
        self.assertEqual(self.server.stop(), 0)

    def post(self, path, body, stream=False):
        c = http.client.HTTPConnection(self.host, self.port, timeout=120)
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read().decode()
        c.close()
        if not stream:
            return r.status, json.loads(data)
        events = [json.loads(l[6:]) for l in data.split("\n\n") if l.startswith("data: ") and l != "data: [DONE]"]
        return r.status, (events, data.rstrip().endswith("data: [DONE]"))

    # ---- one request of each kind; each returns None when the answer is right, else what went wrong

    def chat(self, rng):
        st, r = self.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "xH"}]})
        got = r["choices"][0]["message"]["content"] if st == 200 else r
        return None if got == "Hello, world!" else f"chat: {got!r}"

    def streamed_chat(self, rng):
        st, (events, done) = self.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "R"}],
                                                                "stream": True}, stream=True)
        deltas = [e["choices"][0]["delta"] for e in events if e.get("choices")]
        text = "".join(d.get("content") or "" for d in deltas)
        thought = "".join(d.get("reasoning_content") or "" for d in deltas)
        ok = st == 200 and done and text == "The answer is 4." and thought == "Let me think."
        return None if ok else f"stream: {st} {text!r} {thought!r} done={done}"

    def completion(self, rng):
        n = rng.randint(1, 30)
        st, r = self.post("/v1/completions", {"prompt": "L", "max_tokens": n})
        want = ("lale" * 16)[:2 * n]
        got = r["choices"][0]["text"] if st == 200 else r
        return None if got == want else f"completion {n}: {got!r}"

    def hang_up(self, rng):
        s = socket.create_connection((self.host, self.port), timeout=30)
        body = json.dumps({"messages": [{"role": "user", "content": "L"}], "stream": True, "max_tokens": 200})
        s.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode())
        got = b""
        want = rng.randint(0, 3)
        while got.count(b"data: ") < want:
            part = s.recv(4096)
            if not part:
                break
            got += part
        s.close()

    def garbage(self, rng):
        kind = rng.randrange(4)
        s = socket.create_connection((self.host, self.port), timeout=30)
        try:
            if kind == 0:  # random bytes
                s.sendall(bytes(rng.randrange(256) for _ in range(rng.randint(1, 2000))))
            elif kind == 1:  # a request line and no more (the server's read timeout ends it)
                s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"mess")
            elif kind == 2:  # malformed JSON
                b = b"{\"messages\": [{\"role\": \"user\", \"content\": \"H\"}"
                s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(b), b))
            else:  # a lying Content-Length
                s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n{}")
            s.settimeout(10)
            try:
                s.recv(4096)
            except (socket.timeout, ConnectionError):
                pass
        finally:
            s.close()

    def test_mixed_load(self):
        seed = int(os.environ.get("TG_LOAD_SEED", random.randrange(1 << 30)))
        print(f"\nload test seed {seed} (TG_LOAD_SEED={seed} repeats it)")
        for _ in range(3):  # warm every path once, then take the baseline
            self.assertIsNone(self.chat(random.Random(0)))
            self.assertIsNone(self.streamed_chat(random.Random(0)))
        time.sleep(0.5)
        rss0 = self.server.rss_kb()
        kinds = [self.chat, self.streamed_chat, self.completion, self.hang_up, self.garbage]
        errors, counts, lock = [], {}, threading.Lock()

        def client(i):
            rng = random.Random(seed * 1000 + i)
            for _ in range(REQUESTS):
                k = rng.choices(kinds, weights=[3, 3, 3, 1, 1])[0]
                try:
                    e = k(rng)
                except Exception as ex:  # noqa: BLE001 - any failure of a good request is a finding
                    e = None if k in (self.hang_up, self.garbage) else f"{k.__name__}: {ex!r}"
                with lock:
                    counts[k.__name__] = counts.get(k.__name__, 0) + 1
                    if e:
                        errors.append(e)

        t0 = time.time()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"{CLIENTS * REQUESTS} requests in {time.time() - t0:.1f} s: {counts}")
        self.assertEqual(errors, [])
        self.assertIsNone(self.server.proc.poll(), "tg-llm died under load")
        self.assertIsNone(self.chat(random.Random(0)))  # still answering
        m = self.server.metrics()
        self.assertEqual(m["requests_queued"], 0)
        self.assertGreaterEqual(m["requests_interrupted_total"], 1)
        time.sleep(1.0)
        rss1 = self.server.rss_kb()
        print(f"resident memory: {rss0} kB before, {rss1} kB after ({rss1 / rss0:.3f}x)")
        self.assertLess(rss1, rss0 * 1.10)


if __name__ == "__main__":
    unittest.main()
