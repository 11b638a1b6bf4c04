"""Run the bundled example questions through both executors and print a table.

For every question of ``data/examples/questions.json`` (on ``data/examples/scenes.json``) the
table shows the official answer, the deterministic executor's answer and the P-NSVQA executor's
answers in ``threshold`` and ``exact`` mode with the probability of the chosen answer, on two
inputs:

* ``1-hot``: :meth:`SceneLikelihoods.from_scene` of the ground-truth scene (the probabilistic
  executor must then answer like the deterministic one);
* ``soft``: the same likelihoods softened as a perception model would give them (see
  :func:`soften_likelihoods`): every distribution row is mixed with random noise, every detection
  and part exists with probability < 1.

A malformed program is reported with its :class:`InvalidProgram` message below the table.
``make demo`` runs this script::

    python scripts/demo_executors.py [--noise 0.2 --exist 0.9 --seed 0]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from executors.deterministic import DeterministicExecutor
from executors.errors import ExecutionError, FormatError, InvalidProgram
from executors.io import load_questions, load_scenes, normalize_answer, parse_program, question_scene, scene_lookup
from executors.scene import SceneLikelihoods

from executors.probabilistic import ProbabilisticExecutor
from nsvqa.config import HelpFormatter
from nsvqa.evaluation.inputs import probability_cut

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "data" / "examples"
MODES = ("threshold", "exact")


def soften_likelihoods(lik: SceneLikelihoods, noise: float = 0.2, exist: float = 0.9,
                       rng: np.random.Generator | int = 0) -> SceneLikelihoods:
    """A noisy copy of (typically one-hot) likelihoods, as a perception model might output.

    Every attribute row becomes ``(1 - noise) * row + noise * u`` with ``u`` a random distribution
    over the attribute's values (uniform draws, normalised), so the true value keeps at least
    ``1 - noise``; detection probabilities are multiplied by ``exist``; relation matrices are mixed
    with uniform noise in [0, 1) the same way (diagonal kept at 0); part existence is multiplied by
    ``exist`` and part attribute rows are mixed like object attributes.

    Args:
        lik: likelihoods of N objects.
        noise: weight in [0, 1] of the random distribution.
        exist: factor in [0, 1] on every detection / part probability.
        rng: a numpy Generator or a seed (the result is deterministic for a seed).

    Returns:
        A new :class:`SceneLikelihoods` with the same shapes; ``lik`` is not modified.
    """
    if not 0.0 <= noise <= 1.0 or not 0.0 <= exist <= 1.0:
        raise ValueError(f"noise and exist must be in [0, 1], got noise={noise}, exist={exist}")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)

    def mix(rows: np.ndarray) -> np.ndarray:
        u = rng.random(rows.shape) + 1e-12
        return (1.0 - noise) * rows + noise * u / u.sum(axis=-1, keepdims=True)

    attrs = {a: mix(np.asarray(v, dtype=float)) for a, v in lik.attributes.items()}
    relations = None
    if lik.relations is not None:
        relations = {}
        for r, m in lik.relations.items():
            m = (1.0 - noise) * np.asarray(m, dtype=float) + noise * rng.random(m.shape)
            np.fill_diagonal(m, 0.0)
            relations[r] = m
    part_exist = part_attrs = None
    if lik.part_exist is not None:
        part_exist = np.asarray(lik.part_exist, dtype=float) * exist
        part_attrs = {a: mix(np.array(v, dtype=float)) for a, v in (lik.part_attributes or {}).items()}
    return SceneLikelihoods(lik.ontology, np.asarray(lik.exist, dtype=float) * exist, attrs, lik.positions.copy(),
                            lik.position_std.copy(), dict(lik.directions), lik.margin, relations, part_exist,
                            part_attrs, lik.image_index)


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, description="Compare the deterministic and probabilistic executors on the "
                                            "bundled example questions.")
    p.add_argument("--scenes", type=Path, default=EXAMPLES / "scenes.json", help="scenes JSON to answer on")
    p.add_argument("--questions", type=Path, default=EXAMPLES / "questions.json", help="questions JSON (with programs)")
    p.add_argument("--noise", type=float, default=0.2, help="weight of the random noise in soft likelihoods")
    p.add_argument("--exist", type=float, default=0.9, help="detection probability in soft likelihoods")
    p.add_argument("--seed", type=int, default=0, help="numpy seed of the soft likelihoods")
    p.add_argument("--threshold", type=probability_cut, default=0.7,
                   help="threshold of the probabilistic threshold mode, in (0, 1]")
    p.add_argument("--question-width", type=int, default=46, help="characters of the question column")
    return p


def _plain(a: Any) -> Any:
    item = getattr(a, "item", None)
    return item() if callable(item) and not isinstance(a, str) else a


def _cell(answer: Any, prob: float | None = None) -> str:
    s = str(_plain(answer))
    return s if prob is None else f"{s} ({prob:.2f})"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _display_path(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(REPO))
    except ValueError:
        return str(p)


def _prob_cell(ex, program, lik) -> tuple[str, Any]:
    """(cell text, answer or None) of one probabilistic run."""
    try:
        res = ex.run(program, lik, trace=False)
    except ExecutionError as e:
        return type(e).__name__, None
    p = None
    if res.distribution:
        p = res.distribution.get(res.answer, res.distribution.get(_plain(res.answer)))
    return _cell(res.answer, None if p is None else float(p)), _plain(res.answer)


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(r[c])) for r in [header, *rows]) for c in range(len(header))]
    line = lambda r: "  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def _probabilistic_columns(scenes: Sequence, onto, args: argparse.Namespace) -> list[tuple[str, Any, list]]:
    """The probabilistic columns of the table, as (title, executor, likelihoods per scene): each of
    :data:`MODES` at ``args.threshold`` on the one-hot likelihoods of ``scenes``, then on them
    softened (:func:`soften_likelihoods` with ``args.noise``, ``args.exist``, one generator seeded
    ``args.seed`` drawn scene after scene)."""
    prob: list[tuple[str, Any, list]] = []
    one_hot = [SceneLikelihoods.from_scene(s) for s in scenes]
    rng = np.random.default_rng(args.seed)
    soft = [soften_likelihoods(l, args.noise, args.exist, rng) for l in one_hot]
    for name, liks in (("1-hot", one_hot), ("soft", soft)):
        for m in MODES:
            prob.append((f"{m} {name}", ProbabilisticExecutor(onto, mode=m, threshold=args.threshold), liks))
    return prob


def _question_row(i: int, q: dict, where: str, scenes: Sequence, lookup, onto, det: DeterministicExecutor,
                  prob: Sequence[tuple[str, Any, list]], width: int, notes: list[str]) -> tuple[list[str], list]:
    """The table row of question ``i`` (``q``, named ``where`` in messages) and the answers of the
    deterministic executor and of each of ``prob``'s columns (None where one failed; none at all
    when the question names no scene or its program is malformed, its cells then the error's name).
    Each failure is added to ``notes``."""
    row = [str(i), _short(q.get("question", ""), width), _cell(q.get("answer"))]
    try:
        k = question_scene(q, lookup, where)
        program = parse_program(q, onto, where)
    except (InvalidProgram, FormatError) as e:
        row += [type(e).__name__] * (1 + len(prob))
        notes.append(f"[{i}] {type(e).__name__}: {e}")
        return row, []
    answers = []
    try:
        answers.append(det.run(program, scenes[k], trace=False).answer)
        row.append(_cell(answers[-1]))
    except ExecutionError as e:
        answers.append(None)
        row.append(type(e).__name__)
        notes.append(f"[{i}] deterministic: {type(e).__name__}: {e}")
    for _, ex, liks in prob:
        text, a = _prob_cell(ex, program, liks[k])
        answers.append(a)
        row.append(text)
    return row, answers


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    for label, path in (("scenes", args.scenes), ("questions", args.questions)):
        if not path.is_file():
            print(f"demo_executors.py: error: {label} file not found: {path}", file=sys.stderr)
            return 2
    try:
        scenes, onto = load_scenes(args.scenes)
        questions = load_questions(args.questions)
    except FormatError as e:
        print(f"demo_executors.py: error: {e}", file=sys.stderr)
        return 2

    det = DeterministicExecutor(onto)
    columns = ["#", "question", "official", "deterministic"]
    prob = _probabilistic_columns(scenes, onto, args)
    columns += [title for title, _, _ in prob]

    lookup = scene_lookup(scenes)
    qname = _display_path(args.questions)
    rows, notes = [], []
    agree = [0] * (1 + len(prob))
    for i, q in enumerate(questions):
        gold = q.get("answer")
        row, answers = _question_row(i, q, f"{qname}, question {i}", scenes, lookup, onto, det, prob,
                                     args.question_width, notes)
        for c, a in enumerate(answers):
            if a is not None and gold is not None and normalize_answer(a) == normalize_answer(gold):
                agree[c] += 1
            elif a is not None:
                row[3 + c] += " *"
        rows.append(row)

    print(f"Scenes: {_display_path(args.scenes)} ({len(scenes)}, ontology {onto.name}); "
          f"questions: {qname} ({len(questions)})")
    print(f"Probabilistic columns: answer (probability of that answer); soft = one-hot rows mixed with "
          f"random noise {args.noise}, detections exist with {args.exist}, seed {args.seed}; "
          f"threshold {args.threshold}.")
    print()
    print(render_table(columns, rows))
    print()
    print("* = differs from the official answer.  Agreement with the official answers: "
          + ", ".join(f"{t} {a}/{len(questions)}" for t, a in zip(columns[3:], agree)))
    if notes:
        print()
        print("Errors:")
        for n in notes:
            print("  " + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
