#!/usr/bin/env bash
# Runs tg-conformance against the compile-only AMD device (compile_only_plugin.cpp) for one arch and judges what
# happened to the battery's kernels: each must reach program_create ("compile-only: ..."), none may fail in the
# renderer or the compiler or fail the code-object checks ("code object of ..."). Other failures (the queue and memory
# tests, which need a GPU) are expected and not counted.
#   conformance_compile.sh <tg-conformance> <libamd_compile_only.so> <arch> <minimum kernels>
set -uo pipefail
conformance=$1 shim=$2 arch=$3 minimum=$4
log=$(mktemp)
trap 'rm -f "$log"' EXIT
AMD_ARCH=$arch "$conformance" "$shim" >"$log" 2>&1
compiled=$(grep -c "program_create failed with TG_ERR_UNAVAILABLE: compile-only: " "$log")
broken=$(grep -E "renderer_render failed|compiler_compile failed|code object of |unexpected exception|caught signal|refused the renderer's own source" "$log")
echo "$arch: $compiled conformance kernels rendered, compiled and checked"
if [ -n "$broken" ]; then
  echo "$arch: kernels that did not render, compile or pass the code-object checks:"
  grep -E -B2 -A30 "renderer_render failed|compiler_compile failed|code object of |unexpected exception|caught signal|refused the renderer's own source" "$log" | head -400
  exit 1
fi
if [ "$compiled" -lt "$minimum" ]; then
  echo "$arch: expected at least $minimum kernels; the run said:"
  tail -60 "$log"
  exit 1
fi
grep -E "^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped" "$log"
