"""The study's reruns (issue 64) beside the pieces they replace: the in-domain accuracies and every
factor's RDs of the committed report, and of the report rebuilt with each staged piece of
``results/study/reruns/pieces/`` in place of its namesake (the rest as committed), and each model's
in-domain accuracy per training seed (what a staged seed piece, ``mid-seed1-modular`` widened by
``StudyConfig.seed_pieces``, moves: its factors read seed 0 until every training variant of theirs
ran that seed). A staged piece without a namesake is added. A factor whose
training variants borrow a rerun piece's scene parser while their own pieces have not run again is
marked: its new RDs mix the two scene parsers.

    .venv/bin/python results/study/reruns/compare.py     # writes compare.json and compare.md here
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from nsvqa.fileio import write_atomic, write_json_atomic
from nsvqa.models import ModelSpec
from orchestration.models import get as get_model
from orchestration.study.settings.pieces import canonical
from orchestration.study.report.build import build_study_report

HERE = Path(__file__).resolve().parent
STUDY = HERE.parent


def borrowers(study: Path, reran: set[str]) -> dict[str, str]:
    """Committed pieces (not rerun) that read a rerun piece's scene parser: of its seed, naming its
    variant as ``scene_parser_of``, and with a model that reads scene parses. piece -> owner."""
    owners = {}
    for p in reran:
        rec = json.loads((HERE / "pieces" / p / "piece.json").read_text())["piece"]
        owners[(rec["variant"], int(rec["seed"]))] = p
    out = {}
    for f in sorted((study / "pieces").glob("*/piece.json")):
        rec = json.loads(f.read_text())
        piece = rec["piece"]
        owner = owners.get((rec.get("scene_parser_of"), int(piece["seed"])))
        reads = any(get_model(ModelSpec.from_label(m).name).needs(ModelSpec.from_label(m)).scene_parser
                    for m in piece["models"])
        if f.parent.name not in reran and owner is not None and piece["group"] != "parts" and reads:
            out[f.parent.name] = owner
    return out


def summary(report: dict) -> dict:
    return {"in_domain": {r["model"]: r["accuracy"] for r in report["in_domain"]},
            "seeds": {m: v["per_seed"] for m, v in (report.get("seeds") or {}).items()},
            "rd": {f: {m: v["rd"] for m, v in fac["models"].items()} for f, fac in report["factors"].items()}}


def main() -> int:
    staged = sorted(p.name for p in (HERE / "pieces").glob("*") if (p / "piece.json").is_file())
    if not staged:
        print("no staged piece under", HERE / "pieces", file=sys.stderr)
        return 2
    old = summary(json.loads((STUDY / "report.json").read_text()))
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "study"
        shutil.copytree(STUDY, copy, ignore=shutil.ignore_patterns("reruns", "*.png"))
        for name in staged:
            shutil.rmtree(copy / "pieces" / name, ignore_errors=True)  # none: a new piece
            shutil.copytree(HERE / "pieces" / name, copy / "pieces" / name, ignore=shutil.ignore_patterns("parses"))
        new = summary(json.loads(build_study_report(copy, plots=False)["report.json"]))
        mixed = borrowers(copy, set(staged))
    trains = {f: {canonical(v) for v in fac["train_variants"]}
              for f, fac in json.loads((STUDY / "report.json").read_text())["factors"].items()}
    pieces = {p: json.loads((STUDY / "pieces" / p / "piece.json").read_text())["piece"] for p in mixed}
    mixed_factors = {f: sorted({m for p, rec in pieces.items() if rec["variant"] in tv for m in rec["models"]})
                     for f, tv in trains.items()}
    mixed_factors = {f: ms for f, ms in mixed_factors.items() if ms}
    record = {"staged": staged, "borrowers_not_rerun": mixed, "factors_mixed": mixed_factors, "old": old, "new": new}
    write_json_atomic(HERE / "compare.json", record, indent=1)
    lines = [f"# Reruns beside the pieces they replace: {', '.join(staged)}", "",
             "Written by `compare.py` from the committed report and the report rebuilt with the staged pieces. "
             "Accuracy and RD in %; old → new.", "", "## In domain (train and test `mid`, seed 0)", "",
             "| model | old | new | new − old |", "|---|---|---|---|"]
    for m, a in old["in_domain"].items():
        b = new["in_domain"].get(m)
        lines.append(f"| {m} | {100 * a:.1f} | {'—' if b is None else f'{100 * b:.1f}'} | "
                     f"{'—' if b is None else f'{100 * (b - a):+.1f}'} |")
    seeds = sorted({s for rows in (old["seeds"], new["seeds"]) for v in rows.values() for s in v}, key=int)
    lines += ["", "## In domain per training seed (train and test `mid`)", "",
              "| model | " + " | ".join(f"seed {s}" for s in seeds) + " |", "|---|" + "---|" * len(seeds)]
    for m in dict.fromkeys([*old["seeds"], *new["seeds"]]):
        cells = []
        for s in seeds:
            a, b = old["seeds"].get(m, {}).get(s), new["seeds"].get(m, {}).get(s)
            cells.append("—" if a is None and b is None else f"{'—' if a is None else f'{100 * a:.1f}'} → "
                         f"{'—' if b is None else f'{100 * b:.1f}'}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    for f, rds in old["rd"].items():
        note = (f" (mixed for {', '.join(mixed_factors[f])}: a row of theirs reads the old scene parser)"
                if f in mixed_factors else "")
        lines += ["", f"## RD, {f}{note}", "", "| model | old | new |", "|---|---|---|"]
        for m, a in rds.items():
            b = new["rd"].get(f, {}).get(m)
            lines.append(f"| {m} | {'—' if a is None else f'{100 * a:.2f}'} | {'—' if b is None else f'{100 * b:.2f}'} |")
    lines += ["", "Pieces that borrow a staged piece's scene parser and still hold the old one's parses: "
              + (", ".join(f"`{p}`" for p in mixed) or "none") + "."]
    write_atomic(HERE / "compare.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
