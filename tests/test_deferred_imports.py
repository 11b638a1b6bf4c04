"""An import inside a function of ``orchestration`` defers something: after a fresh import of its
module, the module it names is not loaded yet (else it belongs at the top of the file, where the
reader looks for what a module uses)."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def in_function_imports(path: Path) -> list[tuple[str, int]]:
    """(module, line) of each absolute import inside a function of ``path``."""
    found = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    found += [(a.name, node.lineno) for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    # ``from pkg import sub`` imports the submodule where ``sub`` is one (resolved in the check)
                    found += [(f"{node.module}:{a.name}", node.lineno) for a in node.names]
    return found


def loaded_after_import(module: str, names: list[str]) -> dict[str, bool]:
    code = (f"import importlib.util, json, sys; import {module}\n"
            f"def loaded(m):\n"
            f"    pkg, _, name = m.partition(':')\n"
            f"    sub = f'{{pkg}}.{{name}}' if name else pkg\n"
            f"    if name and (pkg not in sys.modules or importlib.util.find_spec(sub) is None):\n"
            f"        sub = pkg  # a name defined in the module, not a submodule\n"
            f"    return sub in sys.modules\n"
            f"print(json.dumps({{m: loaded(m) for m in {names!r}}}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, f"import {module} failed: {out.stderr[-2000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_in_function_import_of_orchestration_is_really_deferred():
    jobs = {}
    for path in sorted((REPO / "orchestration").rglob("*.py")):
        found = in_function_imports(path)
        if found:
            module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
            jobs[module] = (path, found)
    assert jobs, "no in-function import found: the walk is broken"
    with ThreadPoolExecutor(max_workers=2) as ex:
        got = dict(zip(jobs, ex.map(lambda m: loaded_after_import(m, sorted({n for n, _ in jobs[m][1]})), jobs)))
    eager = [f"{jobs[m][0].relative_to(REPO)}:{line} imports {name.replace(':', ' ')}, already loaded by `import {m}`"
             for m in jobs for name, line in jobs[m][1] if got[m][name]]
    assert not eager, "\n".join(eager)
