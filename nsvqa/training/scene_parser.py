"""Training of the scene parser: the Mask R-CNN detector, then the attribute head.

Stage ``detector``: torchvision Mask R-CNN on the generator's COCO annotations (AdamW, linear
warm-up then cosine decay, gradient clipping). Stage ``attributes``: the ResNet attribute head on
4-channel crops of the ground-truth masks and of detector masks matched to ground truth by mask IoU
(so the head sees the masks it will get at test time). Each stage checkpoints atomically into the
run directory (``detector.pt``, ``attributes.pt``) and resumes from there; the batch of step ``s``
is a function of ``(seed, s)`` only (:class:`nsvqa.training.sampling.PermutationBatches`), so a
resumed run sees the same data as an uninterrupted one. Both stages run on
:func:`nsvqa.training.engine.train_steps` (the attribute head's epochs as steps, validation and a
checkpoint at the end of each epoch).

Launched by ``torchrun`` (``WORLD_SIZE`` > 1) both stages train data-parallel
(:mod:`nsvqa.training.distributed`): ``det_batch`` and ``attr_batch`` stay the global batch of a step, each
rank trains on its slice of it through DistributedDataParallel (SyncBatchNorm on CUDA), and rank 0
alone writes the run directory.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import torch
from torch.utils.data import Dataset
from tqdm import tqdm

from executors import load_ontology
from executors.errors import FormatError
from executors.io import load_questions
from nsvqa.artifacts.images import check_split_images, read_image
from nsvqa.artifacts.likelihoods import PARSE_MIN_SCORE
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.evaluation.reliability import fit_temperature, top_label_ece
from nsvqa.evaluation.scene_parser import detector_ap, executor_accuracy, match_objects
from nsvqa.generation.annotations import mask_to_rle, rle_to_mask
from nsvqa.training.checkpoint import checkpoint_sha256, load_checkpoint, save_checkpoint
from nsvqa.training import RunDir, warmup_cosine
from nsvqa.training.data import StepLoader
from nsvqa.training.datasets import (OBJECT_ATTRIBUTES, PART_ATTRIBUTES, AttributeCropDataset, CropItem,
                                     DetectionDataset, collate_detection)
from nsvqa.training.distributed import DistInfo, check_global_batch, init_from_env, run_on_main, shard, wrap
from nsvqa.training.engine import (Progress, StepResult, native_bf16, restore_train_state, train_steps,
                                   training_run)
from nsvqa.training.loading import detector_from_checkpoint, parse_split, scene_parser_from
from nsvqa.training.sampling import PermutationBatches, SequentialBatches
from nsvqa.training.scene_config import SELECT_METRIC, SceneParserConfig
import parsers.scene.detector
from parsers.scene.attribute_head import AttributeHead, attribute_loss
from parsers.scene.crops import box_geometry, crop_instance, shift_crops
from parsers.scene.scene_parser import merge_classes

LABEL_KEYS = ("shape", "color", "material", "size", "texture", "partname")


# --------------------------------------------------------------------------------------- detector

#: seed strides of the two stages' per-epoch permutations (see nsvqa.training.sampling.PermutationBatches)
DETECTOR_STRIDE, ATTRIBUTE_STRIDE = 100003, 7919


def _batch_indices(n: int, batch: int, step: int, seed: int) -> list[int]:
    """The dataset indices of detector step ``step``: consecutive slices of a per-epoch permutation."""
    return PermutationBatches(n, batch, seed, stride=DETECTOR_STRIDE, drop_last=False)(step).tolist()


def detector_vocabulary(ds: DetectionDataset) -> dict[str, Any]:
    """What a detector checkpoint records about its classes: ``classes`` (id -> name),
    ``part_class_ids``, ``num_classes``, ``image_size`` [H, W], ``mode``, and ``shape_ids`` /
    ``part_ids`` (name -> COCO category id, for labelling class-agnostic outputs)."""
    info = ds.coco.loadImgs(ds.image_ids[0])[0] if ds.image_ids else {"height": 0, "width": 0}
    return {"classes": {str(k): v for k, v in sorted(ds.categories.items())},
            "part_class_ids": list(ds.part_class_ids),
            "num_classes": ds.num_classes, "image_size": [int(info["height"]), int(info["width"])],
            "mode": ds.mode, "shape_ids": dict(ds.shape_ids), "part_ids": dict(ds.part_ids)}


def train_detector(cfg: SceneParserConfig, run: RunDir, *, resume: bool = False, progress: bool = True,
                   dist: DistInfo | None = None) -> Path:
    """Train (or resume) the detector; returns the path of ``detector.pt``.

    ``dist`` (default: :func:`nsvqa.training.distributed.init_from_env`): in a data-parallel job each rank
    trains on its ``det_batch / world_size`` images of the step (ValueError naming ``det_batch``
    when it does not divide) and rank 0 alone writes; every rank returns once ``detector.pt`` is
    written.
    """
    dist = init_from_env(cfg.device) if dist is None else dist
    check_global_batch(dist.world_size, det_batch=cfg.det_batch)
    ds = DetectionDataset(cfg.data, "train", cfg.mode)
    n = len(ds) if cfg.max_train_images is None else min(len(ds), cfg.max_train_images)
    if n == 0:
        raise ValueError(f"{cfg.data}: the train split has no images")
    vocab = detector_vocabulary(ds)
    h, w = vocab["image_size"]
    dev = torch.device(dist.device)
    model = parsers.scene.detector.from_config(cfg, ds.num_classes, h, w).to(dev)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.det_lr, weight_decay=1e-4)
    warmup = min(500, max(1, cfg.det_iterations // 10))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(cfg.det_iterations, warmup))
    path = run.path / "detector.pt"
    start, before = 0, {}
    if resume and path.exists():
        ck = load_checkpoint(path, kind="detector")
        model.load_state_dict(ck["state_dict"])
        start = restore_train_state(ck["train_state"], opt, sched)
        before = ck.get("extra") or {}
        if start >= cfg.det_iterations:
            run.log(f"detector: {path} has finished its {cfg.det_iterations} iterations")
            return path  # untouched, so that outputs fingerprinted on it stay valid
        run.log(f"detector: resumed at step {start} from {path}")
    # gradients averaged over the ranks; BatchNorm statistics over the global batch on CUDA
    net = wrap(model, dist, sync_bn=True)
    sampler = PermutationBatches(n, cfg.det_batch, cfg.seed, stride=DETECTOR_STRIDE, drop_last=False)
    # this rank's images of each step (the images are decoded at the step that asks for them)
    batches = StepLoader(ds, collate_detection, sampler, start=start, total=cfg.det_iterations, device=dev,
                         select=lambda idx: shard(idx.tolist(), dist.rank, dist.world_size))
    model.train()

    # det_amp: the forward under bfloat16 autocast (convolutions and matmuls in bf16), the weights,
    # the box arithmetic (parsers.scene.detector.box_math_in_float32) and the losses in float32;
    # bf16 needs no loss scaling
    use_amp = native_bf16(dev) if cfg.det_amp is None else cfg.det_amp
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=use_amp)
    run.log(f"detector: {'bfloat16 autocast' if use_amp else 'float32'} "
            f"({'chosen by the device: native bf16 ' + ('yes' if use_amp else 'no') if cfg.det_amp is None else 'det_amp'})")
    if use_amp and not native_bf16(dev):
        run.log("detector: det_amp on a device without native bfloat16 (AVX512-BF16/AMX): expect it slower than "
                "float32; --det-amp false turns it off")

    def step_fn(step: int) -> StepResult:
        images, targets = batches(step).data
        with amp:
            losses = net(images, targets)
        losses = {k: v.float() for k, v in losses.items()}
        loss = sum(losses.values())
        return StepResult(loss, dict(losses) | {"total": loss})

    # the clock counts every call that trained this detector (a resumed run goes on from its checkpoint's)
    eval_seconds = float(before.get("eval_seconds", 0.0))
    has_val = (Path(cfg.data) / "annotations" / "val_coco.json").exists()

    def evaluate(p: Progress) -> dict[str, float] | None:
        """The val AP of the learning curve (class-agnostic, objects and listed parts)."""
        nonlocal eval_seconds
        if not (cfg.det_eval_every and has_val and p.trained and (p.final or p.step % cfg.det_eval_every == 0)):
            return None

        t0 = time.time()
        ap = detector_ap(model, cfg.data, "val", part_class_ids=vocab["part_class_ids"], limit=cfg.det_eval_images)
        values = {"box_AP50": ap["bbox"]["AP50"], "mask_AP50": ap["segm"]["AP50"], "box_AP": ap["bbox"]["AP"]}
        if "parts" in ap:
            values |= {"parts_box_AP50": ap["parts"]["bbox"]["AP50"], "parts_mask_AP50": ap["parts"]["segm"]["AP50"]}
        # training minutes: the run's clock without the time spent here
        values["train_minutes"] = (p.seconds - eval_seconds) / 60.0
        eval_seconds += time.time() - t0
        run.scalars("detector_val", values, p.step)
        run.log(f"detector step {p.step} val ({ap['images']} images) " + " ".join(f"{k}={v:.4f}" for k, v in values.items()))
        return values

    def checkpoint(p: Progress) -> None:  # rank 0 only
        val = evaluate(p)
        save_checkpoint(path, kind="detector", config=asdict(cfg), state_dict=model.state_dict(),
                        vocabularies=vocab,
                        extra={"seconds": p.seconds, "eval_seconds": eval_seconds} | ({"val": val} if val else {}),
                        train_state={"optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                                     "step": p.step, "rng": torch.get_rng_state()}, finished=p.final)

    # every rank returns once detector.pt is written (the engine's closing barrier)
    train_steps(step_fn, opt, run, start=start, total=cfg.det_iterations, scheduler=sched, clip_params=params,
                clip_norm=10.0, phase="detector", log_every=10, log_values=True, eval_every=cfg.checkpoint_every,
                on_checkpoint=checkpoint, dist=dist, rank_seed=cfg.seed, seconds_before=float(before.get("seconds", 0.0)),
                progress=progress, desc="detector",
                postfix=lambda p: {"loss": f"{p.smoothed['total']:.3f}"})
    return path


# ------------------------------------------------------------------------------------ crop sets

@dataclass
class CropSet(Dataset):
    """Attribute-head examples held in memory: a Dataset of crops (collated by :func:`collate_crops`).

    ``x`` (M, 4, S, S) uint8 (RGB + mask scaled to 0..255), ``labels`` key -> (M,) int64 (-1 where an
    item has no such label: parts have no shape, objects no part name), ``position`` (M, 2) float32,
    ``kind`` (M,) int64 (0 object, 1 part), ``source`` (M,) int64 (0 ground-truth mask, 1 detector),
    ``geometry`` (M, 4) float32 box centre and size relative to the image.

    Item ``i``: ``{"x": (4, S, S) uint8, "geometry": (4,) float32, "labels": {key: () int64 for
    LABEL_KEYS, "position": (2,) float32, "kind": () int64}}``.
    """

    x: torch.Tensor
    labels: dict[str, torch.Tensor]
    position: torch.Tensor
    kind: torch.Tensor
    source: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.int64))
    geometry: torch.Tensor = field(default_factory=lambda: torch.zeros((0, 4)))

    def __len__(self) -> int:
        return int(self.x.shape[0])

    @staticmethod
    def build(crops: list[torch.Tensor], labels: list[dict], source: int, size: int,
              geometry: list[torch.Tensor] | None = None) -> "CropSet":
        m = len(crops)
        x = (torch.stack(crops).mul(255).round().clamp(0, 255).to(torch.uint8) if m
             else torch.zeros((0, 4, size, size), dtype=torch.uint8))
        lab = {k: torch.tensor([int(d.get(k, -1)) for d in labels], dtype=torch.int64) for k in LABEL_KEYS}
        pos = torch.stack([torch.as_tensor(d["position"], dtype=torch.float32) if "position" in d
                           else torch.zeros(2) for d in labels]) if m else torch.zeros((0, 2))
        kind = torch.tensor([int(d["kind"]) for d in labels], dtype=torch.int64)
        geo = torch.stack(geometry) if m and geometry else torch.zeros((m, 4))
        return CropSet(x, lab, pos, kind, torch.full((m,), source, dtype=torch.int64), geo)

    @staticmethod
    def concat(sets: Iterable["CropSet"]) -> "CropSet":
        sets = list(sets)
        return CropSet(torch.cat([s.x for s in sets]), {k: torch.cat([s.labels[k] for s in sets]) for k in LABEL_KEYS},
                       torch.cat([s.position for s in sets]), torch.cat([s.kind for s in sets]),
                       torch.cat([s.source for s in sets]), torch.cat([s.geometry for s in sets]))

    def __getitem__(self, i: int) -> dict[str, Any]:
        labels = {k: v[i] for k, v in self.labels.items()} | {"position": self.position[i], "kind": self.kind[i]}
        return {"x": self.x[i], "geometry": self.geometry[i], "labels": labels}

    def state(self) -> dict[str, torch.Tensor]:
        return {"x": self.x, "position": self.position, "kind": self.kind, "source": self.source,
                "geometry": self.geometry,
                **{f"label.{k}": v for k, v in self.labels.items()}}

    @staticmethod
    def from_state(d: dict[str, torch.Tensor]) -> "CropSet":
        return CropSet(d["x"], {k: d[f"label.{k}"] for k in LABEL_KEYS}, d["position"], d["kind"], d["source"],
                       d["geometry"])


def collate_crops(items: list[dict[str, Any]]) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Items of :class:`CropSet` -> (crops (B, 4, S, S) float in [0, 1], geometry (B, 4), labels:
    key -> (B,) int64 for ``LABEL_KEYS``, ``position`` (B, 2), ``kind`` (B,))."""
    labels = {k: torch.stack([it["labels"][k] for it in items]) for k in items[0]["labels"]}
    return (torch.stack([it["x"] for it in items]).float().div_(255.0), torch.stack([it["geometry"] for it in items]),
            labels)


