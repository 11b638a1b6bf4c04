"""More questions about scenes already generated, without rendering anything: the question engine
asks further object questions of each scene record (a scenes file holds everything it needs), at a
variant's redundancy level.

:func:`more_questions` is pure (scene records in, question records out); the training-data side
that writes them to a run's questions file and reuses it is
:func:`nsvqa.training.more_questions.extra_questions`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from executors.errors import FormatError
from nsvqa.generation.variants import VariantError, load_variant

from .generator import QuestionGenerator

#: The stream the extra questions of a scene draw from besides (seed, image index): not the
#: generator's own, so that they are other draws than the scene's questions in its questions file.
MORE_STREAM = 7


def variant_redundancy(folder: str | Path) -> str:
    """The redundancy level of the variant ``folder`` is named after (``rd`` when it is no
    catalogued variant: an imported release)."""
    try:
        return load_variant(Path(folder).name).redundancy
    except VariantError:
        return "rd"


def more_questions(scenes: Iterable[Mapping[str, Any]], per_image: int, *, seed: int = 0, redundancy: str = "rd",
                   generator: QuestionGenerator | None = None, source: str = "scenes") -> list[dict]:
    """``per_image`` object questions of every scene record of ``scenes`` (fewer where the engine
    finds no more), in scene order, numbered ``question_index`` 0, 1, ... over all of them. A
    scene's draws come from (``seed``, its ``image_index``, :data:`MORE_STREAM`); the engine's
    answer balancing carries over from scene to scene (:meth:`QuestionGenerator.state`), so a
    scene's questions also depend on the scenes ``generator`` was given before.

    Args:
        per_image: questions asked of each scene (>= 0).
        redundancy: the level of the question texts (:data:`~nsvqa.generation.questions.LEVELS`).
        generator: the engine (default: :meth:`QuestionGenerator.default`).
        source: what ``scenes`` came from, named in errors.

    Raises:
        ValueError: ``per_image`` < 0 or an unknown redundancy level.
        executors.FormatError: a scene record without an integer ``image_index``, or malformed
            (``source``, the scene and the field named).
    """
    if per_image < 0:
        raise ValueError(f"per_image must be >= 0, got {per_image}")
    qgen = generator or QuestionGenerator.default()
    records: list[dict] = []
    for i, scene in enumerate(scenes):
        index = scene.get("image_index") if isinstance(scene, Mapping) else None
        if not isinstance(index, int) or isinstance(index, bool):
            raise FormatError(f"{source}, scene {i}, field 'image_index': an integer is needed, got {index!r}")
        rng = np.random.default_rng([int(seed), index, MORE_STREAM])
        records += qgen.generate(dict(scene), rng, n_object=per_image, n_part=0, redundancy=redundancy)
    for k, q in enumerate(records):
        q["question_index"] = k
    return records


__all__ = ["MORE_STREAM", "more_questions", "variant_redundancy"]
