"""``executors`` stands alone: importing it loads numpy but none of the heavy or upstream packages."""
from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("torch", "torchvision", "nsvqa", "parsers", "baselines")


def test_import_executors_loads_no_heavy_or_upstream_package():
    code = ("import sys, executors\n"
            "from executors import DeterministicExecutor, Program, SymbolicScene, load_ontology\n"
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
            "print(','.join(bad))\n"
            "assert 'numpy' in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"importing executors loaded {r.stdout.strip()}"