def gt_crops(root: str | Path, split: str, crop_size: int, parts: bool, limit: int | None = None,
             progress: bool = True, extra_parts: int | None = None, seed: int = 0, part_crop: str = "part") -> CropSet:
    """Crops of every ground-truth object mask and, with ``parts``, of its listed parts (those whose
    attributes differ from the object's: what questions ask about) plus ``extra_parts`` of its other
    visible parts chosen at random (all of them when None), each image read once. ``part_crop``:
    the box of a part's crop (:class:`nsvqa.training.datasets.AttributeCropDataset`)."""
    ds = AttributeCropDataset(root, split, crop_size, parts=parts, part_crop=part_crop)
    wanted = sorted(ds.scenes)[:limit] if limit is not None else sorted(ds.scenes)
    rng = np.random.default_rng(seed)
    by_image: dict[int, list] = {}
    for item in ds.items:
        if item.part is not None and extra_parts is not None:
            o = ds.scenes[item.image_index]["objects"][item.object_index]
            if item.part not in o.get("parts", {}):
                continue
        by_image.setdefault(item.image_index, []).append(item)
    if parts and extra_parts:
        for idx in sorted(ds.scenes):
            for oi, o in enumerate(ds.scenes[idx]["objects"]):
                others = sorted(set(o.get("part_masks", {})) - set(o.get("parts", {})))
                for name in rng.permutation(others)[:extra_parts] if others else []:
                    by_image.setdefault(idx, []).append(CropItem(idx, oi, str(name)))
    crops, labels, geometry = [], [], []
    for idx in tqdm(wanted, desc=f"crops {split}", disable=not progress):
        scene = ds.scenes[idx]
        img = read_image(ds.root / "images" / split / scene["image_filename"])
        for item in by_image.get(idx, []):
            ann, box = ds.mask_and_box(item)
            mask = torch.from_numpy(rle_to_mask(ann["mask"])).float()[None]
            crops.append(crop_instance(img, mask, box, crop_size, ds.margin))
            geometry.append(box_geometry(ann["bbox"], *img.shape[1:]))
            labels.append(ds.labels(item))
    return CropSet.build(crops, labels, 0, crop_size, geometry)


