#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test with ctest; under CI (or TG_SANITIZE_TESTS=1) the unit
# tests run a second time in an ASan+UBSan build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
if [ "${CI:-}" = "true" ] || [ "${TG_SANITIZE_TESTS:-0}" = "1" ]; then
  TG_BUILD_DIR=build-asan TG_BUILD_TYPE=Debug scripts/build.sh -DTG_SANITIZE=ON
  (cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j "$(nproc)" -L unit)
fi
