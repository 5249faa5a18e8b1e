"""The OpenAI Agents SDK (PyPI openai-agents) running a tool-using task end to end against tg-llm --serve with the
real Qwen2.5-Coder-0.5B-Instruct, over both of its model APIs (Responses and Chat Completions): the agent must call
the tool with the city from the question (a required tool choice, which tg constrains to the tool's schema), get
the tool's result back into the conversation, and finish the run with a reply. (How well a 0.5B model words that
reply is the model's: it often answers in JSON that quotes the tool's result.)"""
import os
import unittest

import openai
from agents import (Agent, ModelSettings, Runner, function_tool, set_default_openai_api, set_default_openai_client,
                    set_tracing_disabled)

from server_harness import Server

MODEL = os.path.expanduser("~/.cache/qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")


class AgentsSDK(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(MODEL):
            raise unittest.SkipTest("Qwen2.5-Coder-0.5B-Instruct is not installed (scripts/setup.sh)")
        cls.server = Server(MODEL, "--max-context", "4096")
        set_default_openai_client(openai.AsyncOpenAI(base_url=cls.server.url + "/v1", api_key="x", max_retries=0), use_for_tracing=False)
        set_tracing_disabled(True)
        cls.model = openai.OpenAI(base_url=cls.server.url + "/v1", api_key="x").models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        assert rc == 0, f"tg-llm exited with {rc}"

    def test_tool_call_and_result_over_both_apis(self):
        for api in ["responses", "chat_completions"]:
            calls = []

            @function_tool
            def get_weather(city: str) -> str:
                """The current weather in a city."""
                calls.append(city)
                return f"It is 21 degrees Celsius and sunny in {city}."

            set_default_openai_api(api)
            agent = Agent(name="weather", instructions="Call get_weather once, then tell the user the weather it reported.", tools=[get_weather],
                          model=self.model, model_settings=ModelSettings(tool_choice="required", temperature=0))
            result = Runner.run_sync(agent, "What is the weather in Oslo right now?", max_turns=4)
            self.assertEqual(calls[:1], ["Oslo"], api)
            # the tool's output went back to the model: the run's items hold the call, its output and a final message
            kinds = [item.type for item in result.new_items]
            self.assertIn("tool_call_item", kinds, api)
            self.assertIn("tool_call_output_item", kinds, api)
            self.assertTrue(result.final_output, api)
            print(api, repr(result.final_output[:120]))


if __name__ == "__main__":
    unittest.main()