def detector_crops(detector: torch.nn.Module, vocab: dict, root: str | Path, split: str, crop_size: int,
                   n_images: int, min_score: float, match_iou: float, parts: bool,
                   progress: bool = True, part_crop: str = "part") -> CropSet:
    """Crops of detector masks matched one-to-one to ground-truth masks by mask IoU (Hungarian on
    IoU, pairs under ``match_iou`` dropped), labelled with the matched ground truth. A part's crop
    is cut from its own detected box, or with ``part_crop="object"`` from its object's box."""
    ds = AttributeCropDataset(root, split, crop_size, parts=parts, part_crop=part_crop)
    part_ids = set(vocab.get("part_class_ids", []))
    crops, labels, geometry = [], [], []
    detector.eval()
    for idx in tqdm(sorted(ds.scenes)[:n_images], desc=f"detector crops {split}", disable=not progress):
        scene = ds.scenes[idx]
        img = read_image(ds.root / "images" / split / scene["image_filename"])
        with torch.no_grad():
            det = detector([img])[0]
        # the parser's view of the detections: per-class duplicates of one object merged
        rows, merged = merge_classes(det["boxes"], det["scores"], det["labels"], part_ids, 0.7)
        det = {k: det[k][rows] for k in ("boxes", "labels", "masks")} | {"scores": merged}
        keep = det["scores"] >= min_score
        boxes, masks, cls = det["boxes"][keep], det["masks"][keep, 0] >= 0.5, det["labels"][keep]
        if not len(boxes):
            continue
        det_rles = [mask_to_rle(m)[0] for m in masks.numpy()]
        for want_part in ((False, True) if parts else (False,)):
            sel = [k for k in range(len(cls)) if (int(cls[k]) in part_ids) == want_part]
            gts = []  # (labels, rle, the object's box)
            for oi, o in enumerate(scene["objects"]):
                if not want_part:
                    gts.append((ds.labels(CropItem(idx, oi, None)), o["mask"], o["bbox"]))
                else:
                    gts += [(ds.labels(CropItem(idx, oi, name)), pm["mask"], o["bbox"])
                            for name, pm in sorted(o["part_masks"].items())]
            for r, c in match_objects([det_rles[k] for k in sel], [m for _, m, _ in gts], match_iou):
                k = sel[r]
                b = boxes[k]
                box = [float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])]
                cut = gts[c][2] if want_part and part_crop == "object" else box
                crops.append(crop_instance(img, masks[k][None].float(), cut, crop_size))
                geometry.append(box_geometry(box, *img.shape[1:]))
                labels.append(gts[c][0])
    return CropSet.build(crops, labels, 1, crop_size, geometry)


