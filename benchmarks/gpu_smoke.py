"""GPU smoke: seconds per training step and peak memory of each profile's parsers and baselines on CUDA.

    python benchmarks/gpu_smoke.py [--profiles tiny demo mini full] [--only detector attribute_head
                                   question_parser lstm film ...] [--warmup 2] [--steps 5]
                                   [--data ROOT/VARIANT] [--out outputs/bench/gpu_smoke/]
    python benchmarks/gpu_smoke.py --device cpu --dry-run [--only ...]   # the harness itself, no GPU

For each profile and each trainable component: the scene parser's detector and attribute head
(synthetic inputs of the profile's sizes, built as ``bench_scene_parser.py`` builds them), the
question parser (synthetic word / program batches of the profile's ``batch``, ``max_decode_len``
and network sizes) and every learned baseline registered in :mod:`orchestration.models` (through
its own ``train`` on ``--data`` or on 8 rendered training images, as ``bench_baselines.py`` does).
The parsers run ``--warmup`` steps and then ``--steps`` timed steps (``torch.cuda.synchronize``
around each; the row is the median); a baseline trains ``warmup + steps`` steps and its row is
the run's own ``step_seconds`` (the whole training time over the steps, first steps included);
``regionmac-trace`` pools a trained detector's features and needs ``--detector DETECTOR.pt``
(without it its row records so).
Peak memory is ``torch.cuda.max_memory_allocated`` after a reset per component. A component that
fails records its error (``error``) and the run goes on; the exit status is 1 when any failed.

Without CUDA it prints one line saying so and exits 2, doing nothing else, unless
``--device cpu --dry-run``: then the tiny profile runs on the CPU, one step per component and no
warm-up, so that the harness is exercised (its times say nothing). Writes ``gpu_smoke.json`` and
``gpu_smoke.md`` (a table) to ``--out``. No GPU has measured it yet (docs/cluster.md).
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, fields
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling benchmarks, when imported

REPO = Path(__file__).resolve().parents[1]
PROFILES = ("tiny", "demo", "mini", "full")
PARSERS = ("detector", "attribute_head", "question_parser")
#: registered baselines that fit counts, not a network: nothing to time on a GPU
NOT_LEARNED = frozenset({"random", "majority"})
NEEDS_CUDA = "gpu_smoke.py needs a CUDA device (torch.cuda.is_available() is False); " \
             "for a harness check: --device cpu --dry-run"


def learned_baselines() -> list[str]:
    """The trainable models of :mod:`orchestration.models` (the baselines) that train a network."""
    from orchestration import models
    return [n for n in models.names() if n not in NOT_LEARNED and models.get(n).trainable]


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profiles", nargs="+", choices=PROFILES, default=list(PROFILES))
    p.add_argument("--only", nargs="+", default=None, metavar="COMPONENT",
                   help=f"components to run (default: all): {', '.join(PARSERS)} and baseline names")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per component")
    p.add_argument("--steps", type=int, default=5, help="timed steps per component")
    p.add_argument("--device", default="cuda", help="cuda (default), cuda:N; cpu only with --dry-run")
    p.add_argument("--dry-run", action="store_true",
                   help="with --device cpu: the tiny profile, 1 step each, to check the harness")
    p.add_argument("--data", type=Path, default=None,
                   help="a variant folder with a train split for the baselines (default: render 8 images)")
    p.add_argument("--detector", type=Path, default=None,
                   help="a trained detector.pt for the baselines that pool a detector's features (regionmac-trace); "
                        "without it they record that they need one")
    p.add_argument("--out", type=Path, default=REPO / "outputs" / "bench" / "gpu_smoke")
    return p


# ---------------------------------------------------------------------------------------- timing
def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _reset_peak(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)


def _peak_mib(dev: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(dev) / 2 ** 20 if dev.type == "cuda" else None


def _time_steps(step, warmup: int, steps: int, dev: torch.device) -> float:
    """Median seconds of ``steps`` calls of ``step`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(max(1, steps)):
        _sync(dev)
        t = time.perf_counter()
        step()
        _sync(dev)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


# ------------------------------------------------------------------------------------ components
def _image_size(prof: str) -> tuple[int, int]:
    from nsvqa.generation.dataset import PROFILES as SIZES
    return SIZES[prof].height, SIZES[prof].width


def detector_step(prof: str, dev: torch.device):
    """One detector training iteration of the profile (its backbone, batch, image size, det_amp)."""
    import parsers.scene.detector
    from bench_scene_parser import _targets
    from nsvqa.training.scene_config import SceneParserConfig
    cfg, (h, w) = SceneParserConfig.from_profile("-", prof), _image_size(prof)
    images, targets = _targets(cfg.det_batch, h, w, 22, dev)
    det = parsers.scene.detector.from_config(cfg, 22, h, w, pretrained=False).to(dev).train()
    opt = torch.optim.AdamW([p for p in det.parameters() if p.requires_grad], lr=1e-4)
    amp = cfg.det_amp and dev.type == "cuda"

    def step():
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            loss = sum(v.float() for v in det(images, targets).values())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step, {"batch": cfg.det_batch, "input": f"{w}x{h}", "backbone": cfg.det_backbone, "amp": amp}


def attribute_head_step(prof: str, dev: torch.device):
    """One attribute-head step of the profile (its trunk, batch and crop size)."""
    from bench_scene_parser import attribute_head_step as head_step
    from nsvqa.training.scene_config import SceneParserConfig
    from nsvqa.training.scene_parser import attribute_vocabulary
    cfg = SceneParserConfig.from_profile("-", prof)
    step, b = head_step(cfg, attribute_vocabulary(), dev), cfg.attr_batch
    return step, {"batch": b, "input": f"{cfg.crop_size}px crops", "backbone": cfg.head_backbone}


#: synthetic vocabulary and question sizes for the question parser (Super-CLEVR's are of this order)
QP_WORDS, QP_TOKENS, QP_QUESTION_LEN = 200, 120, 40


def question_parser_step(prof: str, dev: torch.device):
    """One supervised seq2seq step of the profile (its network sizes, batch, longest program)."""
    from nsvqa.training.question_config import QuestionParserConfig
    from parsers.question.seq2seq import Seq2Seq
    cfg = QuestionParserConfig.from_profile("-", prof)
    model = Seq2Seq.from_config(asdict(cfg), QP_WORDS, QP_TOKENS).to(dev).train()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    g = torch.Generator().manual_seed(0)
    b, t = cfg.batch, cfg.max_decode_len
    words = torch.randint(4, QP_WORDS, (b, QP_QUESTION_LEN), generator=g).to(dev)
    lengths = torch.full((b,), QP_QUESTION_LEN, dtype=torch.long)
    targets = torch.randint(4, QP_TOKENS, (b, t + 1), generator=g)
    targets[:, 0], targets[:, -1] = 1, 2  # <START> ... <END>
    targets = targets.to(dev)

    def step():
        loss = model.loss(words, lengths, targets)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
    return step, {"batch": b, "input": f"{QP_QUESTION_LEN} words -> {t} tokens", "backbone": f"lstm {cfg.hidden}"}


PARSER_STEPS = {"detector": detector_step, "attribute_head": attribute_head_step,
                "question_parser": question_parser_step}


def run_baseline(name: str, prof: str, data: Path, tmp: Path, dev: torch.device, total: int,
                 detector: Path | None = None) -> dict:
    """``total`` training steps of the baseline through its own ``train``; its ``step_seconds``."""
    from nsvqa.training.checkpoint import load_checkpoint
    from orchestration import models
    model = models.get(name)
    names = {f.name for f in fields(model.config(str(data), prof))}
    timed = {"steps": total, "eval_every": total, "val_questions": 0, "device": str(dev)}
    if detector is not None:
        timed["detector"] = str(detector)
    if "pretrain_steps" in names:  # mDETR: the steps split over pretraining and fine-tuning
        timed |= {"pretrain_steps": total // 2, "steps": total - total // 2}
    cfg = model.config(str(data), prof, **{k: v for k, v in timed.items() if k in names})
    run = tmp / "runs" / f"{name}-{prof}"
    model.train(cfg, run, progress=False)
    extra = load_checkpoint(run / "baseline.pt")["extra"]
    return {"s_per_step": float(extra.get("step_seconds", float("nan"))), "batch": getattr(cfg, "batch", None),
            "input": "rendered train split", "backbone": getattr(cfg, "backbone", None)}


# ------------------------------------------------------------------------------------------ main
def _markdown(meta: dict, rows: list[dict]) -> str:
    lines = [f"# GPU smoke ({meta['device_name']}, torch {meta['torch']}, {meta['date']})", "",
             f"{meta['warmup']} warm-up + {meta['steps']} timed steps per component"
             f"{' (dry run: the harness only, times mean nothing)' if meta['dry_run'] else ''}.", "",
             "| profile | component | batch | input | s/step | peak MiB | error |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        s = f"{r['s_per_step']:.4f}" if r.get("s_per_step") is not None else "—"
        m = f"{r['peak_mib']:.0f}" if r.get("peak_mib") is not None else "—"
        err = (r.get("error") or "").replace("|", "/").splitlines()
        lines.append(f"| {r['profile']} | {r['component']} | {r.get('batch') or '—'} | {r.get('input') or '—'} "
                     f"| {s} | {m} | {err[-1] if err else ''} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    dry = args.dry_run and args.device == "cpu"
    if not dry and not torch.cuda.is_available():
        print(NEEDS_CUDA)
        return 2
    if args.dry_run and not dry:
        print("--dry-run goes with --device cpu", file=sys.stderr)
        return 2
    dev = torch.device(args.device)
    if dev.type != "cuda" and not dry:
        print(f"--device {args.device}: gpu_smoke.py times CUDA devices (--device cpu needs --dry-run)",
              file=sys.stderr)
        return 2
    profiles, warmup, steps = (["tiny"], 0, 1) if dry else (args.profiles, args.warmup, args.steps)
    learned = learned_baselines()
    components = list(PARSERS) + learned
    if args.only:
        unknown = [c for c in args.only if c not in components]
        if unknown:
            print(f"unknown component(s) {unknown}; valid: {', '.join(components)}", file=sys.stderr)
            return 2
        components = [c for c in components if c in args.only]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="gpu_smoke_") as tmp:
        data = args.data
        for prof in profiles:
            for comp in components:
                row = {"profile": prof, "component": comp}
                _reset_peak(dev)
                try:
                    if comp in PARSER_STEPS:
                        step, info = PARSER_STEPS[comp](prof, dev)
                        row |= info | {"s_per_step": _time_steps(step, warmup, steps, dev)}
                        del step
                    else:
                        if data is None:
                            from bench_baselines import _render  # 8 mid training images, once
                            data = _render(Path(tmp) / "data")
                        row |= run_baseline(comp, prof, data, Path(tmp), dev, warmup + steps, args.detector)
                    row["peak_mib"] = _peak_mib(dev)
                except Exception as e:  # noqa: BLE001 - one component failing must not stop the others
                    row |= {"s_per_step": None, "peak_mib": _peak_mib(dev),
                            "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=4)}
                rows.append(row)
                s = f"{row['s_per_step']:.4f} s/step" if row.get("s_per_step") is not None else "failed"
                m = f"{row['peak_mib']:.0f} MiB peak" if row.get("peak_mib") is not None else ""
                print(f"{prof:5} {comp:16} {s:16} {m}{'  ' + row['error'] if row.get('error') else ''}", flush=True)
    meta = {"device": str(dev), "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
            "torch": torch.__version__, "cuda": torch.version.cuda, "machine": platform.machine(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "dry_run": dry, "warmup": warmup,
            "steps": steps, "profiles": profiles,
            "data": str(args.data) if args.data else "rendered: 8 mid train images, 320x240 (baselines only)"}
    from nsvqa.fileio import write_json_atomic
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "gpu_smoke.json", meta | {"rows": rows})
    (args.out / "gpu_smoke.md").write_text(_markdown(meta, rows))
    print(f"wrote {args.out / 'gpu_smoke.json'} and {args.out / 'gpu_smoke.md'}")
    return 1 if any(r.get("error") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
