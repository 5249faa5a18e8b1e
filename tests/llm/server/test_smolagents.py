"""Hugging Face's smolagents (PyPI smolagents) running a ToolCallingAgent end to end against tg-llm --serve with the
real Qwen2.5-Coder-0.5B-Instruct, greedy: every step is a Chat Completions request with the agent's tools and
tool_choice "required" (which tg constrains to the tools' schemas), and smolagents only finishes a run when the model
calls its final_answer tool. The agent must call the tool with the city from the question, get the tool's result
back into the conversation (smolagents sends it as an "Observation:" user message), and finish with final_answer.

A 0.5B model left to itself repeats get_weather until max_steps (greedy, after the observation it prefers "get" over
"final" for the tool's name, about -0.6 against -1.7 in log-probability, whatever the instructions say), so the tool's
result names the next step itself, as a tool's output may: the run then finishes only if that result reached the model."""
import os
import unittest

import openai
from smolagents import ActionStep, OpenAIServerModel, ToolCallingAgent, tool

from server_harness import Server

MODEL = os.path.expanduser("~/.cache/qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
WEATHER = "It is 21 degrees Celsius and sunny in {city}. You now know the weather: call final_answer."


class Smolagents(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(MODEL):
            raise unittest.SkipTest("Qwen2.5-Coder-0.5B-Instruct is not installed (scripts/setup.sh)")
        cls.server = Server(MODEL, "--max-context", "4096")
        cls.model = openai.OpenAI(base_url=cls.server.url + "/v1", api_key="x").models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        rc = cls.server.stop()
        assert rc == 0, f"tg-llm exited with {rc}"

    def test_tool_calling_agent(self):
        calls = []

        @tool
        def get_weather(city: str) -> str:
            """The current weather in a city.

            Args:
                city: The name of the city.
            """
            calls.append(city)
            return WEATHER.format(city=city)

        model = OpenAIServerModel(model_id=self.model, api_base=self.server.url + "/v1", api_key="x",
                                  client_kwargs={"max_retries": 0}, temperature=0)
        sent = []  # the keyword arguments of each chat.completions.create call, as smolagents made them
        create = model.client.chat.completions.create
        model.client.chat.completions.create = lambda **kw: sent.append(kw) or create(**kw)
        agent = ToolCallingAgent(tools=[get_weather], model=model, max_steps=4)
        answer = agent.run("What is the weather in Oslo right now?")
        steps = [s for s in agent.memory.steps if isinstance(s, ActionStep)]
        for step in steps:
            print(step.step_number, [(c.name, c.arguments) for c in step.tool_calls or []], repr(step.observations), step.error)

        # the first two steps (a finished run has no others) each asked for a call of one of the agent's tools
        self.assertGreaterEqual(len(sent), 2)
        for kw in sent[:2]:
            self.assertEqual(kw.get("tool_choice"), "required")
            self.assertEqual([t["function"]["name"] for t in kw["tools"]], ["get_weather", "final_answer"])
        # the first step called the tool with the city from the question
        self.assertEqual(calls[:1], ["Oslo"])
        self.assertEqual([(c.name, c.arguments) for c in steps[0].tool_calls or []], [("get_weather", {"city": "Oslo"})])
        self.assertEqual(steps[0].observations, WEATHER.format(city="Oslo"))
        # the tool's result went back to the model: the next request carried it
        self.assertIn(WEATHER.format(city="Oslo"), str(sent[1]["messages"]))
        # and the run finished with a final_answer tool call (not max_steps' fallback) that answers from that result
        self.assertTrue(steps[-1].is_final_answer, "the run ended without a final_answer call")
        self.assertEqual([c.name for c in steps[-1].tool_calls], ["final_answer"])
        self.assertIsInstance(answer, str)
        self.assertTrue(answer.strip())
        self.assertIn("21", answer)
        print("final answer:", repr(answer[:120]), "after", len(steps), "steps")


if __name__ == "__main__":
    unittest.main()
