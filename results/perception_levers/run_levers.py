"""The scene parser's levers at the ``mini`` profile on held-out ``mid`` data (issue 81).

    PYTHONPATH=. python results/perception_levers/run_levers.py DATA_ROOT RUNS LEVER [LEVER ...]
    PYTHONPATH=. python results/perception_levers/run_levers.py DATA_ROOT RUNS --table

``DATA_ROOT/mid`` holds 2,000 train / 300 val / 300 test images of ``mid`` at generation seed 11
(the study's data use seed 0), generated first when missing. A lever is config fields over the
``mini`` profile (:data:`LEVERS`). A head lever trains only the attribute head on the detector of
its ``detector`` lever (``--stage attributes --detector``), so every head lever reads one detector. A
detector lever trains a detector and the ``mini`` head (3 epochs, the last kept: ``det`` is the
``mini`` head's row too). Each lever's run goes to ``RUNS/<lever>``;
``--resume`` continues a stopped one. Then it parses val and test (detections scoring >= 0.05, as
the study parses) and evaluates both (``evaluate_scene_parser``: COCO AP, matched-object accuracy
and ECE, NS-VQA / P-NSVQA on ground-truth programs). ``--table`` writes ``levers.json`` and
``levers.md`` beside this script, and the block between :data:`DOC_MARKERS` in docs/perception.md,
from every finished lever: the val figures and the minutes. Test figures are given for the lever
chosen on val only (the highest val P-NSVQA-exact on object
questions).
"""
from __future__ import annotations

import functools
import json
import shutil
import sys
import time
from pathlib import Path

from nsvqa.fileio import write_atomic, write_json_atomic
from orchestration.study.report.publish import splice

HERE = Path(__file__).resolve().parent
DOCS = HERE.parents[1] / "docs"
DOC_MARKERS = ("<!-- generated:levers:begin -->", "<!-- generated:levers:end -->")
SEED = 11  # generation seed of the held-out data (the study's: 0)
SIZES = {"train": 2000, "val": 300, "test": 300}
HEAD = {"attr_epochs": 12, "attr_select": "e2e", "attr_patience": 3, "attr_clip": 5.0}
P3 = HEAD | {"attr_part_share": 0.33}
#: lever -> (its detector lever, or None for a detector lever; config fields over the mini profile)
LEVERS: dict[str, tuple[str | None, dict]] = {
    "det": (None, {}),                                            # the mini profile as it is
    "det-2x": (None, {"det_iterations": 2600}),                   # masks and parts: twice the iterations
    "det-mask28": (None, {"det_mask_roi": 28}),                   # a finer mask grid: 56 x 56 masks
    "det-x1.5": (None, {"det_image_scale": 1.5}),                 # small parts under bigger anchors (~2.3x compute)
    "head-e2e": ("det", HEAD),                                    # up to 12 epochs, chosen end to end, clipped
    "head-e2e-p3": ("det", P3),                                   # a third of the part crops each epoch, drawn afresh
    # each over head-e2e-p3 (twice as many epochs in the same minutes)
    "head-e2e-p3-crop96": ("det", P3 | {"crop_size": 96}),        # larger crops from the 320x240 image
    "head-e2e-p3-s8": ("det", P3 | {"head_strides": "8,16,32"}),  # the stride-8 map too
    "head-e2e-p3-shift": ("det", P3 | {"attr_augment": "shift"}), # shifted and scaled crops, colours kept
    "head-e2e-p3-sel150": ("det", P3 | {"e2e_eval_images": 150}), # the end-to-end selector on 150 val images, not 60
    "head-e2e-p3-cal": ("det", P3 | {"calibrate": True}),         # temperatures fitted on val
}


def _data(root: Path) -> Path:
    from orchestration.cli import generate_dataset

    for split, n in SIZES.items():
        if not (root / "mid" / "scenes" / f"{split}_scenes.json").is_file():
            generate_dataset.main(["--out", str(root), "--variant", "mid", "--split", split, "--num-images", str(n),
                                   "--seed", str(SEED), "--profile", "mini", "--workers", "2", "--no-progress"])
    return root / "mid"


