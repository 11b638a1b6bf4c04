"""More training questions about the same training images, without rendering anything: the question
engine asks ``per_image`` further object questions of each scene of the training split
(:func:`nsvqa.generation.questions.more_questions`), seeded by (seed, image index), at the variant's
redundancy level. They are written once to ``RUN/extra_questions.json`` (a questions file) and reused
while the scenes, the count, the seed and the level are the same. Generation saves its progress
every :data:`CHUNK` scenes to ``<file>.partial`` (the questions so far and the engine's balancing
state), so a stopped run resumes where it stopped and ends with the same bytes as one that never
stopped; the partial file is removed once the questions file is written. Images are what is expensive here;
questions about the scenes already rendered cost seconds.

Used by the question parser's trainer (:class:`nsvqa.training.question_config.QuestionParserConfig`'s
``extra_questions_per_image``) and by the baselines that learn from answers alone
(``baselines.more_questions.MoreQuestions``).
"""
from __future__ import annotations

from pathlib import Path

from executors.io import read_json
from executors.ontology import Ontology
from nsvqa.artifacts.questions import Question, QuestionsFile, read_questions, write_questions
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.fileio import sha256_file, write_json_atomic
from nsvqa.generation.questions import QuestionGenerator, more_questions, variant_redundancy

#: The file of a run directory that holds its extra training questions.
EXTRA_QUESTIONS = "extra_questions.json"
#: Scenes between two saves of an unfinished questions file's progress (``<file>.partial``).
CHUNK = 200


def extra_questions(folder: str | Path, split: str, per_image: int, out: str | Path, *, seed: int = 0,
                    ontology: Ontology | None = None, chunk: int = CHUNK) -> list[Question]:
    """``per_image`` more object questions of every scene of ``FOLDER/scenes/<split>_scenes.json``
    (fewer where the engine finds no more), written to ``out`` (reused when it records the same
    scenes file digest, count, seed and level in its ``info``); ``question_index`` continues past
    nothing (0, 1, ...: the file is its own questions file). Progress is saved every ``chunk``
    scenes to ``<out>.partial`` and resumed from there when it records the same key.

    Raises:
        FormatError: a malformed scenes file (file, scene and field named).
    """
    folder, out = Path(folder), Path(out)
    src = scenes_path(folder, split)
    level = variant_redundancy(folder)
    key = {"scenes_sha256": sha256_file(src), "per_image": int(per_image), "seed": int(seed), "redundancy": level}
    if out.is_file():
        have = read_questions(out, ontology)
        if have.info is not None and all(have.info.get(k) == v for k, v in key.items()):
            return list(have)
    partial = out.with_name(out.name + ".partial")
    qgen, records, done = QuestionGenerator.default(), [], 0
    if partial.is_file():
        try:
            saved = read_json(partial, allow_nan=True)
        except (OSError, ValueError):
            saved = None  # a torn or foreign file: start over (it is replaced at the first save)
        if isinstance(saved, dict) and saved.get("key") == key:
            records, done = list(saved["questions"]), int(saved["done"])
            qgen.load_state(saved["state"])
    scenes = [s.record for s in read_scenes(src)]
    for start in range(done, len(scenes), max(1, int(chunk))):
        part = scenes[start:start + max(1, int(chunk))]
        records += more_questions(part, per_image, seed=seed, redundancy=level, generator=qgen, source=str(src))
        write_json_atomic(partial, {"key": key, "done": start + len(part), "state": qgen.state(),
                                    "questions": records})
    for k, q in enumerate(records):
        q["question_index"] = k
    write_questions(out, QuestionsFile(key, tuple(
        Question.from_json(r, index=k, where=f"{out}, question {k}") for k, r in enumerate(records))))
    partial.unlink(missing_ok=True)
    return list(read_questions(out, ontology))


__all__ = ["CHUNK", "EXTRA_QUESTIONS", "extra_questions"]
