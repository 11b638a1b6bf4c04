"""Shared fixtures of the test suite."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from executors import load_ontology
from nsvqa.generation.questions import QuestionGenerator, synthetic_scene

REPO = Path(__file__).resolve().parents[1]

#: The small committed subset of the reference data (tests/fixtures/README.md).
FIXTURES_REFERENCE = REPO / "tests" / "fixtures" / "reference"
#: Environment variable naming the full reference data (``clevr/``, ``superclevr/``; not in the repository).
REFERENCE_ENV = "NSVQA_REFERENCE"


@pytest.fixture(scope="session")
def reference_fixtures() -> Path:
    """The committed reference files (``superclevr/``: the ten sample scenes, the generator's
    metadata and ``dist/`` tables); always present."""
    return FIXTURES_REFERENCE


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The full reference data, from ``$NSVQA_REFERENCE``; skips the test when it is unset or not a folder."""
    value = os.environ.get(REFERENCE_ENV, "")
    if not value:
        pytest.skip(f"{REFERENCE_ENV} not set: the full reference data (official question files, CLEVR scenes, "
                    "sample renders) is not in the repository")
    path = Path(value)
    if not path.is_dir():
        pytest.fail(f"{REFERENCE_ENV}={value}: no such folder")
    return path


def _load_script(name: str):
    """The module of command ``name``: its CLI module (``orchestration/cli/<name>.py`` or
    ``nsvqa/cli/<name>.py``, which the shim ``scripts/<name>.py`` runs), else ``scripts/<name>.py``
    (a developers' tool) imported by path, as a module of its own name."""
    for package in ("orchestration.cli", "nsvqa.cli"):
        if (REPO / package.replace(".", "/") / f"{name}.py").is_file():
            return importlib.import_module(f"{package}.{name}")
    spec = importlib.util.spec_from_file_location(f"_script_{name}", REPO / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses in a script look their module up here
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def load_script():
    """``load_script("execute_programs")`` -> the script's module (its ``main(argv)``)."""
    return _load_script


def _write_qa_split(root: Path, split: str, n_scenes: int, seed: int, start: int = 0) -> None:
    gen, rng, onto = QuestionGenerator.default(), np.random.default_rng(seed), load_ontology("superclevr")
    scenes, questions = [], []
    for i in range(n_scenes):
        sc = synthetic_scene(onto, rng, image_index=start + i, split=split)
        scenes.append(sc)
        questions += gen.generate(sc, rng, n_object=4, n_part=2)
    for k, q in enumerate(questions):
        q["question_index"] = k
    for sub, items in (("scenes", scenes), ("questions", questions)):
        (root / sub).mkdir(parents=True, exist_ok=True)
        (root / sub / f"{split}_{sub}.json").write_text(json.dumps({"info": {}, sub: items}))


@pytest.fixture(scope="session")
def write_qa_split():
    """``write_qa_split(ROOT, split, n_scenes, seed, start=0)`` writes ``n_scenes`` synthetic
    Super-CLEVR scenes (``image_index`` from ``start``) and their questions (6 per scene) under ROOT
    in the on-disk layout (``scenes/``, ``questions/``; no images): a question-only dataset."""
    return _write_qa_split


def _in_ci() -> bool:
    """Whether the suite runs under CI (``CI=true``, as CI services and ``.ci/run`` set it)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def require_renderer() -> None:
    """Skips the test when no headless EGL OpenGL context can be made (the message says why); under
    CI (:func:`_in_ci`) fails instead, since every trainer and baseline test needs rendered data and a
    silent skip would hide them all."""
    from nsvqa.generation.renderer import Renderer, RendererUnavailable

    try:
        Renderer(32, 24).release()
    except RendererUnavailable as e:
        if _in_ci():
            pytest.fail(f"CI=true and no renderer: {e}", pytrace=False)
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def require_backbone_weights() -> None:
    """Skips the test when the pretrained backbone's weights package is not installed (the message
    names the pip command); under CI (:func:`_in_ci`) fails instead: requirements.txt installs it."""
    from parsers.backbones import WeightsUnavailable, weights_path

    try:
        weights_path()
    except WeightsUnavailable as e:
        if _in_ci():
            pytest.fail(f"CI=true and no backbone weights: {e}", pytrace=False)
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory, require_renderer) -> Path:
    """One tiny rendered dataset for the tests that only read one (64x48 images, 20 questions each):
    ``mid`` train 4 / val 2 / test 2 images and ``hard`` test 2 images. Made once per test process;
    tests write their runs to their own ``tmp_path``."""
    from nsvqa.generation.dataset import generate_split, job_for

    root = tmp_path_factory.mktemp("tiny_data")
    for variant, split, n, seed in (("mid", "train", 4, 3), ("mid", "val", 2, 4), ("mid", "test", 2, 5),
                                    ("hard", "test", 2, 6)):
        generate_split(job_for(root, variant, split, n, seed, 64, 48), progress=False)
    return root
