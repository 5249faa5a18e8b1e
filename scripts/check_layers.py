#!/usr/bin/env python3
"""The core's layers look only down: ir <- schedule <- codegen <- runtime <- tensor <- comm (core/src/<layer>/).

Every `#include "<layer>/..."` (and every public header, by the layer it belongs to) in core/src must name the
file's own layer or one below it. The includes that still point up are listed in KNOWN with the reason; they are
reported, and the check fails on any other, and on a KNOWN entry that no longer exists (so the list only
shrinks). Only the runtime reads the environment (runtime/options.hpp hands the switches down): a getenv in
another layer fails too. No header anywhere in the product (core, sdk, plugins, apps) says `using namespace`: it
would pour a namespace into every file that includes it (a .cpp may). A switch over the ops (`Op::` or `TG_KIR_`
cases) that names at least half of them has no `default:`: it names them all instead, so that -Wswitch points at
it when an op is added (a switch that picks out a few ops keeps its default). Run by ctest (test `core_layers`)
and by hand: scripts/check_layers.py [repo root].
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
SWITCH = re.compile(r'\bswitch\s*\(')
CASE = re.compile(r'\bcase\s+(?:ir::|tg::ir::)?(Op::\w+|TG_KIR_\w+)\s*:')
DEFAULT = re.compile(r'\bdefault\s*:')


def enumerators(root, header, enum):
    """The names an enum declares in a header (comments dropped; a trailing count like COUNT_ included)."""
    text = re.sub(r'//[^\n]*|/\*.*?\*/', "", (pathlib.Path(root) / header).read_text(), flags=re.S)
    start = text.index(enum)
    body = text[text.index("{", start) + 1:text.index("}", start)]
    return [e.split("=")[0].strip() for e in body.split(",") if e.strip()]


def switch_bodies(text):
    """The text at depth 1 of each switch's braces (nested braces, and so nested switches, blanked out)."""
    for m in SWITCH.finditer(text):
        i = text.find("{", m.end())
        if i < 0:
            continue
        depth, out = 0, []
        for j in range(i, len(text)):
            c = text[j]
            depth += c == "{"
            depth -= c == "}"
            if depth == 0:
                break
            out.append(c if depth == 1 and c not in "{}" else " ")
        yield text.count("\n", 0, m.start()) + 1, "".join(out)


def defaulted_op_switches(root, f, counts):
    """`file:line` of each switch over the ops with a default that names at least half of them."""
    text = re.sub(r'//[^\n]*', "", f.read_text(errors="replace"))
    for line, body in switch_bodies(text):
        cases = set(CASE.findall(body))
        if not cases or not DEFAULT.search(body):
            continue
        total = counts["Op::" if next(iter(cases)).startswith("Op::") else "TG_KIR_"]
        if 2 * len(cases) >= total:
            yield f"{f.relative_to(root).as_posix()}:{line} switches over {len(cases)} of {total} ops with a default:" \
                  " name the rest instead, so that -Wswitch finds it when an op is added"


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
    # the op enums' sizes, less their trailing counts (COUNT_, TG_KIR_OP_COUNT)
    counts = {"Op::": len(enumerators(root, "core/src/ir/ops.hpp", "enum class Op ")) - 1,
              "TG_KIR_": len(enumerators(root, "sdk/include/tg/plugin_abi.h", "typedef enum tg_kir_op")) - 1}
    for top in ("core", "sdk", "plugins", "apps"):
        for f in sorted((pathlib.Path(root) / top).rglob("*")):
            if f.suffix in (".hpp", ".h") and USING_NAMESPACE.search(f.read_text(errors="replace")):
                bad.append(f"{f.relative_to(root).as_posix()} says `using namespace` in a header: name what it uses")
            if f.suffix in (".cpp", ".hpp", ".h"):
                bad += list(defaulted_op_switches(pathlib.Path(root), f, counts))
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
