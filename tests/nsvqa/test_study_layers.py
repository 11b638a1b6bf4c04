"""``orchestration.study`` is four subpackages in floors (settings; running and report side by side
on it; checks on top): each module imports only the floors below it, a lower subpackage or a lower
module of its own; the packages hold their docstrings alone; nothing else in ``orchestration`` but
the commands imports the study; and the settings and the report import nothing of training. Every
import counts, those inside functions too. The package order of the whole repository (scripts →
orchestration → baselines → nsvqa → parsers → executors) is held by ``tests/test_package_order.py``."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ORCHESTRATION = REPO / "orchestration"
STUDY = ORCHESTRATION / "study"
#: a subpackage may import the subpackages of a lower floor: running and report stand side by side
PACKAGE_FLOORS = {"settings": 0, "running": 1, "report": 1, "checks": 2}
#: inside a subpackage, a module may import its modules of a lower floor only
FLOORS = {
    "settings": {"errors": 0, "config": 1, "pieces": 2, "attempts": 2, "scale_record": 2, "perception_record": 3,
                 "budget": 4},
    "running": {"code_tree": 0, "parses": 0, "piece": 1, "launch": 2},
    "report": {"systematic": 0, "findings": 0, "seeds": 0, "perception": 1, "build": 2, "publish": 3, "demo": 4},
    "checks": {"scale": 0, "perception_schedule": 0},
}
MODULES = sorted(f"{package}.{module}" for package, modules in FLOORS.items() for module in modules)
#: what the settings and the report never import themselves: training runs, the experiment driver,
#: torch (they ask the registry, orchestration.models, what a model is and needs: it loads the models)
HEAVY = ("torch", "nsvqa.training", "orchestration.experiment")
#: ... but for the parsers' configs, which are data (no torch: tests/test_torch_free_configs.py): the
#: settings resolve the study's override maps into them when a config is read
CONFIGS = ("nsvqa.training.scene_config", "nsvqa.training.question_config")


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it; ``from P import N`` counts as ``P.N`` too."""
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: ``level - 1`` packages above this one
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return names


def study_modules(names: set[str]) -> set[str]:
    """The study's modules among ``names``, as ``package.module``; anything else of the study (a
    package itself: ``study``, ``settings``, ...) as its dotted name below ``orchestration.study``."""
    out = set()
    for n in names:
        parts = n.split(".")
        if parts[:2] == ["orchestration", "study"]:
            known = len(parts) > 3 and parts[2] in FLOORS and parts[3] in FLOORS[parts[2]]
            out.add(f"{parts[2]}.{parts[3]}" if known else ".".join(parts[2:]) or "study")
    return out


def below(importer: str, module: str) -> bool:
    """Whether ``importer`` (``package.module``) may import ``module``: a lower subpackage's, or a
    lower module of its own subpackage."""
    (p, m), (q, n) = importer.split("."), module.split(".")
    return FLOORS[p][n] < FLOORS[p][m] if p == q else PACKAGE_FLOORS[q] < PACKAGE_FLOORS[p]


def test_the_floors_list_every_module_of_the_package():
    found = {str(p.relative_to(STUDY).with_suffix("")).replace("/", ".") for p in STUDY.rglob("*.py")
             if p.stem != "__init__"}
    assert found == set(MODULES)
    assert {p.name for p in STUDY.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(FLOORS)


@pytest.mark.parametrize("module", MODULES)
def test_a_study_module_imports_only_the_floors_below_it(module):
    ups = {m for m in study_modules(imported(STUDY / (module.replace(".", "/") + ".py")))
           if m not in MODULES or not below(module, m)}
    assert ups == set(), f"orchestration/study/{module.replace('.', '/')}.py imports {sorted(ups)}, not below its floor"


@pytest.mark.parametrize("package", ["", *FLOORS])
def test_a_package_holds_its_docstring_alone(package):
    """No re-export: a name is imported from the module that defines it."""
    tree = ast.parse((STUDY / package / "__init__.py").read_text())
    assert ast.get_docstring(tree) and len(tree.body) == 1, f"orchestration/study/{package}: more than a docstring"


def test_nothing_else_in_the_orchestration_imports_the_study():
    """The study sits on the orchestration's top floor; only the commands (``orchestration/cli``, the
    floor above it, where ``scripts/`` used to be) import it."""
    cli = ORCHESTRATION / "cli"
    users = sorted(str(p.relative_to(REPO)) for p in ORCHESTRATION.rglob("*.py")
                   if STUDY not in p.parents and cli not in p.parents and study_modules(imported(p)))
    assert users == []
    assert {p.stem for p in cli.glob("*.py") if study_modules(imported(p))} == {
        "run_factor", "run_study", "study_run", "study_report", "study_checks"}


@pytest.mark.parametrize("module", [m for m in MODULES if m.split(".")[0] in ("settings", "report")])
def test_the_settings_and_the_report_import_nothing_of_training(module):
    heavy = sorted(n for n in imported(STUDY / (module.replace(".", "/") + ".py"))
                   if not any(n == c or n.startswith(c + ".") for c in CONFIGS)
                   and (n.split(".")[0] == "torch" or any(n == h or n.startswith(h + ".") for h in HEAVY)))
    assert heavy == []


def test_importing_the_settings_loads_no_experiment_nothing_that_runs_a_piece_and_no_report():
    settings = ", ".join(f"orchestration.study.{m}" for m in MODULES if m.startswith("settings."))
    code = (f"import sys, {settings}\n"
            "print(','.join(sorted(m for m in sys.modules if m == 'orchestration.experiment' or any("
            "m.startswith(f'orchestration.study.{p}') for p in ('running', 'report', 'checks')))))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"importing the settings loaded {r.stdout.strip()}"