def _sets(fields: dict) -> list[str]:
    return [a for k, v in fields.items() for a in ("--set", f"{k}={str(v).lower() if isinstance(v, bool) else v}")]


def run(lever: str, root: Path, runs: Path) -> None:
    from orchestration.cli import evaluate_scene_parser, parse_scenes, train_scene_parser

    det, fields = LEVERS[lever]
    data, out = _data(root), runs / lever
    args = ["--data", str(data), "--out", str(out), "--profile", "mini", "--threads", "2", "--resume", "--no-progress"]
    if det is not None:
        args += ["--stage", "attributes", "--detector", str(runs / det / "detector.pt")]
        if not (runs / det / "detector.pt").is_file():
            run(det, root, runs)
        out.mkdir(parents=True, exist_ok=True)
        for cache in (runs / det).glob("crops_*.pt*"):  # its detector lever's crops: reused where they were cut
            if not (out / cache.name).exists():         # with the same settings, else cut again
                shutil.copyfile(cache, out / cache.name)
    t0 = time.time()
    if train_scene_parser.main(args + _sets(fields)) != 0:
        raise SystemExit(f"{lever}: training failed")
    (out / "wall_seconds.json").write_text(json.dumps({"train": time.time() - t0}) + "\n")
    for split in ("val", "test"):
        parsed = out / f"parsed_{split}.json"
        parse_scenes.main(["--checkpoint", str(out), "--data", str(data), "--split", split, "--out", str(parsed),
                           "--threads", "2", "--no-progress", "--min-score", "0.05"])
        evaluate_scene_parser.main(["--parsed", str(parsed), "--data", str(data), "--split", split,
                                    "--out", str(out / f"metrics_{split}.json")])


def _row(lever: str, runs: Path, split: str) -> dict | None:
    from nsvqa.training.checkpoint import load_checkpoint

    path = runs / lever / f"metrics_{split}.json"
    if not path.is_file():
        return None
    m = json.loads(path.read_text())
    a, ex = m["attributes"], m["executors"]
    det, _ = LEVERS[lever]
    head = load_checkpoint(runs / lever / "attributes.pt", kind="attributes")
    det_ck = load_checkpoint(runs / (det or lever) / "detector.pt", kind="detector")
    minutes = {"detector": (det_ck["extra"].get("seconds", 0) - det_ck["extra"].get("eval_seconds", 0)) / 60,
               "head": (head["extra"].get("seconds", 0) - head["extra"].get("eval_seconds", 0)) / 60}
    return {"lever": lever, "detector": det or lever, "fields": LEVERS[lever][1],
            "detector_sha256": _detector_sha256(runs / (det or lever) / "detector.pt"),
            **{k: a.get(f"object.{k}") for k in ("material", "shape", "color", "size")},
            **{f"ece.{k}": a.get(f"object.{k}.ece") for k in ("material", "shape", "color", "size")},
            "mask_ap50": m["coco_objects"]["segm_agnostic"]["AP50"], "box_ap50": m["coco_objects"]["bbox_agnostic"]["AP50"],
            "part_recall": a.get("part.recall_mask"),
            "pnsvqa_exact_objects": ex["pnsvqa-exact"]["objects"], "nsvqa_objects": ex["nsvqa"]["objects"],
            "kept_epoch": (head["extra"].get("best") or {}).get("epoch"), "epochs_run": head["extra"].get("epochs_run"),
            "minutes": minutes, "machine": _machine()}


@functools.cache
def _detector_sha256(path: Path) -> str:
    """The detector file's sha256, read once however many levers read that detector."""
    from nsvqa.training.checkpoint import checkpoint_sha256

    return checkpoint_sha256(path)


@functools.cache
def _machine() -> str:
    """The CPU this table is built on (the lever runs under ``RUNS`` ran on it: their minutes)."""
    import torch

    from orchestration.study.running.piece import machine
    from orchestration.study.settings.budget import machine_label

    torch.set_num_threads(2)  # as the levers train (run(): --threads 2)
    return machine_label(machine())


