#!/usr/bin/env python3
"""scripts/check_layers.py must be able to fail: a small tree with the repo's two op enums and one breach of each
rule gets one error per breach, and the same tree without them passes."""
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = pathlib.Path(__file__).resolve().parents[2]
CHECK = REPO / "scripts" / "check_layers.py"


def op_cases(n):
    """`case Op::X:` lines for the first n ops of core/src/ir/ops.hpp."""
    enum = (REPO / "core/src/ir/ops.hpp").read_text().split("enum class Op", 1)[1].split("{", 1)[1].split("};", 1)[0]
    names = re.findall(r"\b([A-Z][A-Z0-9_]*)\s*,", re.sub(r"//[^\n]*", "", enum))
    return "".join(f"    case Op::{name}: return 1;\n" for name in names[:n])


class CheckLayers(unittest.TestCase):
    def setUp(self):
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="tg_layers_"))
        for rel in ("core/src/ir/ops.hpp", "sdk/include/tg/plugin_abi.h"):
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / rel, self.root / rel)
        for layer in ("ir", "codegen", "runtime"):
            (self.root / "core/src" / layer).mkdir(parents=True, exist_ok=True)
        for top in ("plugins", "apps"):
            (self.root / top).mkdir()

    def tearDown(self):
        shutil.rmtree(self.root)

    def write(self, rel, text):
        (self.root / rel).write_text(text)

    def run_check(self):
        r = subprocess.run([sys.executable, str(CHECK), str(self.root)], capture_output=True, text=True)
        return r.returncode, [l for l in r.stdout.splitlines() if l.startswith("error: ")]

    def test_clean_tree_passes(self):
        self.write("core/src/codegen/few.cpp", "int f(Op op) {\n  switch (op) {\n" + op_cases(3) +
                   "    default: return 0;\n  }\n}\n")
        self.write("core/src/codegen/all.cpp", "int g(Op op) {\n  switch (op) {\n" + op_cases(63) + "  }\n}\n")
        self.assertEqual(self.run_check(), (0, []))

    def test_each_breach_is_one_error(self):
        self.write("core/src/ir/up.cpp", '#include "runtime/device.hpp"\n')
        self.write("core/src/codegen/env.cpp", 'const char* e = getenv("X");\n')
        self.write("apps/pour.hpp", "using namespace std;\n")
        self.write("core/src/codegen/most.cpp", "int f(Op op) {\n  switch (op) {\n" + op_cases(40) +
                   "    default: return 0;\n  }\n}\n")
        code, errors = self.run_check()
        self.assertEqual(code, 1)
        self.assertEqual(len(errors), 4, errors)
        for part in ("ir may not look up at runtime", "reads the environment", "`using namespace` in a header",
                     "most.cpp:2 switches over 40 of 63 ops with a default"):
            self.assertTrue(any(part in e for e in errors), (part, errors))


if __name__ == "__main__":
    unittest.main()
