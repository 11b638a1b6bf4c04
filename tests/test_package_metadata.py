"""What the distribution claims: every built-in data file and ``py.typed`` marker ships as package
data (no ``data-files``), one version, a Python floor the pins keep, extras as ranges around the
exact pins of requirements.txt."""
from __future__ import annotations

import fnmatch
import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

import nsvqa
from executors.ontology import ontology_dir
from nsvqa.generation.questions import template_dir
from nsvqa.generation.variants import CATALOGUE, list_variants, variant_dir

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PACKAGES = ("executors", "parsers", "nsvqa", "baselines", "orchestration")


def _owner(path: Path) -> Path:
    """The innermost package folder (one with an ``__init__.py``) holding ``path``."""
    folder = path.parent
    while not (folder / "__init__.py").is_file():
        folder = folder.parent
    return folder


def test_every_file_inside_the_packages_ships_as_package_data():
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert "data-files" not in setuptools, "data-files land outside the packages; ship them as package-data"
    patterns = setuptools["package-data"]
    missing = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*")):
            if not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
                continue
            owner = _owner(path)
            name = ".".join(owner.relative_to(REPO).parts)
            rel = path.relative_to(owner).as_posix()
            if not any(fnmatch.fnmatchcase(rel, p) for p in patterns.get(name, ())):
                missing.append(f"{name}: {rel}")
    assert not missing, f"files a wheel would leave out (add them to [tool.setuptools.package-data]): {missing}"


def test_each_package_is_marked_typed():
    for package in PACKAGES:
        assert (REPO / package / "py.typed").is_file(), package


def test_the_builtin_data_is_found_inside_the_packages():
    assert ontology_dir() == REPO / "executors" / "data" / "ontologies"
    assert template_dir() == REPO / "nsvqa" / "generation" / "data" / "question_templates"
    assert variant_dir() == REPO / "nsvqa" / "generation" / "data" / "variants"
    assert (variant_dir() / CATALOGUE).is_file() and "mid" in list_variants()
    assert not (REPO / "data" / "ontology").exists() and not (REPO / "data" / "templates").exists()
    assert not (REPO / "data" / "variants").exists()  # one copy in the repository


def test_one_version():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "nsvqa.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", nsvqa.__version__)
    assert importlib.metadata.version("nsvqa") == nsvqa.__version__, "reinstall: pip install -e . --no-deps"
    citation = re.search(r"^version: (\S+)$", (REPO / "CITATION.cff").read_text(), re.M)
    assert citation and citation.group(1) == nsvqa.__version__
    released = re.findall(r"^## (\d+\.\d+\.\d+)\b", (REPO / "CHANGELOG.md").read_text(), re.M)
    assert released and released[0] == nsvqa.__version__, "CHANGELOG.md's latest release"


def _pins() -> dict[str, Requirement]:
    reqs = [Requirement(line.split("#")[0]) for line in (REPO / "requirements.txt").read_text().splitlines()
            if line.split("#")[0].strip()]
    return {r.name.lower(): r for r in reqs}


def test_extras_are_ranges_that_hold_the_exact_pins():
    pins = _pins()
    for pin in pins.values():
        assert len(pin.specifier) == 1 and next(iter(pin.specifier)).operator == "==", pin
    groups = {"dependencies": PYPROJECT["project"]["dependencies"], **PYPROJECT["project"]["optional-dependencies"]}
    for extra, items in groups.items():
        for item in items:
            req = Requirement(item)
            assert not any(s.operator in ("==", "===") for s in req.specifier), f"[{extra}] {item}: a range, not a pin"
            assert req.name.lower() in pins, f"[{extra}] {item}: no exact pin in requirements.txt"
            version = next(iter(pins[req.name.lower()].specifier)).version
            assert req.specifier.contains(version), f"[{extra}] {item} excludes requirements.txt's {version}"


def test_requires_python_is_what_the_pins_need():
    project = PYPROJECT["project"]
    assert project["requires-python"] == ">=3.11"
    assert "Programming Language :: Python :: 3.11" in project["classifiers"]
    assert "Typing :: Typed" in project["classifiers"]
    assert project["urls"]
    # every installed pin accepts the floor, and some need it (numpy, scipy, pillow, ... at their pins)
    needs = {}
    for name in _pins():
        try:
            needs[name] = importlib.metadata.metadata(name).get("Requires-Python") or ""
        except importlib.metadata.PackageNotFoundError:
            continue
    assert all(SpecifierSet(n).contains("3.11") for n in needs.values()), needs
    assert any(not SpecifierSet(n).contains("3.10") for n in needs.values()), "the floor could be lower"
