"""Scene-parser speed per profile: detector training iterations, attribute-head steps, parsing.

    python benchmarks/bench_scene_parser.py [--profiles tiny mini full] [--backbones profile lite0]
                                            [--iterations 5] [--device cuda]

Synthetic inputs of the profile's real sizes (images of the generator's size with 6 box/mask
targets; crops of the head's size), so no dataset is needed: it answers "how long would the
profile's schedule take on this machine". ``--backbones``: the detector of each profile
(``profile``: its own backbone) and the others named (``lite0``, ``lite0_scratch``, ... with the
profile's other detector values; timed with random weights, the cost of pretrained ones is the
same), under bf16 autocast where the profile trains so (``det_amp``). The attribute head (the
profile's trunk) is timed once per profile. Times are medians after one warm-up step. Writes
runs/bench/bench_scene_parser.json and prints a table with the projected schedule time.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

from nsvqa.config import resolve_device
from nsvqa.fileio import write_json_atomic
from nsvqa.training.scene_config import SceneParserConfig
from nsvqa.training.scene_parser import attribute_vocabulary
import parsers.scene.detector
from parsers.scene.attribute_head import AttributeHead, attribute_loss

REPO = Path(__file__).resolve().parents[1]
IMAGE_SIZES = {"tiny": (48, 64), "mini": (240, 320), "full": (480, 640)}


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profiles", nargs="+", default=["tiny", "mini", "full"])
    p.add_argument("--backbones", nargs="+", default=["profile", "lite0"],
                   help="detector backbones per profile ('profile': the profile's own)")
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--device", default="auto", type=resolve_device, help="auto: CUDA when present, else the CPU")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--out", type=Path, default=REPO / "runs" / "bench" / "bench_scene_parser.json")
    return p


def _targets(batch: int, h: int, w: int, num_classes: int, device):
    g = torch.Generator().manual_seed(0)
    images, targets = [], []
    for _ in range(batch):
        img = torch.rand(3, h, w, generator=g)
        boxes, masks = [], torch.zeros((6, h, w), dtype=torch.uint8)
        for k in range(6):
            bw, bh = w // 8, h // 8
            x0, y0 = (k % 3) * w // 3 + 4, (k // 3) * h // 2 + 4
            boxes.append([x0, y0, x0 + bw, y0 + bh])
            masks[k, y0:y0 + bh, x0:x0 + bw] = 1
        images.append(img.to(device))
        targets.append({"boxes": torch.tensor(boxes, dtype=torch.float32, device=device),
                        "labels": torch.randint(1, num_classes, (6,), generator=g).to(device),
                        "masks": masks.to(device)})
    return images, targets


def attribute_head_step(cfg: SceneParserConfig, vocab: dict, dev):
    """One training step of ``cfg``'s attribute head on a synthetic batch of its size (crops of
    ``crop_size``, random labels of ``vocab``), as a closure; the head and its optimizer built once."""
    head = AttributeHead.from_config(cfg, {a: len(v) for a, v in vocab.items()}, pretrained=False).to(dev).train()
    opt = torch.optim.AdamW(head.parameters(), lr=1e-3)
    b = cfg.attr_batch
    x, geo = torch.rand(b, 4, cfg.crop_size, cfg.crop_size, device=dev), torch.rand(b, 4, device=dev)
    labels = {a: torch.randint(0, len(v), (b,), device=dev) for a, v in vocab.items()}
    labels |= {"kind": torch.zeros(b, dtype=torch.long, device=dev), "position": torch.rand(b, 2, device=dev)}

    def step() -> None:
        loss = attribute_loss(head(x, geo), labels)["total"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def _median_time(step, n: int, device: str) -> float:
    step()  # warm-up
    times = []
    for _ in range(n):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        step()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    args = get_args_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    vocab = attribute_vocabulary()
    rows = []
    for prof in args.profiles:
        cfg, (h, w) = SceneParserConfig.from_profile("-", prof), IMAGE_SIZES[prof]
        images, targets = _targets(cfg.det_batch, h, w, 22, dev)
        for backbone in args.backbones:
            bcfg = cfg if backbone == "profile" else SceneParserConfig.from_profile("-", prof, det_backbone=backbone)
            det = parsers.scene.detector.from_config(bcfg, 22, h, w, pretrained=False).to(dev).train()
            opt = torch.optim.AdamW([p for p in det.parameters() if p.requires_grad], lr=1e-4)

            amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bcfg.det_amp)

            def det_step():
                with amp:  # the profile's det_amp, as training runs it
                    loss = sum(v.float() for v in det(images, targets).values())
                opt.zero_grad()
                loss.backward()
                opt.step()

            det_s = _median_time(det_step, args.iterations, args.device)
            det.eval()
            with torch.no_grad():
                infer_s = _median_time(lambda: det(images), args.iterations, args.device) / len(images)
            rows.append({"profile": prof, "backbone": bcfg.det_backbone, "image": f"{w}x{h}",
                         "det_batch": cfg.det_batch, "det_trainable_layers": bcfg.det_trainable_layers,
                         "det_min_stride": bcfg.det_min_stride, "det_amp": bcfg.det_amp,
                         "det_anchor_sizes": list(bcfg.det_anchor_sizes), "det_s_per_iteration": det_s,
                         "det_schedule_hours": det_s * cfg.det_iterations / 3600, "det_inference_s_per_image": infer_s})
            print(f"{prof:5} {w}x{h}  detector {bcfg.det_backbone:13} {det_s:7.3f} s/it (batch {cfg.det_batch}"
                  f"{', bf16' if bcfg.det_amp else ''}; "
                  f"{cfg.det_iterations} its = {rows[-1]['det_schedule_hours']:.2f} h)  inference {infer_s:.3f} s/img",
                  flush=True)
        head_step, b = attribute_head_step(cfg, vocab, dev), cfg.attr_batch
        head_s = _median_time(head_step, args.iterations, args.device)
        rows.append({"profile": prof, "head_backbone": cfg.head_backbone, "head_batch": b, "crop": cfg.crop_size,
                     "head_s_per_step": head_s})
        print(f"{prof:5} head {cfg.head_backbone} {head_s:.3f} s/step (batch {b}, {cfg.crop_size} px)", flush=True)
    write_json_atomic(args.out, {"device": args.device, "torch": torch.__version__, "machine": platform.machine(),
                                 "threads": torch.get_num_threads(), "rows": rows})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
