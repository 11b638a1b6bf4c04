"""Put the staged reruns (issue 64) in place of their namesakes under ``results/study/pieces/``,
once every borrower of their scene parsers has run again (``compare.json`` lists none left).

Each staged piece (with its ``parses/``) is moved with ``git mv``; the piece it replaces is removed
with ``git rm`` and stays in the history at the commit ``promoted.json`` names, with its
``seconds.total`` (the study's budget keeps those hours; the rerun's count under the reruns' cap:
``orchestration.study.cost``). Run ``compare.py`` first; rebuild the report after.

    .venv/bin/python results/study/reruns/promote.py
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nsvqa.fileio import write_json_atomic
from orchestration.study.cost import PROMOTED, read_promoted

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
    record = read_promoted(STUDY) or {"issue": 64, "commit": git("rev-parse", "HEAD"), "pieces": {}}
    for name in staged:
        old = STUDY / "pieces" / name
        record["pieces"][name] = {"old_seconds": float(json.loads((old / "piece.json").read_text())["seconds"]["total"])}
        git("rm", "-r", "-q", str(old))
        git("mv", str(HERE / "pieces" / name), str(old))
        print(f"{name}: promoted (replaced {record['pieces'][name]['old_seconds'] / 3600:.2f} h)")
    write_json_atomic(HERE / PROMOTED, record, indent=1)
    git("add", str(HERE / PROMOTED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
