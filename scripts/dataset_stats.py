"""Statistics of a generated variant, printed as a table and stored in its manifest.

    python scripts/dataset_stats.py data/generated/long [--json out.json]

Concept frequencies against the variant's target (chi-square), objects per scene, and for
questions: per family counts, the largest answer share per question type, program length and
redundant filters per question.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nsvqa.fileio import write_json_atomic
from nsvqa.generation.stats import variant_stats
from nsvqa.generation.variants import Variant, VariantError, load_variant


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path, help="ROOT/VARIANT (a folder with manifest.json)")
    p.add_argument("--json", type=Path, help="also write the statistics to this file")
    return p


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    mpath = args.folder / "manifest.json"
    if not mpath.exists():
        print(f"dataset_stats.py: error: {mpath} not found (not a generated variant folder)", file=sys.stderr)
        return 2
    manifest = json.loads(mpath.read_text())
    try:
        spec = manifest.get("variant_spec")
        variant = Variant.from_dict(spec, str(mpath)) if spec else load_variant(manifest["variant"])
    except (VariantError, KeyError) as e:
        print(f"dataset_stats.py: error: {mpath}: {e}", file=sys.stderr)
        return 2
    stats = variant_stats(args.folder, variant)
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
            print(f"   questions: {q['n']}, families: {len(q['per_family'])}, program length "
                  f"{q['program_length_mean']:.1f}, redundant filters/question {q['redundant_filters_per_question']:.2f} "
                  f"(part filters {q['redundant_part_filters_per_question']:.2f})")
            print("   largest answer share: " + ", ".join(f"{k} {v:.2f}" for k, v in q["largest_answer_share"].items()))
    manifest["stats"] = stats
    write_json_atomic(mpath, manifest)
    if args.json:
        write_json_atomic(args.json, stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
