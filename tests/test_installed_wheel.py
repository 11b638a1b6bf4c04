"""The built wheel, installed as a user would (issue 78, "Done when"): built once from a copy of the
sources, installed outside the repository into fresh virtual environments in three ways (light:
numpy alone; ``--target DIR`` with ``PYTHONPATH=DIR``; ``[full]``), and for each: every console
command's ``--help`` exits 0 or prints exactly the one line naming the extra it needs and exits 2;
``load_ontology("superclevr")`` reads the ontology from inside the installed package;
``nsvqa-execute-programs`` answers the bundled examples (``data/examples/``) from a folder outside
the clone; ``scripts`` is not among the installed top-level names and every file of the packages'
folders is in the wheel. With ``[full]``, ``nsvqa.load_pretrained`` answers questions about a
rendered image from the shipped set fetched with ``nsvqa-fetch-pretrained`` from a ``file://`` URL
into the user cache.

Installs go through uv (``uv pip install --offline``: the package cache, no network), at
requirements.txt's pins less requirements-excludes.txt, as ``make venv`` installs them. Slow, and
run only with ``NSVQA_WHEEL_TEST=1``: ``[full]`` needs torch and the rest of the stack in uv's cache
(skipped, with the reason, when ``--offline`` cannot install it); the light and ``--target``
installs fall back to PyPI for numpy when the cache lacks it.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from nsvqa.cli import HEAVY_MODULES, missing_extra_line

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
COMMANDS = sorted(PYPROJECT["project"]["scripts"])
PACKAGES = sorted(PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"])
TOP_LEVEL = sorted(p.rstrip("*") for p in PACKAGES)
EXAMPLES = REPO / "data" / "examples"
SHIPPED = REPO / "pretrained" / "mid-mini"
#: Folders of the clone left out of the copy the wheel is built from (data, runs, caches: large, and not packaged).
NOT_COPIED = {".git", ".venv", "build", "dist", "runs", "results", "data", "logs", "pretrained", "outputs",
              ".pytest_cache", ".hypothesis", "benchmarks", "docs", "tests"}
#: The commands' full ``--help`` on a machine under load (those of [full] import torch while parsing).
HELP_TIMEOUT_S = 180

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("NSVQA_WHEEL_TEST") != "1",
                       reason="builds the wheel and installs it into fresh virtual environments: set NSVQA_WHEEL_TEST=1; "
                              "needs uv and, for [full], uv's package cache holding torch and the rest at "
                              "requirements.txt's pins (installs are --offline), which a clean CI machine lacks"),
]


def _uv() -> str:
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not Path(uv).is_file():
        pytest.skip("no uv (on PATH or beside this Python): `pip install uv` or `make venv`")
    return uv


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of an installed command: nothing of this checkout or its venv, no user site."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "NSVQA_PRETRAINED_DIR", "NSVQA_PRETRAINED_URL",
                        "PYTHONSTARTUP", "PYTEST_ADDOPTS")}
    env["PYTHONNOUSERSITE"] = "1"
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(REPO)))
    env.update(extra)
    return env


def _run(argv: list[str | Path], *, cwd: Path, env: dict[str, str], timeout: float = 300,
         check: bool = False) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv[:4]} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc


@dataclass
class Install:
    """One installed copy: ``python`` runs it (with ``env``), ``bin`` holds its console commands and
    ``site`` its top-level packages."""
    kind: str
    python: Path
    bin: Path
    site: Path
    work: Path  # a folder of its own, outside the repository, that commands run in
    env: dict[str, str] = field(default_factory=dict)

    def command(self, name: str, *args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess:
        # the script through the install's Python: a --target install's scripts lie in DIR/bin with the
        # shebang of the Python that installed them, which needs PYTHONPATH=DIR all the same
        return _run([self.python, self.bin / name, *args], cwd=self.work, env=self.env, timeout=timeout)

    def python_code(self, code: str, *args: str | Path, timeout: float = 300, check: bool = True):
        return _run([self.python, "-c", textwrap.dedent(code), *args], cwd=self.work, env=self.env,
                    timeout=timeout, check=check)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built once from a copy of the sources (the clone's build/ and egg-info untouched),
    without build isolation when this Python has setuptools (no network), else through ``uv build``."""
    root = tmp_path_factory.mktemp("wheel_build")
    src, out = root / "src", root / "dist"

    def ignore(folder: str, names: list[str]) -> set[str]:
        top = NOT_COPIED if Path(folder) == REPO else set()
        return {n for n in names if n in top or n == "__pycache__" or n.endswith((".egg-info", ".pyc"))}

    shutil.copytree(REPO, src, ignore=ignore)
    try:
        import setuptools  # noqa: F401
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out, src]
    except ImportError:
        cmd = [_uv(), "build", "--wheel", "--out-dir", out, src]
    _run(cmd, cwd=root, env=_clean_env(), timeout=600, check=True)
    (whl,) = out.glob("nsvqa-*.whl")
    return whl