# -------------------------------------------------------------------------------- attribute head

def attribute_vocabulary() -> dict[str, list[str]]:
    """Attribute -> values, in the order of the head's outputs: the values a Super-CLEVR scene
    can hold (``Ontology.scene_values``: 21 shapes, not the unplaced ``addi``), and part names."""
    onto = load_ontology("superclevr")
    out = {a: list(onto.scene_values(a)) for a in OBJECT_ATTRIBUTES}
    out["partname"] = list(onto.part_names)
    return out


def mean_directions(root: str | Path, split: str = "train") -> dict[str, list[float]]:
    """The split's mean ground-plane direction per relation (unit length): the parser's frame for
    relations on images whose camera it does not know (cameras jitter by a few degrees)."""
    path = scenes_path(root, split)
    scenes = [s.record for s in read_scenes(path)]
    if not scenes:
        raise ValueError(f"{path}: no scenes to take directions from")
    out = {}
    for r in scenes[0]["directions"]:
        v = np.mean([np.asarray(s["directions"][r], dtype=float)[:2] for s in scenes], axis=0)
        out[r] = (v / max(np.linalg.norm(v), 1e-12)).tolist()
    return out


@torch.no_grad()
def crop_logits(head: AttributeHead, crops: CropSet, batch: int = 256,
                temperatures: dict[str, float] | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The head's logits on a crop set (eval mode, no gradients) with their labels, per
    ``object.<attribute>`` and ``part.<attribute>`` (the crops that carry that label), and
    ``object.position``: (predicted, true) ground-plane positions. ``temperatures``: attribute ->
    T, the logits divided by it (the parser's view)."""
    head.eval()
    outs: dict[str, list[np.ndarray]] = {}
    labels: dict[str, list[np.ndarray]] = {}
    with torch.no_grad():
        for b in StepLoader(crops, collate_crops, SequentialBatches(len(crops), batch)):
            x, geo, lab = b.data
            out = head(x, geo)
            for kind_id, kind in ((0, "object"), (1, "part")):
                rows = lab["kind"] == kind_id
                for a in (OBJECT_ATTRIBUTES if kind_id == 0 else PART_ATTRIBUTES):
                    r = rows & (lab[a] >= 0)
                    if r.any():
                        t = (temperatures or {}).get(a, 1.0)
                        outs.setdefault(f"{kind}.{a}", []).append((out[a][r].float() / t).numpy())
                        labels.setdefault(f"{kind}.{a}", []).append(lab[a][r].numpy())
            obj = lab["kind"] == 0
            if obj.any():
                outs.setdefault("object.position", []).append(out["position"][obj].float().numpy())
                labels.setdefault("object.position", []).append(lab["position"][obj].numpy())
    return {k: (np.concatenate(outs[k]), np.concatenate(labels[k])) for k in sorted(outs)}


def crop_accuracy(head: AttributeHead, crops: CropSet, batch: int = 256) -> dict[str, float]:
    """Accuracy per attribute on a crop set, objects (``object.color``) and parts (``part.color``)
    separately, and the position RMSE of objects (ground-plane units)."""
    res = {}
    for k, (out, lab) in crop_logits(head, crops, batch).items():
        if k == "object.position":
            res["object.position_rmse"] = math.sqrt(float(((out - lab) ** 2).sum()) / len(lab))
        else:
            res[k] = float((out.argmax(-1) == lab).mean())
    return res


def fit_temperatures(head: AttributeHead, crops: CropSet, batch: int = 256) -> dict[str, Any]:
    """One temperature per attribute of the head, fitted on ``crops`` (the val crops: objects and
    parts pooled, as one classifier serves both), and each ``object.<a>`` / ``part.<a>``'s
    top-label ECE before and after: ``{"temperatures": {a: T}, "ece": {key: {"before", "after"}}}``."""
    logits = crop_logits(head, crops, batch)
    temps = {}
    for a in sorted(set(OBJECT_ATTRIBUTES) | set(PART_ATTRIBUTES)):
        keys = [k for k in (f"object.{a}", f"part.{a}") if k in logits]
        if keys:
            temps[a] = fit_temperature(np.concatenate([logits[k][0] for k in keys]),
                                       np.concatenate([logits[k][1] for k in keys]))
    from scipy.special import softmax  # the [eval] extra, as fit_temperature's

    ece = {k: {"before": top_label_ece(softmax(out, axis=1), lab),
               "after": top_label_ece(softmax(out / temps[k.split(".")[1]], axis=1), lab)}
           for k, (out, lab) in logits.items() if k != "object.position"}
    return {"temperatures": temps, "ece": ece}


def _crop_cache(run: RunDir, name: str, build, made_from: dict[str, Any], progress: bool,
                dist: DistInfo | None = None, everywhere: bool = True) -> CropSet | None:
    """A crop set cached in the run directory (built once, reused on resume). ``made_from`` (plain
    values: the config fields that define the crops, and the detector's sha256 for detector crops)
    is stored with it; a cache made from anything else is cut again, never reused. In a
    data-parallel job rank 0 builds and writes it while the others wait, then they read it (every
    rank trains on the same set), or get None without ``everywhere``."""
    path = run.path / f"{name}.pt"

    def make() -> CropSet:
        if path.exists():
            ck = load_checkpoint(path, kind="crops")
            had = ck["extra"].get("made_from") or {}
            if had == made_from:
                return CropSet.from_state(ck["state_dict"])
            differ = sorted(k for k in set(made_from) | set(had) if had.get(k) != made_from.get(k))
            run.log(f"{path.name}: cut with other {', '.join(differ)}; cutting again")
        crops = build()
        save_checkpoint(path, kind="crops", config=dict(run.config), state_dict=crops.state(), vocabularies={},
                        extra={"made_from": made_from})
        return crops

    if dist is None or not dist.enabled:
        return make()
    crops = run_on_main(dist, make)
    if dist.is_main or not everywhere:
        return crops
    return CropSet.from_state(load_checkpoint(path, kind="crops")["state_dict"])


def _crop_fields(cfg: SceneParserConfig, *names: str) -> dict[str, Any]:
    """``cfg``'s fields ``names`` (plain scalars: what a crop cache's ``made_from`` compares)."""
    return {n: getattr(cfg, n) for n in names}


class HeadSelection:
    """Which epoch's head a run keeps (``cfg.attr_select``) and when it stops (``cfg.attr_patience``).

    With ``"e2e"`` it tracks ``best`` (``{"epoch", "value"}`` of :data:`SELECT_METRIC`; ties keep the
    earlier epoch) and writes that epoch's head to ``path`` until the run ends; ``stopping`` turns
    true after ``attr_patience`` epochs without a better one. With ``"last"`` it keeps every
    epoch's head as it is and never stops a run."""

    def __init__(self, cfg: SceneParserConfig, path: Path, best: dict | None = None):
        self.cfg, self.path, self.best, self.stopping = cfg, path, dict(best or {}), False

    def after_epoch(self, epoch: int, e2e: dict[str, float], metrics: dict[str, float], head: AttributeHead,
                    vocabularies: dict, *, final: bool, log) -> dict[str, Any]:
        """Take epoch ``epoch``'s end-to-end figures ``e2e`` (and its head, when best); returns
        what the checkpoint's ``extra`` records of the selection."""
        if self.cfg.attr_select != "e2e":
            return {}
        value = e2e.get(SELECT_METRIC)
        if value is None:
            raise RuntimeError(f"attributes epoch {epoch}: no end-to-end val {SELECT_METRIC} to choose on "
                               f"(no val object question on the first {self.cfg.e2e_eval_images} val images?)")
        if not self.best or value > self.best["value"]:
            self.best = {"epoch": epoch, "value": value}
            save_checkpoint(self.path, kind="attributes", config=asdict(self.cfg), state_dict=head.state_dict(),
                            vocabularies=vocabularies, extra={"val": metrics}, finished=True)
        patience = self.cfg.attr_patience
        self.stopping = bool(patience) and epoch - self.best["epoch"] >= patience and not final
        log(f"attributes epoch {epoch}: {SELECT_METRIC} {value:.4f}, best {self.best['value']:.4f} at epoch "
            f"{self.best['epoch']}" + ("; stopping early" if self.stopping else ""))
        return {"best": self.best}

    def keep(self, head: AttributeHead, epoch: int, metrics: dict[str, float]) -> dict[str, float]:
        """At the run's end: load the kept epoch's weights into ``head`` (the best one, unless it is
        ``epoch``'s, already there) and return its val metrics."""
        if self.cfg.attr_select != "e2e" or self.best["epoch"] == epoch:
            return metrics
        kept = load_checkpoint(self.path, kind="attributes")
        head.load_state_dict(kept["state_dict"])
        return kept["extra"]["val"]


def check_selection(cfg: SceneParserConfig, detector: Path) -> None:
    """:class:`~executors.errors.FormatError` (a ValueError) naming what is missing when
    ``cfg.attr_select`` is ``"e2e"`` and the head could not be chosen end to end: the detector
    checkpoint ``detector`` or the val questions."""
    questions = Path(cfg.data) / "questions" / "val_questions.json"
    if cfg.attr_select == "e2e" and not (detector.exists() and questions.exists()):
        raise FormatError(f"attr_select 'e2e' chooses the head on the end-to-end val accuracy, which needs the "
                         f"detector ({detector}{'' if detector.exists() else ': missing'}) and the val questions "
                         f"({questions}{'' if questions.exists() else ': missing'})")


def train_attributes(cfg: SceneParserConfig, run: RunDir, *, resume: bool = False, progress: bool = True,
                     dist: DistInfo | None = None) -> Path:
    """Train (or resume) the attribute head; returns the path of ``attributes.pt``.

    ``dist`` (default: :func:`nsvqa.training.distributed.init_from_env`): in a data-parallel job rank 0
    builds the crop caches, each rank trains on its ``attr_batch / world_size`` crops of the step
    (ValueError naming ``attr_batch`` when it does not divide), rank 0 alone validates and writes.
    """
    dist = init_from_env(cfg.device) if dist is None else dist
    check_global_batch(dist.world_size, attr_batch=cfg.attr_batch)
    det_path = Path(cfg.detector) if cfg.detector else run.path / "detector.pt"
    check_selection(cfg, det_path)
    progress = progress and dist.is_main
    vocab = attribute_vocabulary()
    directions = mean_directions(cfg.data, "train")
    gt_fields = ("crop_size", "attr_parts", "extra_parts", "part_crop", "seed")
    train = [_crop_cache(run, "crops_train_gt", lambda: gt_crops(cfg.data, "train", cfg.crop_size, cfg.attr_parts,
                                                                  cfg.max_train_images, progress, cfg.extra_parts,
                                                                  cfg.seed, cfg.part_crop),
                         _crop_fields(cfg, *gt_fields, "max_train_images"), progress, dist)]
    val_root = Path(cfg.data) / "scenes" / "val_scenes.json"
    # rank 0 decides what every rank builds (each crop cache is a collective step)
    have_det, have_val = run_on_main(dist, lambda: (det_path.exists(), val_root.exists()), share=True)
    ck = det = None
    if have_det and dist.is_main and (cfg.det_crop_images > 0 or cfg.e2e_eval_images > 0):
        # only rank 0 runs the detector (the others read its crop cache)
        ck = load_checkpoint(det_path, kind="detector")
        det = detector_from_checkpoint(ck, str(det_path))
    if cfg.det_crop_images > 0 and have_det:
        det_from = _crop_fields(cfg, "crop_size", "attr_parts", "part_crop", "det_crop_images", "min_score",
                                "match_iou") | {"detector_sha256": checkpoint_sha256(det_path)}
        train.append(_crop_cache(run, "crops_train_det", lambda: detector_crops(
            det, ck["vocabularies"], cfg.data, "train", cfg.crop_size, cfg.det_crop_images, cfg.min_score,
            cfg.match_iou, cfg.attr_parts and bool(ck["vocabularies"].get("part_class_ids")), progress,
            cfg.part_crop), det_from, progress, dist))
    elif cfg.det_crop_images > 0:
        run.log(f"attributes: no {det_path}; training on ground-truth crops only")
    train_set = CropSet.concat(train)
    val_set = (_crop_cache(run, "crops_val_gt", lambda: gt_crops(cfg.data, "val", cfg.crop_size, cfg.attr_parts,
                                                                  None, progress, cfg.extra_parts, cfg.seed + 1,
                                                                  cfg.part_crop),
                           _crop_fields(cfg, *gt_fields), progress, dist, everywhere=False)  # validation: rank 0
               if have_val else None)
    if len(train_set) == 0:
        raise ValueError(f"{cfg.data}: no training crops (empty train split?)")
    if dist.enabled and len(train_set) < cfg.attr_batch:  # the one short batch could leave a rank without crops
        raise ValueError(f"{cfg.data}: {len(train_set)} training crops, fewer than attr_batch={cfg.attr_batch}: "
                         f"too few to train data-parallel")
    dev = torch.device(dist.device)
    head = AttributeHead.from_config(cfg, {a: len(v) for a, v in vocab.items()}).to(dev)
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.attr_lr, weight_decay=1e-4)
    # the incomplete last batch is dropped (a batch of one breaks BatchNorm); every epoch reshuffles
    # and, with attr_part_share < 1, draws its share of the part crops afresh
    sampler = PermutationBatches(len(train_set), cfg.attr_batch, cfg.seed, stride=ATTRIBUTE_STRIDE, drop_last=True,
                                 thinned=(train_set.kind == 1).nonzero().flatten(), share=cfg.attr_part_share)
    steps_per_epoch = sampler.steps_per_epoch
    total = cfg.attr_epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(total, max(1, steps_per_epoch // 2)))
    path = run.path / "attributes.pt"
    start_epoch, before = 0, {}
    if resume and path.exists():
        ack = load_checkpoint(path, kind="attributes")
        head.load_state_dict(ack["state_dict"])
        restore_train_state(ack["train_state"], opt, sched)
        start_epoch = int(ack["train_state"]["epoch"])
        before = ack.get("extra") or {}
        if ack["train_state"].get("stopped_early"):  # the run ended there: nothing left to train
            start_epoch = cfg.attr_epochs
        run.log(f"attributes: resumed after epoch {start_epoch} from {path}")
    net = wrap(head, dist, sync_bn=True)
    run.log(f"attributes: {len(train_set)} train crops ({int((train_set.source == 1).sum())} from the detector), "
            f"{len(val_set) if val_set is not None else 0} val crops")
    vocabularies = {"attributes": vocab, "directions": directions}
    metrics: dict[str, float] = {}

    # this rank's crops of each step
    batches = StepLoader(train_set, collate_crops, sampler, start=start_epoch * steps_per_epoch, total=total,
                         device=dev, select=lambda idx: shard(idx, dist.rank, dist.world_size))

    def step_fn(step: int) -> StepResult:
        if step % steps_per_epoch == 0:
            head.train()  # each epoch starts in training mode (validation leaves the head in eval mode)
        x, geo, lab = batches(step).data
        if cfg.attr_augment == "shift":  # the step's own draws: a resumed run warps alike
            x = shift_crops(x, torch.Generator().manual_seed(cfg.seed * 1_000_003 + step * 97 + dist.rank))
        out = net(x, geo)
        losses = attribute_loss(out, lab)
        loss, keys = losses["total"], None
        if dist.enabled:
            # a rank's slice may lack parts or objects (no loss for some heads): every output
            # joins the graph with weight 0 so that DDP reduces every gradient on every rank
            loss = loss + 0.0 * sum(o.sum() for o in out.values())
            keys = sorted(set(out) | {"total"})
        return StepResult(loss, losses, keys=keys)

    val_questions = Path(cfg.data) / "questions" / "val_questions.json"
    has_questions = val_questions.exists()
    questions: list[dict] | None = None  # read at the first evaluation, kept for the others
    eval_seconds = float(before.get("eval_seconds", 0.0))

    def end_to_end(p: Progress) -> dict[str, float]:
        """NS-VQA / P-NSVQA val accuracy on ground-truth programs over the parsed scenes of the
        first ``e2e_eval_images`` val images (the detector of this run, the head as it is now),
        parsed as the study parses (detections scoring >= ``PARSE_MIN_SCORE``)."""
        nonlocal eval_seconds, questions
        if det is None or not has_questions or cfg.e2e_eval_images < 1:
            return {}

        t0 = time.time()
        parser = scene_parser_from(det, ck["vocabularies"], head, vocabularies, cfg, min_score=PARSE_MIN_SCORE,
                                   detector_path=str(det_path))
        liks = []
        for idx, name, parsed in parse_split(parser, cfg.data, "val", limit=cfg.e2e_eval_images, progress=False):
            parsed.likelihoods.image_index, parsed.likelihoods.image_filename = idx, name
            liks.append(parsed.likelihoods)
        questions = load_questions(val_questions) if questions is None else questions
        acc = executor_accuracy(liks, questions, parser.ontology)
        out = {f"{m}.{g}": v for m, groups in acc.items() if m not in ("questions", "paired")
               for g, v in groups.items() if v is not None}
        out["train_minutes"] = (p.seconds - eval_seconds) / 60.0
        eval_seconds += time.time() - t0
        return out

    keeper = HeadSelection(cfg, run.path / "attributes_best.pt", before.get("best"))

    def checkpoint(p: Progress) -> None:  # rank 0 only, at the end of each epoch
        nonlocal metrics
        if not p.trained:  # zero epochs requested
            save_checkpoint(path, kind="attributes", config=asdict(cfg), state_dict=head.state_dict(),
                            vocabularies=vocabularies, train_state={"epoch": 0})
            return
        epoch = p.step // steps_per_epoch
        if val_set is not None:
            metrics = crop_accuracy(head, val_set)
            run.scalars("attributes_val", metrics, epoch)
            run.log(f"attributes epoch {epoch} val " + " ".join(f"{k}={v:.4f}" for k, v in metrics.items()))
        e2e = end_to_end(p)
        if e2e:
            run.scalars("end_to_end_val", e2e, epoch)
            run.log(f"attributes epoch {epoch} end-to-end val ({cfg.e2e_eval_images} images, ground-truth programs) "
                    + " ".join(f"{k}={v:.4f}" for k, v in e2e.items()))
            metrics = metrics | {f"e2e.{k}": v for k, v in e2e.items()}
        extra = keeper.after_epoch(epoch, e2e, metrics, head, vocabularies, final=p.final, log=run.log)
        ending = p.final or keeper.stopping
        kept_metrics = keeper.keep(head, epoch, metrics) if ending else metrics  # the kept head, in `head`
        vocab_out = vocabularies
        if ending and cfg.calibrate:
            if val_set is None:
                run.log(f"attributes: calibrate asked, but {cfg.data} has no val split: no temperatures fitted")
            else:
                fitted = fit_temperatures(head, val_set)
                vocab_out = vocabularies | {"temperatures": fitted["temperatures"]}
                extra["calibration"] = fitted
                run.log("attributes: temperatures " + " ".join(f"{a}={t:.3f}" for a, t in fitted["temperatures"].items())
                        + "; val ECE before -> after " + " ".join(
                            f"{k}={v['before']:.3f}->{v['after']:.3f}" for k, v in fitted["ece"].items()))
        save_checkpoint(path, kind="attributes", config=asdict(cfg), state_dict=head.state_dict(), vocabularies=vocab_out,
                        extra={"val": kept_metrics, "seconds": p.seconds, "eval_seconds": eval_seconds,
                               **({"last_val": metrics, "epochs_run": epoch} if ending else {}), **extra},
                        train_state={"optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "epoch": epoch,
                                     **({"stopped_early": True} if keeper.stopping else {})},
                        finished=ending)
        if ending:
            keeper.path.unlink(missing_ok=True)

    train_steps(step_fn, opt, run, start=start_epoch * steps_per_epoch, total=total, scheduler=sched,
                clip_params=head.parameters(), clip_norm=cfg.attr_clip or None,
                phase="attributes", log_every=10, eval_every=steps_per_epoch, on_checkpoint=checkpoint,
                checkpoint_path=path, dist=dist, rank_seed=cfg.seed, seconds_before=float(before.get("seconds", 0.0)),
                progress=progress, desc="attributes",
                postfix=lambda p: {"epoch": f"{(p.step - 1) // steps_per_epoch + 1}/{cfg.attr_epochs}",
                                   "loss": f"{p.values['total']:.3f}"},
                stop=(lambda _p: keeper.stopping) if cfg.attr_patience else None)
    return path


def train_scene_parser(cfg: SceneParserConfig, out: str | Path, *, resume: bool = False,
                       progress: bool = True) -> RunDir:
    """Run the configured stages into ``out`` (a run directory).

    Launched by torchrun (``WORLD_SIZE`` > 1) the stages train data-parallel; rank 0 writes ``out``
    and returns its RunDir, the other ranks a :class:`nsvqa.training.distributed.QuietRun` on the same path.

    Raises:
        executors.errors.FormatError: a train or val image missing, truncated, changed or of another
            size (:func:`nsvqa.artifacts.images.check_split_images`), before any step.
    """
    def check_images() -> None:  # every image the stages read, before anything is written or trained
        for split in ("train", "val"):
            check_split_images(cfg.data, split)
        if cfg.stage == "attributes":  # (with "all", the detector is trained first)
            check_selection(cfg, Path(cfg.detector) if cfg.detector else Path(out) / "detector.pt")

    # the global batches of the stages to run, checked before anything is written or trained
    batches = {}
    if cfg.stage in ("detector", "all"):
        batches["det_batch"] = cfg.det_batch
    if cfg.stage in ("attributes", "all"):
        batches["attr_batch"] = cfg.attr_batch
    with training_run(cfg, out, resume=resume, preflight=check_images, **batches) as (run, dist):
        if cfg.stage in ("detector", "all"):
            train_detector(cfg, run, resume=resume, progress=progress, dist=dist)
        if cfg.stage in ("attributes", "all"):
            train_attributes(cfg, run, resume=resume, progress=progress, dist=dist)
    return run


__all__ = ["CropSet", "collate_crops", "train_scene_parser", "train_detector", "train_attributes", "gt_crops",
           "detector_crops", "crop_logits", "crop_accuracy", "HeadSelection", "check_selection", "fit_temperatures", "attribute_vocabulary", "mean_directions"]
