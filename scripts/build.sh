#!/usr/bin/env bash
# Configures and builds tg with CMake + Ninja (ccache when present) into build/ (or $TG_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TG_BUILD_DIR:-build}
jobs=${TG_JOBS:-$(nproc)}
# ccache hits across checkouts and build directories (a CI clone, a second build dir): paths below the checkout
# are hashed relative to it, and the working directory is left out of the hash.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${TG_BUILD_TYPE:-RelWithDebInfo} -DTG_WERROR=ON "$@" >/dev/null
ninja -C "$build" -j "$jobs" ${TG_TARGETS:-}