def _committed(val: list[dict]) -> tuple[list[dict], dict | None]:
    """The committed rows whose lever has no finished run here but whose detector a run here read
    (same sha256), and the committed test row; the rows left out are named."""
    path = HERE / "levers.json"
    if not path.is_file():
        return [], None
    old = json.loads(path.read_text())
    here, have = {r["detector_sha256"] for r in val}, {r["lever"] for r in val}
    kept = []
    for r in old["val"]:
        if r["lever"] in have:
            continue
        if r.get("detector_sha256") in here:
            kept.append(r)
        else:
            print(f"levers.json: row {r['lever']!r} dropped: no run here read its detector "
                  f"(sha256 {r.get('detector_sha256') or 'not recorded'})")
    return kept, old.get("test_of_chosen")


def table(runs: Path) -> None:
    val = [r for r in (_row(x, runs, "val") for x in LEVERS) if r is not None]
    if not val:
        raise SystemExit(f"{runs}: no finished lever")
    kept, old_test = _committed(val)
    val = sorted(val + kept, key=lambda r: list(LEVERS).index(r["lever"]))
    chosen = max(val, key=lambda r: r["pnsvqa_exact_objects"])
    test = _row(chosen["lever"], runs, "test") or (old_test if old_test and old_test["lever"] == chosen["lever"] else None)
    record = {"seed": SEED, "sizes": SIZES, "val": val, "chosen": chosen["lever"], "test_of_chosen": test}
    lines = markdown(record)
    doc = DOCS / "perception.md"
    text = splice(doc.read_text(), *DOC_MARKERS, "\n".join(lines), str(doc))  # a missing marker fails first
    write_json_atomic(HERE / "levers.json", record, indent=1)
    write_atomic(HERE / "levers.md", "# The scene parser's levers on held-out mid (val; written by run_levers.py "
                 "--table)\n\n" + "\n".join(lines) + "\n")
    write_atomic(doc, text)
    print("\n".join(lines))


def markdown(record: dict) -> list[str]:
    """The lever table of ``record`` (``levers.json``): each lever's val row, the lever chosen on
    val and its test row. What ``levers.md`` and docs/perception.md's generated block hold."""
    def pct(v: float | None) -> str:
        return "—" if v is None else f"{100 * v:.1f}"

    def num(v: float | None, digits: int) -> str:
        return "—" if v is None else f"{v:.{digits}f}"

    def row(r: dict, name: str) -> str:
        return (f"| {name} | {pct(r['material'])} | {pct(r['shape'])} | {pct(r['color'])} | {pct(r['size'])} "
                f"| {num(r['mask_ap50'], 3)} | {num(r['part_recall'], 2)} | {pct(r['pnsvqa_exact_objects'])} "
                f"| {pct(r['nsvqa_objects'])} | {num(r['ece.material'], 3)} "
                f"| {r['kept_epoch'] or '—'} / {r['epochs_run'] or '—'} "
                f"| {r['minutes']['detector']:.0f} + {r['minutes']['head']:.0f} |")

    lines = [("| lever | material | shape | color | size | mask AP50 | part recall | P-NSVQA-exact obj. | NS-VQA obj. "
              "| ECE material | kept epoch / run | minutes (det + head) |"), "|" + "---|" * 12]
    lines += [row(r, r["lever"]) for r in record["val"]]
    machines = sorted({r.get("machine") or "an unrecorded CPU" for r in record["val"]})
    lines += ["", f"Minutes on {'; '.join(machines)}."]
    lines += ["", f"Chosen on val (the highest P-NSVQA-exact on object questions): `{record['chosen']}`."]
    test = record.get("test_of_chosen")
    if test:
        lines += ["", "Its test row:", "", *lines[:2], row(test, f"{test['lever']} (test)")]
    return lines


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    root, runs = Path(sys.argv[1]), Path(sys.argv[2])
    if sys.argv[3] == "--table":
        table(runs)
    else:
        unknown = [x for x in sys.argv[3:] if x not in LEVERS]
        if unknown:
            raise SystemExit(f"unknown lever(s) {unknown}; valid: {', '.join(LEVERS)}")
        for lever in sys.argv[3:]:
            run(lever, root, runs)