def _venv(path: Path) -> Path:
    _run([_uv(), "venv", "-q", "--python", sys.executable, path], cwd=path.parent, env=_clean_env(), check=True)
    return path / "bin" / "python"


def _install(python: Path, requirement: str, *extra: str, online_fallback: bool) -> subprocess.CompletedProcess:
    """``uv pip install --offline`` at requirements.txt's pins; again from PyPI when allowed and the cache lacked something."""
    argv = [_uv(), "pip", "install", "--python", python, "-c", REPO / "requirements.txt",
            "--excludes", REPO / "requirements-excludes.txt", *extra, requirement]
    proc = _run([*argv[:3], "--offline", *argv[3:]], cwd=python.parent, env=_clean_env(), timeout=600)
    if proc.returncode != 0 and online_fallback:
        proc = _run(argv, cwd=python.parent, env=_clean_env(), timeout=600)
    return proc


@pytest.fixture(scope="module")
def light(wheel, tmp_path_factory) -> Install:
    """``pip install nsvqa``: the wheel and its one dependency, numpy."""
    root = tmp_path_factory.mktemp("light")
    python = _venv(root / "venv")
    proc = _install(python, str(wheel), online_fallback=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    site = Path(python.parent.parent / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages")
    (root / "work").mkdir()
    return Install("light", python, python.parent, site, root / "work", _clean_env())


@pytest.fixture(scope="module")
def target(wheel, tmp_path_factory) -> Install:
    """``pip install --target DIR nsvqa``, run by a Python that has nothing installed, with ``PYTHONPATH=DIR``."""
    root = tmp_path_factory.mktemp("target")
    python = _venv(root / "bare")
    proc = _install(python, str(wheel), "--target", str(root / "dir"), online_fallback=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (root / "work").mkdir()
    return Install("target", python, root / "dir" / "bin", root / "dir", root / "work",
                   _clean_env(PYTHONPATH=str(root / "dir")))


@pytest.fixture(scope="module")
def full(wheel, tmp_path_factory) -> Install:
    """``pip install "nsvqa[full]"``, from uv's cache only (skipped when it cannot)."""
    root = tmp_path_factory.mktemp("full")
    python = _venv(root / "venv")
    proc = _install(python, f"{wheel}[full]", online_fallback=False)
    if proc.returncode != 0:
        pytest.skip("`uv pip install --offline \"nsvqa[full]\"` failed: uv's package cache lacks torch or the rest "
                    f"of the [full] stack at requirements.txt's pins ({' '.join(proc.stderr.split())[:400]})")
    site = Path(python.parent.parent / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages")
    (root / "work").mkdir()
    # the user cache of pretrained sets is the test's own; no clone's pretrained/ is visible
    return Install("full", python, python.parent, site, root / "work", _clean_env(XDG_CACHE_HOME=str(root / "cache")))


@pytest.fixture(scope="module", params=["light", "target", "full"])
def install(request) -> Install:
    return request.getfixturevalue(request.param)


EXTRA_LINE = re.compile(r"^(?P<prog>\S+) needs the (?P<extra>\w+) install: .* \(no module named '(?P<module>\w+)'\)$")


def test_every_command_answers_help_or_names_its_extra_in_one_line(install):
    # the installed commands are pyproject.toml's, each a script in bin/
    assert sorted(p.name for p in install.bin.glob("nsvqa-*")) == COMMANDS
    named = {}
    for command in COMMANDS:
        proc = install.command(command, "--help", timeout=HELP_TIMEOUT_S)
        if proc.returncode == 0:
            assert proc.stdout.startswith(f"usage: {command} "), (command, proc.stdout[:300])
            continue
        lines = proc.stderr.splitlines()
        m = EXTRA_LINE.match(lines[0]) if len(lines) == 1 else None
        assert proc.returncode == 2 and proc.stdout == "" and m, (command, proc.returncode, proc.stderr[-3000:])
        assert m["prog"] == command and m["module"] in HEAVY_MODULES, lines
        assert lines == [missing_extra_line(command, m["module"], m["extra"])]
        named[command] = m["extra"]
    if install.kind == "full":
        assert named == {}, named  # the full install lacks no extra
    else:
        # the commands that need nothing more than numpy answer on the light install
        assert "nsvqa-execute-programs" not in named and "nsvqa-fetch-pretrained" not in named, named
    version = install.command("nsvqa-execute-programs", "--version")
    assert version.returncode == 0 and version.stdout.startswith("nsvqa-execute-programs 0."), version


def test_load_ontology_reads_the_installed_package(install):
    out = install.python_code("""
        import json, sys
        import executors
        from executors import load_ontology
        onto = load_ontology("superclevr")
        print(json.dumps({"file": executors.__file__, "shapes": len(onto.scene_values("shape")),
                          "colors": list(onto.scene_values("color"))}))
    """).stdout
    got = json.loads(out)
    assert Path(got["file"]).is_relative_to(install.site), got["file"]  # not the clone's copy
    assert got["shapes"] > 0 and "red" in got["colors"]


def test_execute_programs_answers_on_numpy_alone(install):
    out = install.work / f"predictions_{install.kind}.jsonl"
    proc = install.command("nsvqa-execute-programs", "--scenes", EXAMPLES / "scenes.json",
                           "--questions", EXAMPLES / "questions.json", "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and any(r["answer"] == r["gold"] for r in rows)
    if install.kind != "full":
        # what is installed besides nsvqa is numpy, and nothing of [full] can be imported
        dists = install.python_code("""
            import importlib.metadata as md, importlib.util, json, sys
            heavy = [m for m in sys.argv[1].split(",") if importlib.util.find_spec(m) is not None]
            print(json.dumps({"dists": sorted({d.metadata["Name"].lower() for d in md.distributions()}), "heavy": heavy}))
        """, ",".join(sorted(HEAVY_MODULES))).stdout
        got = json.loads(dists)
        assert set(got["dists"]) - {"pip", "setuptools"} == {"nsvqa", "numpy"} and got["heavy"] == [], got


def test_the_installed_top_level_names_and_files(install, wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (dist_info,) = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
        top_level = z.read(f"{dist_info}/top_level.txt").decode().split()
    assert "scripts" not in top_level and sorted(top_level) == TOP_LEVEL, top_level
    installed = install.site / dist_info
    record = [line.split(",")[0] for line in (installed / "RECORD").read_text().splitlines() if line]
    in_bin = {r for r in record if (install.site / r).resolve().is_relative_to(install.bin.resolve())}  # the commands
    roots = {r.split("/")[0] for r in set(record) - in_bin if not r.split("/")[0].endswith(".dist-info")}
    assert roots == set(TOP_LEVEL), roots
    assert not (install.site / "scripts").exists()
    # every file of the packages' folders (modules, ontologies, templates, variants, shaders, py.typed) went in
    files = {str(p.relative_to(REPO)) for pkg in TOP_LEVEL for p in (REPO / pkg).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    missing = sorted(files - set(record))
    assert not missing, missing
    assert all((install.site / f).is_file() for f in files)


ANSWER = """
    import json, os, sys
    from pathlib import Path

    import numpy as np
    from nsvqa.generation.renderer import Renderer, RendererUnavailable

    try:
        Renderer(32, 24).release()
    except RendererUnavailable as e:
        print(f"SKIP: {e}")
        sys.exit(0)

    import nsvqa
    from baselines.qa_encoding import answer_vocabulary
    from executors import Program, load_ontology
    from nsvqa.generation.dataset import generate_split, job_for
    from nsvqa.pretrained import cache_dir

    root = Path(sys.argv[1])
    generate_split(job_for(root, "mid", "test", 1, 11, 320, 240, questions="object"), progress=False)
    scene = json.loads((root / "mid" / "scenes" / "test_scenes.json").read_text())["scenes"][0]
    image = root / "mid" / "images" / "test" / scene["image_filename"]

    model = nsvqa.load_pretrained("mid-mini", device="cpu")  # from the user cache: an installed package has no pretrained/
    assert model.folder == cache_dir() / "mid-mini", (model.folder, cache_dir())
    answer, program, trace = model.answer(image, "How many red cars are there?")
    onto = load_ontology("superclevr")
    vocabulary = set(answer_vocabulary(onto))
    assert answer in vocabulary, answer
    assert isinstance(program, Program) and program.to_prefix() == ["count", "filter_shape[car]", "filter_color[red]",
                                                                     "scene"], program.to_prefix()
    assert isinstance(trace, list) and len(trace) == len(program.nodes)
    # plain questions read off the scene: each colour-shape pair it holds
    pairs = sorted({(o["color"], o["shape"]) for o in scene["objects"]})
    got = [model.answer(image, f"Is there a {c} {onto.spoken_value('shape', s)}?")[0] for c, s in pairs]
    print(json.dumps({"answer": answer, "yes": got.count("yes"), "asked": len(got), "module": nsvqa.__file__}))
"""


def test_full_install_answers_a_question_about_a_rendered_image_from_a_fetched_set(full):
    fetched = full.command("nsvqa-fetch-pretrained", "mid-mini", "--url", SHIPPED.as_uri())
    assert fetched.returncode == 0, fetched.stderr[-3000:]
    cache = Path(full.env["XDG_CACHE_HOME"]) / "nsvqa" / "pretrained" / "mid-mini"
    assert (cache / "manifest.json").is_file() and f"{cache}: set 'mid-mini'" in fetched.stdout, fetched.stdout
    proc = full.python_code(ANSWER, full.work / "rendered", timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    last = proc.stdout.strip().splitlines()[-1]
    if last.startswith("SKIP: "):
        pytest.skip(f"no headless OpenGL renderer in the [full] install: {last[6:]}")
    got = json.loads(last)
    assert Path(got["module"]).is_relative_to(full.site), got
    assert got["asked"] >= 2 and got["yes"] >= 0.75 * got["asked"], got
