"""A copy of ``executors/`` placed in another project works alone: its built-in ontologies ship
inside the package (``executors/data/ontologies``, read through importlib.resources), and it
imports numpy only."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import executors
from executors import load_ontology
from executors.ontology import ontology_dir

REPO = Path(__file__).resolve().parents[2]

#: Run in the subprocess: sys.path is the copy's project folder and numpy's, nothing else (no
#: site-packages, so no nsvqa, no torch and no editable install of this repository).
_PROBE = """
import json, sys
sys.path[:0] = [{project!r}, {numpy_dir!r}]
import executors
from executors import load_ontology
from executors.ontology import ontology_dir
out = {{"executors": executors.__file__, "ontologies": str(ontology_dir()),
        "clevr": list(load_ontology("clevr").values("shape")),
        "superclevr": len(load_ontology("superclevr").values("shape"))}}
try:
    load_ontology("nope")
except FileNotFoundError as e:
    out["unknown"] = str(e)
out["imported"] = sorted({{m.split(".")[0] for m in sys.modules}} & {{"torch", "nsvqa", "parsers", "scipy"}})
print(json.dumps(out))
"""


def test_the_builtin_ontologies_are_inside_the_package():
    assert ontology_dir() == Path(executors.__file__).parent / "data" / "ontologies"
    assert sorted(p.name for p in ontology_dir().glob("*.json")) == ["clevr.json", "superclevr.json"]


def test_a_copy_of_executors_in_another_project_loads_its_ontologies(tmp_path):
    project = tmp_path / "other_project"
    shutil.copytree(REPO / "executors", project / "executors", ignore=shutil.ignore_patterns("__pycache__"))
    assert REPO not in project.resolve().parents
    # numpy alone: a folder holding links to numpy's package and its bundled libraries
    site = Path(np.__file__).resolve().parents[1]
    numpy_dir = tmp_path / "numpy_only"
    numpy_dir.mkdir()
    for name in ("numpy", "numpy.libs"):
        if (site / name).exists():
            (numpy_dir / name).symlink_to(site / name)
    probe = _PROBE.format(project=str(project), numpy_dir=str(numpy_dir))
    # -I: no environment variables, user site or current folder; -S: no site-packages
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert Path(out["executors"]).parent == project / "executors"
    assert Path(out["ontologies"]) == project / "executors" / "data" / "ontologies"
    assert out["clevr"] == list(load_ontology("clevr").values("shape"))
    assert out["superclevr"] == len(load_ontology("superclevr").values("shape"))
    assert "valid names: ['clevr', 'superclevr']" in out["unknown"]
    assert out["imported"] == []


def test_an_ontology_folder_named_by_the_environment_wins(tmp_path, monkeypatch):
    (tmp_path / "mine.json").write_text((ontology_dir() / "clevr.json").read_text())
    monkeypatch.setenv("NSVQA_ONTOLOGY_DIR", str(tmp_path))
    assert ontology_dir() == tmp_path
    assert load_ontology.__wrapped__("mine").values("shape") == load_ontology("clevr").values("shape")
