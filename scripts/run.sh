#!/usr/bin/env bash
# The main job: install dependencies, build, list the plugins tg discovers, run the demo on the default device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/bin/tg devices
DEBUG=${DEBUG:-2} build/bin/tg demo
