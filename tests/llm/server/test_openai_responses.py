"""The official openai client's Responses API (client.responses) against tg-llm --serve's /v1/responses, on the
scripted model (gen_scripted_model.py: the last prompt character picks a fixed reply), so every expectation is
exact: output items, streamed events, function calls and their outputs, the length limit, and bad requests."""
import json
import unittest

import openai

from server_harness import Server, scripted_model

KEY = "sk-test-key"
TOOLS = [{"type": "function", "name": "get_weather", "description": "The weather in a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


class Responses(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(scripted_model(), "--max-context", "256", "--api-key", KEY)
        cls.client = openai.OpenAI(base_url=cls.server.url + "/v1", api_key=KEY, max_retries=0, timeout=60)
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        assert rc == 0, f"tg-llm exited with {rc}"

    def create(self, input, **kw):
        return self.client.responses.create(model=self.model, input=input, **kw)

    def test_text_and_usage(self):
        r = self.create("H")
        self.assertEqual((r.output_text, r.status, r.object), ("Hello, world!", "completed", "response"))
        self.assertEqual([o.type for o in r.output], ["message"])
        self.assertEqual((r.usage.output_tokens, r.usage.total_tokens), (2, r.usage.input_tokens + 2))
        # the same conversation as message items, with instructions as the system message
        r = self.create([{"role": "user", "content": [{"type": "input_text", "text": "H"}]}], instructions="Be brief.")
        self.assertEqual(r.output_text, "Hello, world!")

    def test_streamed_events(self):
        events = list(self.create("R", stream=True))
        types = [e.type for e in events]
        self.assertEqual(types[:2], ["response.created", "response.in_progress"])
        self.assertEqual(types[-1], "response.completed")
        self.assertEqual([e.sequence_number for e in events], list(range(len(events))))
        self.assertEqual("".join(e.delta for e in events if e.type == "response.output_text.delta"), "The answer is 4.")
        self.assertEqual("".join(e.delta for e in events if e.type == "response.reasoning_text.delta"), "Let me think.")
        final = events[-1].response
        self.assertEqual(([o.type for o in final.output], final.output_text), (["reasoning", "message"], "The answer is 4."))
        whole = self.create("R")
        self.assertEqual(([o.type for o in whole.output], whole.output_text), (["reasoning", "message"], "The answer is 4."))

    def test_function_call_round_trip(self):
        r = self.create("T", tools=TOOLS)
        self.assertEqual([o.type for o in r.output], ["function_call"])
        call = r.output[0]
        self.assertEqual((call.name, json.loads(call.arguments)), ("get_weather", {"city": "Paris"}))
        with self.client.responses.stream(model=self.model, input="T", tools=TOOLS) as s:
            final = s.get_final_response()
        self.assertEqual([(o.type, o.name) for o in final.output], [("function_call", "get_weather")])
        # the call and its output go back as items; the template sees the output's text (last character H)
        r2 = self.create([{"role": "user", "content": "T"},
                          {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
                          {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny. H"}], tools=TOOLS)
        self.assertEqual(r2.output_text, "Hello, world!")

    def test_required_call_and_json_format(self):
        # the scripted "T" reply is a get_weather call: under tool_choice it is still the one allowed
        for choice in ["required", {"type": "function", "name": "get_weather"}]:
            r = self.create("T", tools=TOOLS, tool_choice=choice)
            self.assertEqual([(o.type, o.name, json.loads(o.arguments)) for o in r.output], [("function_call", "get_weather", {"city": "Paris"})])
        # "O" is answered "OK", which is no JSON: the format leaves a JSON value
        r = self.create("O", text={"format": {"type": "json_schema", "name": "n", "schema": {"type": "integer"}}}, max_output_tokens=4)
        text = r.output_text.strip()  # whitespace may come first (the script has no preference among the allowed)
        self.assertTrue(text == "" or text.lstrip("-")[:1].isdigit(), r.output_text)

    def test_length_is_incomplete(self):
        r = self.create("L", max_output_tokens=3)
        self.assertEqual((r.status, r.incomplete_details.reason, r.output_text), ("incomplete", "max_output_tokens", "lalela"))

    def test_bad_requests(self):
        for kw, param in [({"previous_response_id": "resp_1"}, "previous_response_id"),
                          ({"text": {"format": {"type": "xml"}}}, "text.format"),
                          ({"text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "string", "pattern": "(?=a)"}}}}, "text.format"),
                          ({"tool_choice": "required"}, "tool_choice"),
                          ({"tools": [{"type": "web_search"}]}, "tools"), ({"temperature": 3}, "temperature"),
                          ({"max_output_tokens": 0}, "max_output_tokens")]:
            with self.assertRaises(openai.BadRequestError) as e:
                self.create("H", **kw)
            self.assertEqual(e.exception.body["param"], param, kw)
        for bad in [[], [{"role": "robot", "content": "x"}], [{"type": "function_call"}], [{"type": "computer_call"}],
                    [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]]:
            with self.assertRaises(openai.BadRequestError):
                self.create(bad)
        with self.assertRaises(openai.NotFoundError):
            self.client.responses.create(model="gpt-9", input="H")
        self.assertEqual(self.create("H").output_text, "Hello, world!")  # still serving


if __name__ == "__main__":
    unittest.main()
