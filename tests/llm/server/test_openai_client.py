"""The official openai client (PyPI) against tg-llm --serve.

The scripted model (gen_scripted_model.py) makes every expectation exact: its greedy continuation of the last
prompt character is a fixed script, computed by tg running the model's layers. The real models check that a
real template and vocabulary come through: Gemma 3 270M (the default, no template) and SmolLM2 (a Jinja one).
"""
import http.client
import json
import math
import re
import socket
import time
import unittest
import urllib.request

import openai

from server_harness import Server, installed_model, scripted_model

KEY = "sk-test-key"


class ScriptedModel(unittest.TestCase):
    ARGS = ()

    @classmethod
    def setUpClass(cls):
        cls.server = Server(scripted_model(), "--max-context", "256", "--api-key", KEY, *cls.ARGS)
        cls.client = openai.OpenAI(base_url=cls.server.url + "/v1", api_key=KEY, max_retries=0, timeout=60)
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        assert rc == 0, f"tg-llm exited with {rc}"

    def chat(self, content, **kw):
        return self.client.chat.completions.create(model=self.model, messages=[{"role": "user", "content": content}], **kw)

    def guessed_la_le(self):
        """120 greedy tokens of "la le ...": the log's length before, /metrics after, and the guesses drafted and
        accepted meanwhile. Guesses are made only while one job runs: a job an earlier test left (a stream whose
        client went away, still winding down on a loaded machine) is waited for first."""
        for _ in range(300):
            m = self.server.metrics()
            if m["requests_running"] == 0 and m["requests_queued"] == 0:
                break
            time.sleep(0.1)
        before = self.server.metrics()
        start = len(self.server.log)
        r = self.client.completions.create(model=self.model, prompt="L", max_tokens=120)
        self.assertEqual((r.choices[0].text, r.choices[0].finish_reason), ("lale" * 60, "length"))
        after = self.server.metrics()
        drafted = after["draft_tokens_total"] - before["draft_tokens_total"]
        accepted = after["draft_tokens_accepted_total"] - before["draft_tokens_accepted_total"]
        return start, after, drafted, accepted

    def stream(self, content, **kw):
        parts = {"content": "", "reasoning": "", "tools": [], "finish": None, "usage": None, "chunks": 0}
        for c in self.chat(content, stream=True, **kw):
            parts["chunks"] += 1
            if c.usage:
                parts["usage"] = c.usage
            if not c.choices:
                continue
            d = c.choices[0].delta
            parts["content"] += d.content or ""
            parts["reasoning"] += getattr(d, "reasoning_content", None) or (d.model_extra or {}).get("reasoning_content") or ""
            parts["tools"] += d.tool_calls or []
            parts["finish"] = c.choices[0].finish_reason or parts["finish"]
        return parts

    def test_models_list(self):
        self.assertEqual(self.model, "scripted")

    def test_content_and_usage(self):
        r = self.chat("H")
        self.assertEqual(r.choices[0].message.content, "Hello, world!")
        self.assertEqual(r.choices[0].finish_reason, "stop")
        self.assertEqual(r.usage.prompt_tokens, 2)  # <s> H
        self.assertEqual(r.usage.completion_tokens, 2)  # "Hello, " "world!" (the end token is not counted)
        self.assertEqual(r.usage.total_tokens, 4)

    def test_streaming_content_and_usage(self):
        s = self.stream("H", stream_options={"include_usage": True})
        self.assertEqual(s["content"], "Hello, world!")
        self.assertEqual(s["finish"], "stop")
        self.assertEqual(s["usage"].completion_tokens, 2)
        self.assertGreaterEqual(s["chunks"], 4)  # role, two pieces, finish (+ usage)
        self.assertIsNone(self.stream("H")["usage"])

    def test_content_parts(self):
        r = self.client.chat.completions.create(model=self.model, messages=[
            {"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "H"}]}])
        self.assertEqual(r.choices[0].message.content, "Hello, world!")

    def test_length_stop(self):
        r = self.chat("L", max_tokens=5)
        self.assertEqual(r.choices[0].message.content, "lalelalela")
        self.assertEqual(r.choices[0].finish_reason, "length")
        r = self.chat("L", max_completion_tokens=3)
        self.assertEqual(r.choices[0].message.content, "lalela")
        s = self.stream("L", max_tokens=4)
        self.assertEqual((s["content"], s["finish"]), ("lalelale", "length"))

    def test_stop_strings(self):
        self.assertEqual(self.chat("L", max_tokens=20, stop="ela").choices[0].message.content, "lal")  # across tokens
        r = self.chat("L", max_tokens=20, stop=["xyz", "lalela"])
        self.assertEqual((r.choices[0].message.content, r.choices[0].finish_reason), ("", "stop"))
        self.assertEqual(self.stream("H", stop=["world"])["content"], "Hello, ")

    def test_reasoning_split(self):
        m = self.chat("R").choices[0].message
        self.assertEqual(m.content, "The answer is 4.")
        self.assertEqual(m.model_extra["reasoning_content"], "Let me think.")
        s = self.stream("R")
        self.assertEqual((s["reasoning"], s["content"]), ("Let me think.", "The answer is 4."))

    def test_template_opens_think(self):
        # enable_thinking makes the template end the prompt with <think>: the reply starts inside reasoning
        m = self.chat("H", extra_body={"chat_template_kwargs": {"enable_thinking": True}}).choices[0].message
        self.assertEqual(m.model_extra["reasoning_content"], "Let me think.")
        self.assertEqual(m.content, "The answer is 4.")
        # a constrained reply closes the open block first: the JSON is the content, not reasoning
        m = self.chat("H", extra_body={"chat_template_kwargs": {"enable_thinking": True}},
                      response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": {"enum": ["yes"]}}}).choices[0].message
        self.assertEqual(m.content, '"yes"')
        self.assertFalse(m.model_extra.get("reasoning_content"))

    def test_template_kwargs_cannot_override_messages(self):
        with self.assertRaises(openai.BadRequestError) as e:
            self.chat("H", extra_body={"chat_template_kwargs": {"messages": [{"role": "user", "content": "R"}]}})
        self.assertIn("messages", str(e.exception))

    def test_tools_reach_the_template(self):
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
        plain, with_tools = self.chat("H"), self.chat("H", tools=tools)
        # "[tools: get_weather]" is 20 characters, one token each in this vocabulary
        self.assertEqual(with_tools.usage.prompt_tokens - plain.usage.prompt_tokens, len("[tools: get_weather]"))

    def test_tool_call(self):
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
        r = self.chat("T", tools=tools)
        c = r.choices[0]
        self.assertEqual(c.finish_reason, "tool_calls")
        self.assertEqual(len(c.message.tool_calls), 1)
        call = c.message.tool_calls[0]
        self.assertEqual(call.type, "function")
        self.assertEqual(call.function.name, "get_weather")
        self.assertEqual(json.loads(call.function.arguments), {"city": "Paris"})
        self.assertTrue(call.id.startswith("call_"))
        s = self.stream("T", tools=tools)
        self.assertEqual(s["finish"], "tool_calls")
        self.assertEqual([t.function.name for t in s["tools"]], ["get_weather"])

    def test_unparsable_tool_call_is_content(self):
        c = self.chat("B").choices[0]
        self.assertEqual(c.finish_reason, "stop")
        self.assertFalse(c.message.tool_calls)
        self.assertEqual(c.message.content, '<tool_call>{"name": oops</tool_call>')

    def test_completions(self):
        r = self.client.completions.create(model=self.model, prompt="L", max_tokens=3)
        self.assertEqual((r.choices[0].text, r.choices[0].finish_reason), ("lalela", "length"))
        text = "".join(c.choices[0].text for c in self.client.completions.create(model=self.model, prompt="H", stream=True))
        self.assertEqual(text, "Hello, world!")
        # raw completions keep the tags as text
        self.assertEqual(self.client.completions.create(model=self.model, prompt="R").choices[0].text,
                         "<think>Let me think.</think>The answer is 4.")

    def check_entries(self, entries, top):
        """OpenAI's logprobs entries: each token its bytes, a log-probability, and its `top` likeliest (descending,
        as a distribution can have them: each <= 0, their probabilities summing to at most 1)."""
        for e in entries:
            self.assertEqual(bytes(e.bytes).decode("utf-8", "replace"), e.token)
            self.assertLessEqual(e.logprob, 0.0)
            self.assertEqual(len(e.top_logprobs), top)
            lps = [t.logprob for t in e.top_logprobs]
            self.assertEqual(lps, sorted(lps, reverse=True))
            self.assertLessEqual(sum(math.exp(x) for x in lps), 1.0 + 1e-9)
            if top:  # greedy: the chosen token is the likeliest
                self.assertEqual((e.top_logprobs[0].token, e.top_logprobs[0].logprob), (e.token, e.logprob))

    def test_logprobs_chat(self):
        r = self.chat("H", logprobs=True, top_logprobs=3)
        entries = r.choices[0].logprobs.content
        self.assertEqual("".join(e.token for e in entries), "Hello, world!")
        self.check_entries(entries, 3)
        # streamed: the same entries, each with the chunk of its text
        got = []
        for c in self.chat("H", logprobs=True, top_logprobs=3, stream=True):
            if c.choices and c.choices[0].logprobs and c.choices[0].logprobs.content:
                got += c.choices[0].logprobs.content
        self.assertEqual([(e.token, e.logprob) for e in got], [(e.token, e.logprob) for e in entries])
        self.assertIsNone(self.chat("H").choices[0].logprobs)
        self.check_entries(self.chat("H", logprobs=True).choices[0].logprobs.content, 0)

    def test_logprobs_completions_and_echo(self):
        r = self.client.completions.create(model=self.model, prompt="L", max_tokens=3, logprobs=2)
        lp = r.choices[0].logprobs
        self.assertEqual("".join(lp.tokens), r.choices[0].text)
        self.assertEqual(len(lp.token_logprobs), r.usage.completion_tokens)
        self.assertEqual([max(d.values()) for d in lp.top_logprobs], lp.token_logprobs)  # greedy
        self.assertEqual(lp.text_offset, [sum(len(t.encode()) for t in lp.tokens[:i]) for i in range(len(lp.tokens))])
        # echo: the prompt's tokens first (the first without a log-probability), text = prompt + completion
        e = self.client.completions.create(model=self.model, prompt="L", max_tokens=3, logprobs=2, echo=True)
        self.assertEqual(e.choices[0].text, "L" + r.choices[0].text)
        n = e.usage.prompt_tokens
        self.assertIsNone(e.choices[0].logprobs.token_logprobs[0])
        self.assertEqual(e.choices[0].logprobs.tokens[n:], lp.tokens)
        # offsets into the echoed text: SentencePiece's prefix space before "L" is in no text (the completion at 1)
        self.assertEqual(e.choices[0].logprobs.text_offset[n:], [1 + o for o in lp.text_offset])
        # scoring prompt + completion with max_tokens 0 (what evaluation harnesses send) gives the generated tokens'
        # log-probabilities again, from the prefill's logits instead of the decode steps'
        s = self.client.completions.create(model=self.model, prompt="L" + r.choices[0].text, max_tokens=0, logprobs=0, echo=True)
        self.assertEqual(s.usage.completion_tokens, 0)
        self.assertEqual(s.choices[0].text, "L" + r.choices[0].text)
        scored = s.choices[0].logprobs
        self.assertEqual(scored.tokens[n:], lp.tokens)
        for a, b in zip(scored.token_logprobs[n:], lp.token_logprobs):
            self.assertAlmostEqual(a, b, delta=1e-3)
        # a prompt of token ids is scored the same
        ids = self.client.completions.create(model=self.model, prompt=self.tokens("L" + r.choices[0].text),
                                             max_tokens=0, logprobs=0, echo=True)
        self.assertEqual(ids.choices[0].logprobs.token_logprobs, scored.token_logprobs)

    def test_tokenize_detokenize(self):
        def post(path, body):
            req = urllib.request.Request(self.server.url + path, data=json.dumps(body).encode(),
                                         headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
            return json.loads(urllib.request.urlopen(req).read())
        text = "Hello, world! <think>"
        ids = post("/tokenize", {"content": text})["tokens"]
        self.assertTrue(ids and all(isinstance(i, int) for i in ids))
        self.assertEqual(post("/detokenize", {"tokens": ids})["content"], text)
        pieces = post("/tokenize", {"content": text, "with_pieces": True})["tokens"]
        self.assertEqual([p["id"] for p in pieces], ids)
        self.assertEqual("".join(p["piece"] for p in pieces), text)
        # the prompt a completion counts is /tokenize's with add_special
        r = self.client.completions.create(model=self.model, prompt=text, max_tokens=1)
        self.assertEqual(r.usage.prompt_tokens, len(self.tokens(text)))

    def tokens(self, text):
        req = urllib.request.Request(self.server.url + "/tokenize", data=json.dumps({"content": text, "add_special": True}).encode(),
                                     headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
        return json.loads(urllib.request.urlopen(req).read())["tokens"]

    def test_sampling_follows_the_script(self):
        r = self.chat("H", temperature=1.0, top_p=0.9, seed=7)
        self.assertEqual(r.choices[0].message.content, "Hello, world!")

    def test_prefix_reuse(self):
        before = self.server.metrics()
        start = len(self.server.log)
        p = "The quick brown fox jumps over the lazy dog. " * 3
        first = self.client.completions.create(model=self.model, prompt=p + "H", max_tokens=1)
        r = self.client.completions.create(model=self.model, prompt=p + "Hx", max_tokens=1)
        n = first.usage.prompt_tokens  # the whole first prompt is cached; only x is new
        self.assertEqual(r.usage.prompt_tokens, n + 1)
        self.assertEqual(r.usage.prompt_tokens_details.cached_tokens, n)
        after = self.server.metrics()
        self.assertEqual(after["prompt_tokens_cached_total"] - before["prompt_tokens_cached_total"],
                         first.usage.prompt_tokens_details.cached_tokens + n)
        lines = self.server.request_lines(start, at_least=2)
        self.assertRegex(lines[-1], rf"cached {n}, new 1, prefill [0-9.]+ tok/s, decode [0-9.]+ tok/s, "
                                    r"\d+ tokens, [0-9.]+ s total")

    def test_disconnect_mid_stream_then_next_request(self):
        start = len(self.server.log)
        before = self.server.metrics()["requests_interrupted_total"]
        s = socket.create_connection(("127.0.0.1", int(self.server.url.rsplit(":", 1)[1])))
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": "L"}], "stream": True,
                           "max_tokens": 200})
        s.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
        got = b""
        while got.count(b"data: ") < 4:  # a few tokens arrived
            got += s.recv(4096)
        s.close()
        line = self.server.wait_for(r"request \d+ chat \(slot \d+\): .* interrupted", 30, start)
        tokens = int(line.split(" tokens,")[0].rsplit(" ", 1)[1])
        self.assertLess(tokens, 200)
        t0 = time.time()
        self.assertEqual(self.chat("H").choices[0].message.content, "Hello, world!")
        self.assertLess(time.time() - t0, 5)  # the slot was freed: no wait for the abandoned generation
        self.assertEqual(self.server.metrics()["requests_interrupted_total"], before + 1)


class ScriptedModelParallel(ScriptedModel):
    """Everything above again with three KV-cache slots decoded together, plus streams that overlap."""
    ARGS = ("--parallel", "3")

    def test_concurrent_streams_get_their_own_tokens(self):
        import threading
        results = {}
        start = len(self.server.log)

        def run(prompt, **kw):
            results[prompt] = self.stream(prompt, **kw)

        # the long one first: the others start once it has produced text, so they arrive while it decodes
        stream = iter(self.chat("L", max_tokens=240, stream=True))
        text, finish = "", None
        while not text:
            c = next(stream)
            text += (c.choices[0].delta.content or "") if c.choices else ""
        threads = [threading.Thread(target=run, args=(p,)) for p in ("H", "R")]
        for t in threads:
            t.start()
        for c in stream:
            if c.choices:
                text += c.choices[0].delta.content or ""
                finish = c.choices[0].finish_reason or finish
        results["L"] = {"content": text, "finish": finish}
        for t in threads:
            t.join()
        self.assertEqual(results["H"]["content"], "Hello, world!")
        self.assertEqual((results["R"]["reasoning"], results["R"]["content"]), ("Let me think.", "The answer is 4."))
        self.assertEqual((results["L"]["content"], results["L"]["finish"]), ("lale" * 120, "length"))
        slots = {int(m) for m in re.findall(r"\(slot (\d)\)", "\n".join(self.server.request_lines(start, at_least=3)))}
        self.assertGreater(len(slots), 1, "the requests did not run in different slots")


    def test_n_choices(self):
        # one prefill, three continuations (the script wins at any temperature): each choice its own reply
        r = self.chat("H", n=3, temperature=0.8, seed=7)
        self.assertEqual([(c.index, c.message.content, c.finish_reason) for c in r.choices], [(i, "Hello, world!", "stop") for i in range(3)])
        one = self.chat("H", temperature=0.8)
        self.assertEqual(r.usage.prompt_tokens, one.usage.prompt_tokens)
        self.assertEqual(r.usage.completion_tokens, 3 * one.usage.completion_tokens)
        text = {0: "", 1: "", 2: ""}
        finish = {}
        for c in self.chat("H", n=3, stream=True):
            for ch in c.choices:
                text[ch.index] += ch.delta.content or ""
                if ch.finish_reason:
                    finish[ch.index] = ch.finish_reason
        self.assertEqual((text, finish), ({i: "Hello, world!" for i in range(3)}, {i: "stop" for i in range(3)}))
        c = self.client.completions.create(model=self.model, prompt="L", max_tokens=4, n=2)
        self.assertEqual([x.text for x in c.choices], ["lalelale"] * 2)
        for n in [4, 129]:  # more than the slots, more than OpenAI's bound
            with self.assertRaises(openai.BadRequestError) as e:
                self.chat("H", n=n)
            self.assertEqual(e.exception.body["param"], "n")
        self.assertEqual(self.chat("H").choices[0].message.content, "Hello, world!")  # still serving


class ScriptedModelLookup(ScriptedModel):
    """Everything above again with prompt lookup decoding: greedy requests guess their next tokens from the context
    and check them in one batched step; the replies stay what they were. --draft-always: every guess is checked
    whatever the timed costs say (under a loaded machine they can say guessing does not pay: 0 drafted)."""
    ARGS = ("--lookup-ngram", "2", "--draft-max", "5", "--draft-always")

    def test_guesses_are_checked_and_counted(self):
        start, after, drafted, accepted = self.guessed_la_le()
        # "la le la le": from the third token on every guess is right, 5 a step (6 tokens: ~100 of 120 guessed)
        self.assertGreaterEqual(accepted, 90)
        self.assertLessEqual(accepted, drafted)
        # the request's log line (read from tg-llm's stderr by a thread: waited for, not assumed there)
        self.server.wait_for(rf"^tg-llm: request \d+.*drafted {drafted}, accepted {accepted}, finish length", start=start)
        # sampled requests (and those asking for logprobs) decode one token a step
        self.client.completions.create(model=self.model, prompt="L", max_tokens=20, temperature=1.0, seed=3)
        self.assertEqual(self.server.metrics()["draft_tokens_total"], after["draft_tokens_total"])


class ScriptedModelDraft(ScriptedModel):
    """Everything above again with a draft model (--draft-model: the scripted model itself, whose guesses are all
    right); the replies stay what they were. --draft-always: every step checks 5 guesses (left to the engine, a draft
    model as large as the model would not pay, and nothing would be checked). A draft model that guesses wrong and
    one with another vocabulary."""
    ARGS = ("--draft-model", scripted_model(), "--draft-max", "5", "--draft-always")

    def test_guesses_are_checked_and_counted(self):
        start, after, drafted, accepted = self.guessed_la_le()
        # the draft is the model itself: every guess is right, 5 per step of 6 tokens (the last step's guesses past
        # the 120 tokens' budget are checked too)
        self.assertEqual(accepted, drafted)
        self.assertGreaterEqual(drafted, 100)
        # the request's log line (read from tg-llm's stderr by a thread: waited for, not assumed there)
        self.server.wait_for(rf"^tg-llm: request \d+.*drafted {drafted}, accepted {accepted}, finish length", start=start)

    def test_wrong_guesses_change_nothing(self):
        server = Server(scripted_model(), "--max-context", "256", "--draft-model", scripted_model("wrong"), "--draft-max", "4", "--draft-always")
        try:
            client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=60)
            start = len(server.log)
            r = client.completions.create(model=client.models.list().data[0].id, prompt="L", max_tokens=60)
            self.assertEqual(r.choices[0].text, "lale" * 30)
            m = server.metrics()
            self.assertGreater(m["draft_tokens_total"], m["draft_tokens_accepted_total"])
            server.wait_for(rf"^tg-llm: request \d+.*drafted {m['draft_tokens_total']}, accepted {m['draft_tokens_accepted_total']}, finish length", start=start)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_another_vocabulary_is_refused(self):
        import subprocess
        from server_harness import TG_LLM
        p = subprocess.run([TG_LLM, "--model", scripted_model(), "--serve", "0", "--draft-model", scripted_model("other-vocab")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("another vocabulary", p.stderr)

    def test_option_conflicts_are_one_line(self):
        import subprocess
        from server_harness import TG_LLM
        for extra, message in ((("--draft-always",), "--draft-always checks the guesses of --draft-model or --lookup-ngram"),
                               (("--draft-model", scripted_model(), "--lookup-ngram", "3"), "two sources of guesses"),
                               (("--lookup-ngram", "3", "--draft-max", "0"), "--draft-max must be in [1, 31]")):
            p = subprocess.run([TG_LLM, "--model", scripted_model(), "--serve", "0", *extra], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 1, extra)
            self.assertIn(message, p.stderr)


class BadInput(unittest.TestCase):
    """Each bad request gets the right status and an OpenAI-style error body; the server keeps serving."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(scripted_model(), "--max-context", "64", "--api-key", KEY, "--queue", "2")
        cls.host, cls.port = cls.server.url.split("//")[1].split(":")
        cls.client = openai.OpenAI(base_url=cls.server.url + "/v1", api_key=KEY, max_retries=0, timeout=60)

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        assert rc == 0, f"tg-llm exited with {rc}"

    def raw(self, method, path, body=None, key=KEY, headers=None):
        c = http.client.HTTPConnection(self.host, int(self.port), timeout=30)
        h = dict(headers or {})
        if key:
            h["Authorization"] = "Bearer " + key
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def error(self, status, method, path, body=None, **kw):
        got, data = self.raw(method, path, body, **kw)
        self.assertEqual(got, status, data)
        e = json.loads(data)["error"]
        self.assertIsInstance(e["message"], str)
        self.assertTrue(e["message"])
        self.assertIsInstance(e["type"], str)
        return e

    def chat_body(self, **fields):
        return json.dumps({"messages": [{"role": "user", "content": "H"}], **fields})

    def test_malformed_json(self):
        self.error(400, "POST", "/v1/chat/completions", "{\"messages\": [")
        self.error(400, "POST", "/v1/chat/completions", "\xff\xfe")
        self.error(400, "POST", "/v1/chat/completions", "[1, 2]")

    def test_wrong_types(self):
        for field, value in [("temperature", "hot"), ("temperature", 5), ("top_p", -1), ("max_tokens", "10"),
                             ("max_tokens", 0), ("stream", "yes"), ("stop", 3), ("stop", [1]), ("seed", 1.5),
                             ("n", "2"), ("n", 0), ("stream_options", 1), ("tools", {}), ("chat_template_kwargs", [])]:
            e = self.error(400, "POST", "/v1/chat/completions", self.chat_body(**{field: value}))
            self.assertEqual(e["param"], field, (field, value))
        for messages in [None, "hi", [1], [{"content": "x"}], [{"role": "robot", "content": "x"}],
                         [{"role": "user", "content": 3}], [{"role": "user"}],
                         [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]]:
            self.error(400, "POST", "/v1/chat/completions", json.dumps({"messages": messages}))
        self.error(400, "POST", "/v1/completions", json.dumps({"prompt": 5}))

    def test_logprobs_bounds(self):
        for fields in [{"logprobs": True, "top_logprobs": 21}, {"top_logprobs": 2}, {"logprobs": True, "top_logprobs": -1},
                       {"logprobs": 1}]:
            self.error(400, "POST", "/v1/chat/completions", self.chat_body(**fields))
        for fields in [{"logprobs": 21}, {"logprobs": True}, {"echo": "yes"}, {"max_tokens": 0},
                       {"prompt": [1, 10**9]}, {"prompt": [1, -2]}, {"prompt": [1, "x"]}]:
            e = self.error(400, "POST", "/v1/completions", json.dumps({"prompt": "H", **fields}))
            self.assertIn(e["param"], list(fields), fields)

    def test_tokenize_errors(self):
        for body in ["[1]", "{}", json.dumps({"content": 3}), json.dumps({"content": "x", "with_pieces": 1}), "{"]:
            self.error(400, "POST", "/tokenize", body)
        for body in [{}, {"tokens": "1"}, {"tokens": [1, 10**9]}, {"tokens": [-1]}, {"tokens": [1.5]}]:
            e = self.error(400, "POST", "/detokenize", json.dumps(body))
        self.assertEqual(e["param"], "tokens")
        self.error(405, "GET", "/tokenize")
        self.error(401, "POST", "/tokenize", json.dumps({"content": "x"}), key=None)

    def test_empty_messages(self):
        e = self.error(400, "POST", "/v1/chat/completions", json.dumps({"messages": []}))
        self.assertIn("empty", e["message"])

    def test_unknown_model(self):
        e = self.error(404, "POST", "/v1/chat/completions", self.chat_body(model="gpt-9"))
        self.assertEqual(e["code"], "model_not_found")
        with self.assertRaises(openai.NotFoundError):
            self.client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "H"}])

    def test_prompt_longer_than_context(self):
        e = self.error(400, "POST", "/v1/completions", json.dumps({"prompt": "x" * 100}))
        self.assertEqual(e["code"], "context_length_exceeded")

    def test_body_too_large(self):
        self.error(413, "POST", "/v1/chat/completions", self.chat_body(pad="x" * (9 << 20)))

    def test_unknown_route_and_method(self):
        self.error(404, "GET", "/v2/whatever")
        self.error(404, "POST", "/v1/embeddings", "{}")
        self.error(405, "GET", "/v1/chat/completions")
        self.error(405, "DELETE", "/v1/models")

    def test_api_key(self):
        self.error(401, "GET", "/v1/models", key=None)
        self.error(401, "POST", "/v1/chat/completions", self.chat_body(), key="wrong")
        with self.assertRaises(openai.AuthenticationError):
            openai.OpenAI(base_url=self.server.url + "/v1", api_key="nope", max_retries=0).models.list()
        self.assertEqual(self.raw("GET", "/health", key=None)[0], 200)  # open to all, as is the chat page
        self.assertEqual(self.raw("GET", "/", key=None)[0], 200)

    def test_queue_full_is_503(self):
        # 16 requests at once against one running and two waiting (--queue 2): the rest are refused with 503, the
        # accepted ones are answered in full
        import threading
        body = json.dumps({"messages": [{"role": "user", "content": "L"}], "max_tokens": 40})
        barrier, results = threading.Barrier(16), []

        def one():
            barrier.wait()
            results.append(self.raw("POST", "/v1/chat/completions", body))

        threads = [threading.Thread(target=one) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = sorted(st for st, _ in results)
        self.assertIn(503, statuses)
        self.assertGreaterEqual(statuses.count(200), 3)
        for st, data in results:
            if st == 200:
                self.assertEqual(json.loads(data)["choices"][0]["message"]["content"], "la" + "lela" * 19 + "le")
            else:
                self.assertEqual(st, 503)
                self.assertIn("busy", json.loads(data)["error"]["message"])
        self.assertGreater(self.server.metrics()["requests_rejected_total"], 0)

    def test_stalled_clients_do_not_block_others(self):
        # clients that send half a request, or ask for a stream and never read it, hold a connection each; the
        # others are served meanwhile, and the stalled ones are dropped after --timeout
        port = int(self.port)
        stalled = []
        for i in range(6):
            s = socket.create_connection((self.host, port))
            if i % 2:
                s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 500\r\n\r\n{\"messages\"")
            else:
                body = json.dumps({"messages": [{"role": "user", "content": "L"}], "stream": True, "max_tokens": 50})
                s.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer {KEY}\r\n"
                           f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
            stalled.append(s)
        # the streams nobody reads still finish generating (they do not hold the model): the queue drains
        deadline = time.time() + 10
        while time.time() < deadline:
            m = self.server.metrics()
            if m["requests_queued"] == 0 and m["requests_running"] == 0:
                break
            time.sleep(0.05)
        t0 = time.time()
        for _ in range(3):
            self.assertEqual(self.client.chat.completions.create(
                model="scripted", messages=[{"role": "user", "content": "H"}]).choices[0].message.content, "Hello, world!")
        self.assertLess(time.time() - t0, 5)
        for s in stalled:
            s.close()

    def test_still_serving(self):
        self.assertEqual(self.client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": "H"}]).choices[0].message.content, "Hello, world!")


class RealModels(unittest.TestCase):
    def test_default_model_answers(self):
        server = Server(installed_model("gemma"), "--max-context", "512")
        try:
            c = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300)
            r = c.completions.create(model=c.models.list().data[0].id, prompt="Question: What is the capital of France?\nAnswer:",
                                     max_tokens=8, temperature=0)
            self.assertIn("Paris", r.choices[0].text)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_smollm_chat_template(self):
        server = Server(installed_model("smollm"), "--max-context", "512")
        try:
            c = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300)
            model = c.models.list().data[0].id
            r = c.chat.completions.create(model=model, temperature=0, max_tokens=24, messages=[
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "What is the capital of France? Answer in one word."}])
            self.assertIn("Paris", r.choices[0].message.content)
            # Asked plainly, the 135M model's first token is a near tie (llama.cpp's logits: "The" 23.947, "La"
            # 23.861), which any rounding difference flips; asked for one word, the greedy tokens lead by >= 0.6 logits
            # each (llama.cpp). Without the system prompt, plainly, it lists Paris landmarks instead.
            text = "".join(ch.choices[0].delta.content or "" for ch in c.chat.completions.create(
                model=model, temperature=0, max_tokens=24, stream=True,
                messages=[{"role": "user", "content": "What is the capital of France? Answer in one word."}]) if ch.choices)
            self.assertIn("Paris", text)
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
