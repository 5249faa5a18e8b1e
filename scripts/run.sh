#!/usr/bin/env bash
# The main job: install dependencies, build, list the plugins tg discovers, run the demo on the default device,
# then the default LLM (Gemma 3 270M, installed by setup.sh) answers a question on it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/bin/tg devices
DEBUG=${DEBUG:-2} build/bin/tg demo
build/bin/tg-llm --prompt "Question: What is the capital of France?\nAnswer:" --max-tokens 16 --verbose
