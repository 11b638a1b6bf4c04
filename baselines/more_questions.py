"""More training questions about the same training images, without rendering anything: the question
engine (:class:`nsvqa.generation.questions.QuestionGenerator`) asks ``per_image`` further object
questions of each scene of the training split (the scenes file already holds everything it needs),
seeded by (seed, image index), at the variant's redundancy level. The questions are written once to
``RUN/extra_questions.json`` (a questions file) and reused while the scenes, the count, the seed and
the level are the same. Models that learn from answers alone need far more questions than one
image's ten (FiLM's CLEVR recipe: ~70 per image); images are what is expensive here.

:class:`MoreQuestions` is the mixin a :class:`baselines.classifier.NeuralBaseline` takes to add them
(its config has ``extra_questions_per_image``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from executors.ontology import Ontology
from nsvqa.artifacts.questions import Question, QuestionsFile, read_questions, write_questions
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.fileio import sha256_file

EXTRA_QUESTIONS = "extra_questions.json"


def variant_redundancy(folder: Path) -> str:
    """The redundancy level of the variant ``folder`` is named after (``rd`` when it is no
    catalogued variant: an imported release)."""
    from nsvqa.generation.variants import VariantError, load_variant

    try:
        return load_variant(Path(folder).name).redundancy
    except VariantError:
        return "rd"


def extra_questions(folder: str | Path, split: str, per_image: int, out: str | Path, *, seed: int = 0,
                    ontology: Ontology | None = None) -> list[Question]:
    """``per_image`` more object questions of every scene of ``FOLDER/scenes/<split>_scenes.json``
    (fewer where the engine finds no more), written to ``out`` (reused when it records the same
    scenes file digest, count, seed and level in its ``info``); ``question_index`` continues past
    nothing (0, 1, ...: the file is its own questions file).

    Raises:
        FormatError: a malformed scenes file (file, scene and field named).
    """
    import numpy as np

    from nsvqa.generation.questions import QuestionGenerator

    folder, out = Path(folder), Path(out)
    src = scenes_path(folder, split)
    level = variant_redundancy(folder)
    key = {"scenes_sha256": sha256_file(src), "per_image": int(per_image), "seed": int(seed), "redundancy": level}
    if out.is_file():
        have = read_questions(out, ontology)
        if have.info is not None and all(have.info.get(k) == v for k, v in key.items()):
            return list(have)
    qgen = QuestionGenerator.default()
    records: list[dict[str, Any]] = []
    for scene in read_scenes(src):
        rng = np.random.default_rng([int(seed), int(scene.image_index), 7])  # 7: not the generator's own stream
        records += qgen.generate(dict(scene.record), rng, n_object=per_image, n_part=0, redundancy=level)
    for k, q in enumerate(records):
        q["question_index"] = k
    write_questions(out, QuestionsFile(key, tuple(
        Question.from_json(r, index=k, where=f"{out}, question {k}") for k, r in enumerate(records))))
    return list(read_questions(out, ontology))


class MoreQuestions:
    """Mixin of a :class:`~baselines.classifier.NeuralBaseline` whose config has
    ``extra_questions_per_image`` (0: the train file's questions only): the training questions are
    the train file's followed by :func:`extra_questions` of the training scenes."""

    def training_questions(self, cfg: Any, folder: Path, records: Sequence[Question], run_path: Path,
                           onto: Ontology) -> list[Question]:
        n = int(getattr(cfg, "extra_questions_per_image", 0))
        if n <= 0:
            return list(records)
        more = extra_questions(folder, "train", n, Path(run_path) / EXTRA_QUESTIONS, seed=cfg.seed, ontology=onto)
        return list(records) + [q for q in more if q.question is not None and q.answer is not None]


__all__ = ["EXTRA_QUESTIONS", "extra_questions", "variant_redundancy", "MoreQuestions"]
