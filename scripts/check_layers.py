#!/usr/bin/env python3
"""The core's layers look only down: ir <- schedule <- codegen <- runtime <- tensor <- comm (core/src/<layer>/).

Every `#include "<layer>/..."` (and every public header, by the layer it belongs to) in core/src must name the
file's own layer or one below it. The includes that still point up are listed in KNOWN with the reason; they are
reported, and the check fails on any other, and on a KNOWN entry that no longer exists (so the list only
shrinks). Only the runtime reads the environment (runtime/options.hpp hands the switches down): a getenv in
another layer fails too. No header anywhere in the product (core, sdk, plugins, apps) says `using namespace`: it
would pour a namespace into every file that includes it (a .cpp may). Run by ctest (test `core_layers`) and by
hand: scripts/check_layers.py [repo root].
"""
import pathlib
import re
import sys

LAYERS = ["ir", "schedule", "codegen", "runtime", "tensor", "comm"]
# public headers (core/include/tg, sdk/include/tg) by the layer they belong to; anything else there is a base
# every layer may use (dtype, error, the plugin ABI, the SDK's header-only helpers)
PUBLIC = {"tg/device.hpp": "runtime", "tg/profile.hpp": "runtime", "tg/jit.hpp": "tensor",
          "tg/tensor.hpp": "tensor", "tg/variable.hpp": "tensor", "tg/custom_kernel.hpp": "tensor",
          "tg/comm.hpp": "comm", "tg/comm_mpi.hpp": "comm"}
# (file, included header): why it still points up. Remove an entry with the include it excuses.
KNOWN = {}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
GETENV = re.compile(r'\bgetenv(_int|_str)?\s*\(')
USING_NAMESPACE = re.compile(r'^\s*using\s+namespace\b', re.M)


def layer_of_header(h):
    if h in PUBLIC:
        return PUBLIC[h]
    top = h.split("/")[0]
    return top if top in LAYERS else None


def main(root):
    src = pathlib.Path(root) / "core" / "src"
    found, bad = set(), []
    for f in sorted(src.rglob("*")):
        if f.suffix not in (".cpp", ".hpp", ".h"):
            continue
        rel = f.relative_to(src).as_posix()
        own = rel.split("/")[0]
        if own not in LAYERS:
            continue
        text = f.read_text()
        if own != "runtime" and GETENV.search(text):
            bad.append(f"core/src/{rel} reads the environment: add the switch to runtime/options.hpp and pass it down")
        for h in INCLUDE.findall(text):
            target = layer_of_header(h)
            if target is None or LAYERS.index(target) <= LAYERS.index(own):
                continue
            if (rel, h) in KNOWN:
                found.add((rel, h))
            else:
                bad.append(f"core/src/{rel} includes {h}: {own} may not look up at {target}")
    for top in ("core", "sdk", "plugins", "apps"):
        for f in sorted((pathlib.Path(root) / top).rglob("*")):
            if f.suffix in (".hpp", ".h") and USING_NAMESPACE.search(f.read_text(errors="replace")):
                bad.append(f"{f.relative_to(root).as_posix()} says `using namespace` in a header: name what it uses")
    for key in sorted(found):
        print(f"known: core/src/{key[0]} includes {key[1]} ({KNOWN[key]})")
    stale = sorted(set(KNOWN) - found)
    bad += [f"core/src/{f} no longer includes {h}: remove it from KNOWN in scripts/check_layers.py" for f, h in stale]
    for b in bad:
        print("error: " + b)
    print(f"{len(found)} known upward includes, {len(bad)} errors")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent))
