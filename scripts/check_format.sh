#!/usr/bin/env bash
# Fails when a tracked C or C++ file differs from what clang-format 19 makes of it (.clang-format at the root),
# printing the files and the first lines that differ. Fix with: scripts/check_format.sh --fix
# Run by ctest (test `format`) and by hand. The version is pinned: another clang-format lays some lines out
# differently, and the check would then fail on a tree that is formatted.
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format-19}
if ! command -v "$clang_format" >/dev/null; then
  echo "check_format: $clang_format not found (scripts/setup.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cpp' '*.hpp' 2>/dev/null || true)
if ((${#files[@]} == 0)); then  # not a git checkout (a source tarball): every source file below the root
  mapfile -t files < <(find apps bench core plugins sdk tests \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' \) -type f | sort)
fi
if [ "${1:-}" = "--fix" ]; then
  for f in "${files[@]}"; do [ -f "$f" ] && printf '%s\0' "$f"; done | xargs -0 -r -n 64 "$clang_format" -i
  exit 0
fi
present=()
for f in "${files[@]}"; do [ -f "$f" ] && present+=("$f"); done
# one clang-format process for the whole tree; only when it finds something, a diff per file that differs
"$clang_format" --dry-run --Werror "${present[@]}" >/dev/null 2>&1 && exit 0
bad=0
for f in "${present[@]}"; do
  if ! out=$("$clang_format" "$f" | diff -u "$f" - 2>&1); then
    echo "$f is not formatted (scripts/check_format.sh --fix):"
    echo "$out" | sed -n '3,14p'
    bad=1
  fi
done
exit $bad
