"""Transfer: trained parsers on the official Super-CLEVR renders (detection, attributes, accuracy by question kind).

    python scripts/evaluate_transfer.py --release $NSVQA_REFERENCE/superclevr \\
        --questions $NSVQA_REFERENCE/superclevr/superCLEVR_questions_official_objects.json \\
                    $NSVQA_REFERENCE/superclevr/superCLEVR_questions_official_parts.json \\
        --split test=0-9 --parsers pretrained:mid-mini --out results/transfer/mid-mini

Imports the release's split (scripts/import_superclevr.py's options; images resized to 320x240)
under WORK/data, runs NS-VQA, P-NSVQA and P-NSVQA-exact with the parsers (parsed and ground-truth
programs) under WORK/runs, and writes OUT/report.json and OUT/report.md (orchestration.transfer).
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from executors.errors import FormatError
from nsvqa.cli import command_parser, needs_extra
from nsvqa.config import parse_checked
from nsvqa.fileio import OutputFolder, write_atomic, write_json_atomic
from nsvqa.generation.official import OfficialRelease, add_release_args, import_release, parse_split_ranges
from nsvqa.pretrained import PretrainedError

PROG = "nsvqa-evaluate-transfer"


def get_args_parser() -> argparse.ArgumentParser:
    p = command_parser(PROG, __doc__.splitlines()[0])
    p.add_argument("--release", type=Path, required=True, help="the release folder (see import_superclevr.py)")
    add_release_args(p)
    p.add_argument("--split", default="test=25000-29999", metavar="test=FIRST-LAST",
                   help="image_index range evaluated (default: the official test range)")
    p.add_argument("--parsers", default="pretrained:mid-mini",
                   help="pretrained:NAME or a folder with scene_parser/ and question_parser/")
    p.add_argument("--trained-on", default="mid", help="the variant the parsers were trained on")
    p.add_argument("--work", type=Path, default=Path("runs/transfer"), help="imported data and run (not committed)")
    p.add_argument("--out", type=OutputFolder, required=True, help="report folder")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parse_checked(get_args_parser(), argv, "out")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    with needs_extra(PROG):
        import torch  # heavy, as are the two below: after parsing

        from orchestration.experiment import ExperimentError
        from orchestration.transfer import transfer_markdown, transfer_report
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        ranges = parse_split_ranges([args.split])
        if list(ranges) != ["test"]:
            raise ValueError(f"--split {args.split!r}: give the test range (test=FIRST-LAST)")
        release = OfficialRelease.find(args.release, args.scenes, args.questions, args.images)
        import_release(release, args.work / "data" / "official", splits=ranges, width=args.width, height=args.height,
                       unknown_parts="skip", overwrite=True)
        report = transfer_report(args.work / "data", "official", args.work / "runs", args.parsers,
                                 trained_on=args.trained_on)
    except (ValueError, ExperimentError, FormatError, PretrainedError) as e:  # OfficialFormatError is a ValueError
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    write_json_atomic(args.out / "report.json", report, indent=1)
    write_atomic(args.out / "report.md", transfer_markdown(report))
    print(transfer_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
