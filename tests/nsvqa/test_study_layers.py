"""``orchestration.study`` is one package in floors: each module imports only the floors below it,
nothing else in ``orchestration`` but the scripts' layer imports the study, and the plan and the
report import nothing of training. Every import counts, those inside functions too. The package
order of the whole repository (scripts → orchestration → baselines → nsvqa → parsers → executors)
is held by ``tests/test_package_order.py``."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ORCHESTRATION = REPO / "orchestration"
STUDY = ORCHESTRATION / "study"
#: a module may import the study's modules of a lower floor only
FLOORS = {"study_config": 0, "plan": 1, "attempts": 1, "scale_record": 1, "perception_record": 1.5, "cost": 2,
          "systematic": 4, "findings": 4, "more_seeds": 4, "parses": 4, "perception_finding": 4.5, "report": 5,
          "run": 5, "publish": 6, "scale": 6, "perception_schedule": 6, "launch": 6, "demo": 7}
#: what the plan and the report never import themselves: training runs, the experiment driver, torch
#: (they ask the registry, orchestration.models, what a model is and needs: it loads the models)
HEAVY = ("torch", "nsvqa.training", "orchestration.experiment")


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
    """The study's modules among ``names`` (``__init__`` for the package itself)."""
    out = set()
    for n in names:
        parts = n.split(".")
        if parts[:2] == ["orchestration", "study"]:
            out.add(parts[2] if len(parts) > 2 and parts[2] in FLOORS else "__init__")
    return out


def test_the_floors_list_every_module_of_the_package():
    assert {p.stem for p in STUDY.glob("*.py")} - {"__init__"} == set(FLOORS)


@pytest.mark.parametrize("module", sorted(FLOORS))
def test_a_study_module_imports_only_the_floors_below_it(module):
    ups = {m for m in study_modules(imported(STUDY / f"{module}.py"))
           if m == "__init__" or FLOORS[m] >= FLOORS[module]}
    assert ups == set(), f"orchestration/study/{module}.py imports {sorted(ups)}, not below its floor"


def test_the_packages_face_hands_on_the_plan_alone():
    assert study_modules(imported(STUDY / "__init__.py")) == {"study_config", "plan", "attempts", "scale_record",
                                                             "cost"}


def test_nothing_else_in_the_orchestration_imports_the_study():
    """The study sits on the orchestration's top floor; only the commands (``orchestration/cli``, the
    floor above it, where ``scripts/`` used to be) import it."""
    cli = ORCHESTRATION / "cli"
    users = sorted(str(p.relative_to(REPO)) for p in ORCHESTRATION.rglob("*.py")
                   if STUDY not in p.parents and cli not in p.parents and study_modules(imported(p)))
    assert users == []
    assert {p.stem for p in cli.glob("*.py") if study_modules(imported(p))} == {"run_factor", "run_study"}


@pytest.mark.parametrize("module", ["study_config", "plan", "attempts", "scale_record", "perception_record", "cost",
                                    "systematic", "findings", "perception_finding", "report", "publish"])
def test_the_plan_and_the_report_import_nothing_of_training(module):
    heavy = sorted(n for n in imported(STUDY / f"{module}.py") if n.split(".")[0] == "torch"
                   or any(n == h or n.startswith(h + ".") for h in HEAVY))
    assert heavy == []


def test_importing_the_package_loads_no_experiment_and_nothing_that_runs_a_piece():
    code = ("import sys, orchestration.study\n"
            "print(','.join(sorted(m for m in sys.modules if m in ('orchestration.experiment', "
            "'orchestration.study.run', 'orchestration.study.launch', 'orchestration.study.report'))))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"import orchestration.study loaded {r.stdout.strip()}"
