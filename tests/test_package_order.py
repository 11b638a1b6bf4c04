"""Package order is floor order: ``scripts`` → ``orchestration`` → ``baselines`` → ``nsvqa`` →
``parsers`` → ``executors``. A module imports only packages to its right (and its own), every import
counted, those inside functions too; so nothing is imported from above, and no model is reached by
an import that runs up (docs/decisions.md, 2026-12-05)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: the project's packages, from the top floor down
ORDER = ("scripts", "orchestration", "baselines", "nsvqa", "parsers", "executors")


def imported_packages(path: Path) -> set[str]:
    """The project packages ``path`` imports, anywhere in it (relative imports are its own package's)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out & set(ORDER)


@pytest.mark.parametrize("package", ORDER)
def test_a_package_imports_only_the_packages_below_it(package):
    above = set(ORDER[:ORDER.index(package)])
    ups = sorted(f"{p.relative_to(REPO)} imports {', '.join(sorted(imported_packages(p) & above))}"
                 for p in sorted((REPO / package).rglob("*.py")) if imported_packages(p) & above)
    assert ups == []


def test_the_models_are_named_in_tables_not_registered_on_import():
    """No module imports a package for its side effect (``import baselines  # registers ...``): the
    registry reads ``baselines.MODELS`` and ``nsvqa.models.pipeline.MODELS``."""
    roots = [REPO / d for d in (*ORDER, "benchmarks", "results", "tests")]
    bare = []
    for path in sorted(p for r in roots for p in r.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name == "baselines" for a in node.names):
                used = any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "baselines"
                           for n in ast.walk(tree))
                if not used:
                    bare.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert bare == [], f"import baselines for its side effect only: {bare}"
