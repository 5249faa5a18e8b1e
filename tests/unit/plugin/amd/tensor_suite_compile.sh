#!/usr/bin/env bash
# Runs one Tensor test suite on DEV=AMDCOMPILE (compile_only_plugin.cpp built to accept): every kernel the suite
# realizes is rendered by the AMD renderer, compiled for <arch> and its kernel descriptor checked, but nothing runs,
# so the suite's own value checks fail and are ignored here. Fails when a kernel did not render, compile or pass the
# checks, when the suite crashed, or when fewer than <minimum> code objects were checked.
#   tensor_suite_compile.sh <suite binary> <plugin dir> <arch> <minimum>
set -uo pipefail
suite=$1 plugin_dir=$2 arch=$3 minimum=$4
log=$(mktemp) cache=$(mktemp -d)
trap 'rm -rf "$log" "$cache"' EXIT
DEV=AMDCOMPILE TG_PLUGIN_PATH=$plugin_dir AMD_ARCH=$arch TG_CACHE_DIR=$cache "$suite" >"$log" 2>&1
rc=$?
checked=$(sed -n 's/^amdcompile: \([0-9]*\) code objects checked.*/\1/p' "$log" | tail -1)
pattern="cannot compile kernel|cannot link kernel|code object of |renderer_render|amd compiler_compile"
echo "$(basename "$suite") on $arch: ${checked:-0} kernels rendered, compiled and checked (suite exit status $rc)"
if [ "$rc" -gt 128 ]; then
  echo "the suite crashed (signal $((rc - 128)))"; tail -40 "$log"; exit 1
fi
if grep -qE "$pattern" "$log"; then
  echo "kernels that did not render, compile or pass the checks:"
  grep -E -B3 -A25 "$pattern" "$log" | head -300
  exit 1
fi
if [ "${checked:-0}" -lt "$minimum" ]; then
  echo "expected at least $minimum kernels"; tail -40 "$log"; exit 1
fi
