"""Question engine speed: questions/s on one core (10 object + 10 part questions per image).

    python benchmarks/bench_questions.py [--scenes 50] [--levels rd- rd rd+] [--repeat 3]

Scenes: the ten Super-CLEVR sample scenes (``tests/fixtures/reference/superclevr/superCLEVR_scenes.json``,
committed; tests/fixtures/README.md) topped up with synthetic scenes
of 3-10 objects with up to 3 recoloured parts each
(:func:`nsvqa.generation.questions.synthetic_scene`, no rendering), ``--scenes`` in all. Only
``QuestionGenerator.generate`` is timed (scene indexing, search, executor checks, texts: all of it;
loading the templates is not). Each level runs ``--repeat`` times with a fresh generator (the
median run is reported). Every answer is then checked against the deterministic executor outside
the timed region; a wrong answer or an invalid program is exit status 1. Target: >= 100
questions/s per core (informational). Writes runs/bench/bench_questions.json.
"""
from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from executors import DeterministicExecutor, Program, SymbolicScene, load_ontology  # noqa: E402
from nsvqa.generation.questions import QuestionGenerator, load_templates, synthetic_scene  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "tests" / "fixtures" / "reference" / "superclevr" / "superCLEVR_scenes.json"
TARGET = 100.0


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", type=int, default=50, help="scenes in all (reference ones first)")
    p.add_argument("--levels", nargs="+", default=["rd-", "rd", "rd+"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--reference", type=Path, default=REFERENCE,
                   help="Super-CLEVR scenes JSON (default: the ten sample scenes in tests/fixtures/reference/"
                        "superclevr/superCLEVR_scenes.json; a missing file: synthetic scenes stand in)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=REPO / "runs" / "bench" / "bench_questions.json")
    return p


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    if args.scenes < 1 or args.repeat < 1:
        print("--scenes and --repeat must be >= 1", file=sys.stderr)
        return 2
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    onto = load_ontology("superclevr")
    templates = load_templates(ontology=onto)
    scenes = []
    if args.reference.exists():
        scenes = json.loads(args.reference.read_text())["scenes"][: args.scenes]
    n_ref = len(scenes)
    rng = np.random.default_rng(args.seed)
    scenes += [synthetic_scene(onto, rng, image_index=10_000 + i) for i in range(args.scenes - n_ref)]
    ex = DeterministicExecutor(onto)
    rows, failures = [], 0
    for level in args.levels:
        runs = []
        for rep in range(args.repeat):
            gen = QuestionGenerator(onto, templates)
            out = []
            t = time.perf_counter()
            for s in scenes:
                out.append(gen.generate(s, np.random.default_rng([args.seed, s["image_index"]]), redundancy=level))
            runs.append((time.perf_counter() - t, out))
        times = sorted(r[0] for r in runs)
        med = statistics.median(times)
        questions = runs[0][1]
        n = sum(len(q) for q in questions)
        wrong = 0
        for s, qs in zip(scenes, questions):
            sym = SymbolicScene.from_json(s, onto)
            for q in qs:
                try:
                    ok = ex.run(Program.from_json(q["program"], onto), sym, trace=False).answer == q["answer"]
                except Exception:  # noqa: BLE001 - any failure is a wrong question
                    ok = False
                wrong += not ok
        failures += wrong
        qps = n / med
        rows.append({"level": level, "scenes": len(scenes), "reference_scenes": n_ref, "questions": n,
                     "median_s": round(med, 4), "best_s": round(times[0], 4),
                     "questions_per_second": round(qps, 1), "best_questions_per_second": round(n / times[0], 1),
                     "wrong": wrong, "target": "PASS" if qps >= TARGET else "BELOW"})
        print(f"{level:4s} {len(scenes):3d} scenes ({n_ref} reference) {n:5d} questions  "
              f"median {qps:8.1f} q/s  best {n / times[0]:8.1f} q/s  wrong {wrong}  "
              f"{'PASS' if qps >= TARGET else 'BELOW'} (target >= {TARGET:.0f}/s per core)")
    out = {"rows": rows, "settings": {"repeat": args.repeat, "seed": args.seed, "cpus_used": 1},
           "machine": {"platform": platform.platform(), "python": sys.version.split()[0]}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1))
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
