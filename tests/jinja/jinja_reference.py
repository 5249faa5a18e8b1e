#!/usr/bin/env python3
"""Renders templates with Python's jinja2 in the environment transformers' chat templates get
(chat_template_reference.make_env: sandboxed, trim_blocks, lstrip_blocks, loop controls, tojson, raise_exception).

usage: jinja_reference.py IN.json OUT.json
  IN: [{"template": str, "context": dict}, ...]; OUT: [{"out": str} or {"error": str}, ...], in order.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "llm"))
from chat_template_reference import make_env  # noqa: E402


def main():
    cases = json.load(open(sys.argv[1]))
    env = make_env()
    out = []
    for c in cases:
        try:
            out.append({"out": env.from_string(c["template"]).render(**c["context"])})
        except Exception as e:  # noqa: BLE001 - every jinja2 failure is an expected "error"
            out.append({"error": f"{type(e).__name__}: {e}"})
    json.dump(out, open(sys.argv[2], "w"), ensure_ascii=False)


if __name__ == "__main__":
    main()
