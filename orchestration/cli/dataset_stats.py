"""Statistics of a generated variant, printed as a table and stored in its manifest.

    python scripts/dataset_stats.py data/generated/long [--json out.json]
    python scripts/dataset_stats.py data/generated/easy data/generated/mid data/generated/hard

With several folders (the visual levels of one seed), also whether their questions are one set:
the same (image, question, program) triples at every level, each answered at its own level.

Concept frequencies against the variant's target (chi-square), objects per scene, and for
questions: per family counts, the largest answer share per question type, program length and
redundant filters per question.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from executors.errors import FormatError
from executors.io import read_json
from nsvqa.artifacts import read_questions, read_scenes
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import parse_checked
from nsvqa.fileio import OutputFile, write_json_atomic
from nsvqa.generation.variants import Variant, VariantError, load_variant


PROG = "nsvqa-dataset-stats"

def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.splitlines()[0])
    p.add_argument("folders", type=Path, nargs="+", help="ROOT/VARIANT folders (each with manifest.json)")
    p.add_argument("--json", type=OutputFile, help="also write the statistics to this file")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "json")
    with needs_extra(PROG):
        from nsvqa.generation.stats import shared_question_sets, variant_stats  # heavy (scipy): after parsing
    everything = {}
    for folder in args.folders:
        stats = folder_stats(folder, variant_stats)
        if stats is None:
            return 2
        everything[folder.name] = stats
    if len(args.folders) > 1:
        everything["shared_questions"] = {}
        for split in ("train", "val", "test"):
            if all((f / "questions" / f"{split}_questions.json").exists() for f in args.folders):
                sh = shared_question_sets(list(args.folders), split)
                everything["shared_questions"][split] = sh
                print(f"== shared questions / {split}: {' / '.join(map(str, sh['questions']))} questions in "
                      f"{', '.join(sh['folders'])}; {sh['shared']} identical (image, question, program) triples"
                      f"{' (one question set)' if sh['identical'] else ''}; answers differing from "
                      f"{sh['folders'][0]}: {', '.join(map(str, sh['answers_differing_from_first']))}")
    if args.json:
        write_json_atomic(args.json, everything if len(args.folders) > 1 else everything[args.folders[0].name])
    return 0


def folder_stats(folder: Path, variant_stats: Callable[[Path, Variant], dict]) -> dict | None:
    """Print one variant folder's statistics (``variant_stats``: :func:`nsvqa.generation.stats.variant_stats`)
    and store them in its manifest (None: an error, said)."""
    mpath = folder / "manifest.json"
    if not mpath.exists():
        print(f"{PROG}: error: {mpath} not found (not a generated variant folder)", file=sys.stderr)
        return None
    try:
        manifest = read_json(mpath)  # strict: a key twice, a number past a float, bytes not UTF-8: one line
        spec = manifest.get("variant_spec")
        variant = Variant.from_dict(spec, str(mpath)) if spec else load_variant(manifest["variant"])
    except FormatError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return None
    except (VariantError, KeyError) as e:
        print(f"{PROG}: error: {mpath}: {e}", file=sys.stderr)
        return None
    try:  # every file read through its checked reader first: one line naming the file, the item and the field
        for path in sorted((folder / "scenes").glob("*_scenes.json")):
            read_scenes(path)
        for path in sorted((folder / "questions").glob("*_questions.json")):
            read_questions(path)
        stats = variant_stats(folder, variant)
    except FormatError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return None
    for split, s in stats.items():
        print(f"== {variant.name} / {split}: {s['images']} images")
        for attr, c in s["concepts"].items():
            if attr == "objects_per_scene":
                print(f"   objects per scene: {c}")
                continue
            p = "n/a" if c["chi2_p"] is None else f"{c['chi2_p']:.3g}"
            print(f"   {attr:9s} chi2 p = {p:8s} outside target: {c['outside_target']:4d}  "
                  + " ".join(f"{k}:{v}" for k, v in c["counts"].items()))
        if "questions" in s:
            q = s["questions"]
            print(f"   questions: {q['n']} ({q['per_image']['object']:.1f} object + {q['per_image']['part']:.1f} part "
                  f"per image), families: {len(q['per_family'])}, program length "
                  f"{q['program_length_mean']:.1f}, redundant filters/question {q['redundant_filters_per_question']:.2f} "
                  f"(part filters {q['redundant_part_filters_per_question']:.2f})")
            print("   largest answer share: " + ", ".join(f"{k} {v:.2f}" for k, v in q["largest_answer_share"].items()))
    manifest["stats"] = stats
    write_json_atomic(mpath, manifest)
    return stats


if __name__ == "__main__":
    sys.exit(main())
