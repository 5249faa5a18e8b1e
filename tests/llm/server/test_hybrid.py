"""tg-llm --serve on a hybrid (a synthetic qwen35: gated delta nets between attention layers, written by
tests/llm/gen_synthetic_hybrid.py): the same greedy prompt twice reuses all but its last token through the
recurrent-state checkpoint (usage.prompt_tokens_details.cached_tokens) and answers the same; a prompt that extends
it reuses that prefix; two requests decoded together in two slots each answer as they do alone.
"""
import concurrent.futures
import json
import unittest
import urllib.request

from server_harness import Server, generated_model

WORDS = " ".join(f"w{(i * 7) % 40}" for i in range(20))


def hybrid_model():
    return generated_model("hybrid.gguf", "gen_synthetic_hybrid.py", "--wtype", "F32", "--seed", "5", "--steps", "0")


class Hybrid(unittest.TestCase):
    def setUp(self):
        self.server = Server(hybrid_model(), "--max-context", "160", "--parallel", "2")

    def tearDown(self):
        self.assertEqual(self.server.stop(), 0)

    def complete(self, prompt):
        body = json.dumps({"prompt": prompt, "max_tokens": 6, "temperature": 0}).encode()
        req = urllib.request.Request(self.server.url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
        d = json.loads(urllib.request.urlopen(req, timeout=120).read())
        return d["choices"][0]["text"], d["usage"]

    def test_prefix_reuse_through_checkpoints(self):
        text, usage = self.complete(WORDS)
        self.assertEqual(usage["prompt_tokens_details"]["cached_tokens"], 0)
        again, usage2 = self.complete(WORDS)
        self.assertEqual(usage2["prompt_tokens_details"]["cached_tokens"], usage2["prompt_tokens"] - 1)
        self.assertEqual(again, text, "the same prompt from the checkpoint before its last token")
        longer, usage3 = self.complete(WORDS + " w3 w4")
        self.assertEqual(usage3["prompt_tokens_details"]["cached_tokens"], usage2["prompt_tokens"] - 1)
        self.assertGreater(usage3["prompt_tokens"], usage2["prompt_tokens"])

    def test_two_slots_decode_together(self):
        a, b = WORDS, WORDS.replace("w7", "w9")
        alone = [self.complete(p)[0] for p in (a, b)]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            together = list(pool.map(lambda p: self.complete(p)[0], [a, b]))
        self.assertEqual(together, alone)


if __name__ == "__main__":
    unittest.main()
