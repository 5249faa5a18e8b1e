"""Anthropic's official client (PyPI `anthropic`) against tg-llm --serve's /v1/messages, on the scripted model
(gen_scripted_model.py: the last prompt character picks a fixed reply), so every expectation is exact."""
import http.client
import json
import unittest

import anthropic

from server_harness import Server, scripted_model

KEY = "sk-ant-test"
WEATHER = {"name": "get_weather", "description": "The weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


class Messages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(scripted_model(), "--max-context", "256", "--api-key", KEY)
        cls.client = anthropic.Anthropic(base_url=cls.server.url, api_key=KEY, max_retries=0, timeout=60)

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        assert rc == 0, f"tg-llm exited with {rc}"

    def create(self, content, **kw):
        kw.setdefault("max_tokens", 64)
        return self.client.messages.create(model="claude-any-name", messages=[{"role": "user", "content": content}], **kw)

    def stream(self, content, **kw):
        kw.setdefault("max_tokens", 64)
        with self.client.messages.stream(model="claude-any-name", messages=[{"role": "user", "content": content}], **kw) as s:
            texts = [t for t in s.text_stream]
            return s.get_final_message(), "".join(texts)

    def blocks(self, message):
        return [(b.type, getattr(b, "text", None) or getattr(b, "thinking", None) or (b.name, b.input)) for b in message.content]

    def test_text_and_usage(self):
        r = self.create("H")
        self.assertEqual(self.blocks(r), [("text", "Hello, world!")])
        self.assertEqual((r.type, r.role, r.stop_reason, r.model), ("message", "assistant", "end_turn", "claude-any-name"))
        self.assertTrue(r.id.startswith("msg_"))
        self.assertEqual(r.usage.output_tokens, 2)
        m, text = self.stream("H")
        self.assertEqual((text, self.blocks(m), m.stop_reason), ("Hello, world!", [("text", "Hello, world!")], "end_turn"))
        self.assertEqual(m.usage.output_tokens, 2)

    def test_thinking_blocks(self):
        r = self.create("R")
        self.assertEqual(self.blocks(r), [("thinking", "Let me think."), ("text", "The answer is 4.")])
        m, text = self.stream("R")
        self.assertEqual((self.blocks(m), text), (self.blocks(r), "The answer is 4."))

    def test_tool_use_and_result(self):
        r = self.create("T", tools=[WEATHER])
        self.assertEqual(self.blocks(r), [("tool_use", ("get_weather", {"city": "Paris"}))])
        self.assertEqual(r.stop_reason, "tool_use")
        self.assertTrue(r.content[0].id.startswith("toolu_"))
        m, _ = self.stream("T", tools=[WEATHER])
        self.assertEqual((self.blocks(m), m.stop_reason), (self.blocks(r), "tool_use"))
        # the tool's result goes back as a tool_result block; the template sees its text (last character H)
        follow = self.client.messages.create(model="m", max_tokens=64, tools=[WEATHER], messages=[
            {"role": "user", "content": "T"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": r.content[0].id, "name": "get_weather", "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": r.content[0].id, "content": "Sunny. H"}]}])
        self.assertEqual(self.blocks(follow), [("text", "Hello, world!")])

    def test_forced_tool_use(self):
        for choice in [{"type": "any"}, {"type": "tool", "name": "get_weather"}]:
            r = self.create("T", tools=[WEATHER], tool_choice=choice)
            self.assertEqual((self.blocks(r), r.stop_reason), ([("tool_use", ("get_weather", {"city": "Paris"}))], "tool_use"))

    def test_system_stop_and_length(self):
        for system in ["Be brief.", [{"type": "text", "text": "Be brief."}]]:
            self.assertEqual(self.blocks(self.create("H", system=system)), [("text", "Hello, world!")])
        r = self.create("H", stop_sequences=["world"])
        self.assertEqual((self.blocks(r), r.stop_reason, r.stop_sequence), ([("text", "Hello, ")], "stop_sequence", "world"))
        r = self.create("L", max_tokens=3)
        self.assertEqual((self.blocks(r), r.stop_reason), ([("text", "lalela")], "max_tokens"))

    def test_cached_prompt_is_reported(self):
        self.create("The same long prompt, asked twice. H")
        r = self.create("The same long prompt, asked twice. H")
        self.assertGreater(r.usage.cache_read_input_tokens, 0)

    def raw(self, body, key=KEY):
        host, port = self.server.url.split("//")[1].split(":")
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        c.request("POST", "/v1/messages", body=json.dumps(body) if not isinstance(body, str) else body,
                  headers={"x-api-key": key, "content-type": "application/json"})
        r = c.getresponse()
        data = json.loads(r.read())
        c.close()
        return r.status, data

    def test_bad_requests(self):
        ok = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "H"}]}
        for change, param in [({"max_tokens": None}, "max_tokens"), ({"max_tokens": 0}, "max_tokens"),
                              ({"temperature": 1.5}, "temperature"), ({"messages": []}, "messages"),
                              ({"messages": [{"role": "system", "content": "x"}]}, "role"),
                              ({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}, "image"),
                              ({"system": 3}, "system"), ({"tool_choice": {"type": "any"}}, "tool_choice"),
                              ({"stop_sequences": "x"}, "stop_sequences"), ({"thinking": {"type": "maybe"}}, "thinking")]:
            body = {**ok, **change}
            body = {k: v for k, v in body.items() if v is not None}
            status, data = self.raw(body)
            self.assertEqual(status, 400, (change, data))
            self.assertEqual(data["type"], "error")
            self.assertEqual(data["error"]["type"], "invalid_request_error")
            self.assertIn(param, data["error"]["message"], change)
        status, data = self.raw("{not json")
        self.assertEqual((status, data["type"]), (400, "error"))
        # the route's own errors are in Anthropic's shape too: a wrong key, a wrong method
        status, data = self.raw(ok, key="wrong")
        self.assertEqual((status, data["type"], data["error"]["type"]), (401, "error", "authentication_error"))
        with self.assertRaises(anthropic.AuthenticationError):
            anthropic.Anthropic(base_url=self.server.url, api_key="wrong", max_retries=0).messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "H"}])
        host, port = self.server.url.split("//")[1].split(":")
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        c.request("GET", "/v1/messages", headers={"x-api-key": KEY})
        r = c.getresponse()
        self.assertEqual((r.status, json.loads(r.read())["error"]["type"]), (405, "invalid_request_error"))
        c.close()
        with self.assertRaises(anthropic.BadRequestError):
            self.create([{"type": "document", "source": {}}])
        self.assertEqual(self.blocks(self.create("H")), [("text", "Hello, world!")])  # still serving


if __name__ == "__main__":
    unittest.main()
