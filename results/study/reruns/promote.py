"""Put the staged reruns (issue 64) in place of their namesakes under ``results/study/pieces/``,
once every borrower of their scene parsers has run again (``compare.json`` lists none left).

Each staged piece (with its ``parses/``) is moved with ``git mv``; the piece it replaces is removed
with ``git rm`` and stays in the history at the commit ``promoted.json`` names (its top-level
``commit`` for the first swap; a piece promoted later records its own ``commit``, the HEAD it was
promoted from), with its ``seconds.total`` (the study's budget keeps those hours; the rerun's count
under the reruns' cap: ``orchestration.study.settings.budget``). A seed piece the study config widens
(``StudyConfig.seed_pieces``: ``mid-seed1-modular`` with NSCL and every test) replaces its reduced
namesake the same way; a staged piece without a namesake is moved in and recorded nowhere (a new
seed piece: its hours count under the reruns' cap by name). Run ``compare.py`` first; rebuild the
report after.

    .venv/bin/python results/study/reruns/promote.py
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nsvqa.fileio import write_json_atomic
from orchestration.study.settings.budget import PROMOTED, read_promoted

HERE = Path(__file__).resolve().parent
STUDY = HERE.parent


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=STUDY, check=True, capture_output=True, text=True).stdout.strip()


def main() -> int:
    staged = sorted(p.parent.name for p in (HERE / "pieces").glob("*/piece.json"))
    if not staged:
        print(f"{HERE / 'pieces'}: no staged piece", file=sys.stderr)
        return 2
    compare = json.loads((HERE / "compare.json").read_text())
    if sorted(compare["staged"]) != staged or compare["borrowers_not_rerun"]:
        print(f"{HERE / 'compare.json'}: written for {compare['staged']} with borrowers not rerun "
              f"{compare['borrowers_not_rerun']}; run compare.py after the last borrower", file=sys.stderr)
        return 2
    if git("status", "--porcelain", "--", str(STUDY / "pieces"), str(HERE)):
        print(f"{STUDY / 'pieces'} or {HERE}: uncommitted changes; commit them first", file=sys.stderr)
        return 2
    head = git("rev-parse", "HEAD")  # holds the pieces replaced now: the tree is clean
    record = read_promoted(STUDY) or {"issue": 64, "commit": head, "pieces": {}}
    for name in staged:
        old = STUDY / "pieces" / name
        if not (old / "piece.json").is_file():  # a new seed piece: nothing replaced
            old.parent.mkdir(parents=True, exist_ok=True)
            git("mv", str(HERE / "pieces" / name), str(old))
            print(f"{name}: promoted (a new piece, nothing replaced)")
            continue
        seconds = float(json.loads((old / "piece.json").read_text())["seconds"]["total"])
        record["pieces"][name] = {"old_seconds": seconds, **({"commit": head} if head != record["commit"] else {})}
        git("rm", "-r", "-q", str(old))
        git("mv", str(HERE / "pieces" / name), str(old))
        print(f"{name}: promoted (replaced {seconds / 3600:.2f} h)")
    write_json_atomic(HERE / PROMOTED, record, indent=1)
    git("add", str(HERE / PROMOTED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
