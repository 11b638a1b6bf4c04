"""Writing a generated split in the on-disk format of docs/formats.md, in parallel and resumably.

Layout under ``<root>/<variant>/``::

    images/<split>/<prefix>_<split>_<index:06d>.png
    scenes/<split>/<index:06d>.json          one record per image while the split is being made
                                             (its completion marker; removed once merged; it also
                                             holds the mid-level parts the questions are asked about)
    scenes/<split>/settings.json             the settings of the images begun (removed once merged)
    scenes/<split>_scenes.json               {"info", "scenes"}: merged when the split is complete
    scenes/<split>_visual_parts.json         per image, the parts its questions ask about (so a
                                             larger split of the same settings reuses these images)
    questions/<split>_questions.json         {"info", "questions"}: programs, answers, obj_map
    annotations/<split>_coco.json            COCO instances (objects and parts, RLE masks)
    manifest.json                            generator version, parameters, seed, counts, sha256

Every image depends only on (seed, split, index, parameters), so any division of the work over
processes (``workers``) or machines (``shard``) writes the same bytes. Every file is written to a
temporary name and renamed; an image counts as done when its record exists, so a killed run,
started again, skips finished images and redoes the rest; it first sweeps the temporaries the
killed run left (:func:`nsvqa.fileio.sweep_temporaries`). A split is never replaced by a smaller
one, or by one of other settings, unless asked (``force``): :class:`SplitWouldShrink`,
:class:`SplitSettingsDiffer`. A split grown with the same settings renders only its new images.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import multiprocessing as mp
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from executors.io import read_json
from executors import load_ontology

from nsvqa.fileio import FolderLock, sha256_file, sweep_temporaries, write_atomic, write_json_atomic

from nsvqa.generation.annotations import coco_from_scenes
from nsvqa.generation.looks import DEFAULT_LOOK
from nsvqa.generation.questions import QuestionGenerator, load_templates
from nsvqa.generation.renderer import Renderer
from nsvqa.generation.sampler import SceneParams
from nsvqa.generation.scenes import VISUAL_PARTS, generate_image, question_scene
from nsvqa.generation.variants import load_variant

GENERATOR_VERSION = "0.2.0"  # 0.2.0: one question set for the three visual levels
SPLITS = ("train", "val", "test")
PREFIX = "nsvqa"
#: Question sets: (object questions, part questions) asked per image. ``object`` is the paper's
#: question set: the official Super-CLEVR release asks 10 questions per image from the CLEVR 1.0
#: templates (``nsvqa/generation/data/question_templates`` without ``part.json``); ``object+part``
#: adds 10 questions of the part templates, an extension no published study has (docs/variants.md).
QUESTION_SETS: Mapping[str, tuple[int, int]] = {"object": (10, 0), "object+part": (10, 10)}
@dataclass(frozen=True)
class GenerationProfile:
    """Image size of a profile: ``tiny`` for tests, ``mini`` for CPU work, ``full`` the paper's."""

    width: int
    height: int


PROFILES = {"tiny": GenerationProfile(64, 48), "mini": GenerationProfile(320, 240),
            "full": GenerationProfile(640, 480)}
PROFILES["demo"] = PROFILES["mini"]  # fewer images (scripts/generate_suite.py), mini's size

#: the largest image side the generator takes (the paper's images are 480x320; 4096 is past any use)
MAX_SIDE = 4096


def image_side(text: str) -> int:
    """An argparse ``type`` for an image's width or height: an integer in [16, :data:`MAX_SIDE`].

    Raises:
        argparse.ArgumentTypeError: anything else (the value named).
    """
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 16 <= value <= MAX_SIDE:
        raise argparse.ArgumentTypeError(f"expected pixels from 16 to {MAX_SIDE}, got {text!r}")
    return value


@dataclass(frozen=True)
class SplitJob:
    """What to generate: one split of one variant."""

    root: Path
    variant: str
    split: str
    num_images: int
    seed: int
    params: SceneParams = field(default_factory=SceneParams)
    width: int = 320
    height: int = 240
    ontology: str = "superclevr"
    spec: Mapping[str, Any] | None = None  # the variant's catalogue spec, recorded in the manifest
    redundancy: str = "rd"                  # question redundancy level (rd-, rd, rd+)
    questions_per_image: tuple[int, int] = (10, 10)  # object questions, part questions

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
        if self.num_images < 0:
            raise ValueError(f"num_images must be >= 0, got {self.num_images}")
        if not (16 <= self.width <= MAX_SIDE and 16 <= self.height <= MAX_SIDE):
            raise ValueError(f"an image of {self.width}x{self.height}: each side must be from 16 to {MAX_SIDE} pixels")

    @property
    def folder(self) -> Path:
        return Path(self.root) / self.variant

    @property
    def split_seed(self) -> int:
        """Seed of this split: the split name is mixed in so train/val/test differ."""
        h = hashlib.sha256(f"{self.seed}:{self.split}".encode()).digest()
        return int.from_bytes(h[:8], "little")

    def image_name(self, index: int) -> str:
        return f"{PREFIX}_{self.split}_{index:06d}.png"

    def image_path(self, index: int) -> Path:
        return self.folder / "images" / self.split / self.image_name(index)

    def record_path(self, index: int) -> Path:
        return self.folder / "scenes" / self.split / f"{index:06d}.json"

    def config(self) -> dict:
        """JSON-able description of the job (saved in the manifest)."""
        params = dataclasses.asdict(self.params)
        params["weights"] = {k: (None if v is None else np.asarray(v).tolist())
                             for k, v in dataclasses.asdict(self.params.weights).items()}
        params["joint"] = None if self.params.joint is None else [list(p) for p in self.params.joint]
        params["camera_scales"] = list(self.params.camera_scales)
        if params["look"] == DEFAULT_LOOK:  # datasets made before looks existed: the same config
            del params["look"]
        return {"generator_version": GENERATOR_VERSION, "variant": self.variant, "split": self.split,
                "num_images": self.num_images,
                "seed": self.seed, "width": self.width, "height": self.height,
                "ontology": self.ontology, "params": params, "redundancy": self.redundancy,
                "questions_per_image": list(self.questions_per_image)}


def png_bytes(rgb: np.ndarray) -> bytes:
    """Deterministic PNG encoding of an (H, W, 3) uint8 image: the same pixels give the same bytes
    (zlib level 1 with the run-length strategy; ``docs/formats.md`` says what the bytes promise)."""
    from PIL import Image  # heavy ([full]): only to encode; the commands read the tables at once

    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, format="PNG", compress_level=1, compress_type=zlib.Z_RLE)
    return buf.getvalue()


# ---------------------------------------------------------------------- generation
def merged_path(job: SplitJob) -> Path:
    return job.folder / "scenes" / f"{job.split}_scenes.json"


def is_complete(job: SplitJob) -> bool:
    """The split was merged for this job's configuration (recorded in the manifest)."""
    path = job.folder / "manifest.json"
    if not merged_path(job).exists() or not path.exists():
        return False
    done = read_json(path).get("splits", {}).get(job.split, {})
    return done.get("config") == job.config()


def pending(job: SplitJob, shard: tuple[int, int] = (0, 1)) -> list[int]:
    """Indices of this shard whose record does not exist yet."""
    if is_complete(job):
        return []
    i, n = shard
    return [k for k in range(i, job.num_images, n) if not job.record_path(k).exists()]


class SplitWouldShrink(ValueError):
    """A job that would replace an existing split with fewer images (the message names the split,
    its current size and ``--force``)."""


class SplitSettingsDiffer(ValueError):
    """A job whose settings (seed, image size, question set, scene parameters, generator version)
    differ from those the existing split, or its images begun, were made with; the message names
    the split, each setting that differs and ``--force``."""


#: the option of ``generate_dataset.py`` that sets each field of :meth:`SplitJob.config`
_OPTION = {"seed": "--seed", "width": "--profile/--width", "height": "--profile/--height",
           "questions_per_image": "--questions", "params": "--variant (its catalogue entry changed)",
           "redundancy": "--variant (its catalogue entry changed)", "variant": "--variant",
           "ontology": "the ontology", "generator_version": "the generator's version", "split": "--split"}


def settings(config: Mapping[str, Any]) -> dict:
    """A :meth:`SplitJob.config` without its size: what every image of a split depends on."""
    return {k: v for k, v in config.items() if k != "num_images"}


def settings_path(job: SplitJob) -> Path:
    """``scenes/<split>/settings.json``: the settings of a split being made (beside its records)."""
    return job.folder / "scenes" / job.split / "settings.json"


def visual_parts_path(job: SplitJob) -> Path:
    """``scenes/<split>_visual_parts.json``: per image, the parts its questions are asked about
    (:data:`~nsvqa.generation.scenes.VISUAL_PARTS`), kept so that a larger split reuses the images
    it has."""
    return job.folder / "scenes" / f"{job.split}_visual_parts.json"


def _made_with(job: SplitJob) -> tuple[Path, dict] | None:
    """Where the split's settings are recorded and what they are: the manifest's for a merged
    split, else the settings of the images begun; None for a split not begun."""
    entry = _manifest_entry(job)
    if entry is not None and "config" in entry:
        return job.folder / "manifest.json", settings(entry["config"])
    if settings_path(job).is_file():
        return settings_path(job), read_json(settings_path(job))
    return None


def check_same_settings(job: SplitJob, force: bool = False) -> None:
    """Refuse a job whose settings differ from those the existing split (or the images of it begun)
    were made with, unless ``force``: the split would be replaced without a word.

    Raises:
        SplitSettingsDiffer: naming the record, the split, each setting that differs (the split's
            value and this job's, and the option that sets it) and ``--force``.
    """
    made = _made_with(job)
    if made is None or force:
        return
    where, old = made
    new = settings(job.config())
    differ = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    if differ:
        what = "; ".join(f"{k} {_brief(old.get(k))} (this command: {_brief(new.get(k))}, set by {_OPTION.get(k, k)})"
                         for k in differ)
        raise SplitSettingsDiffer(f"{where}: split {job.variant}/{job.split} was made with other settings: {what}. "
                                  f"Nothing written: rerun with the split's settings to keep it, or add --force to "
                                  f"replace it")


def _brief(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else "other values"


def _manifest_entry(job: SplitJob) -> dict | None:
    path = job.folder / "manifest.json"
    if not merged_path(job).exists() or not path.exists():
        return None
    return read_json(path).get("splits", {}).get(job.split)


def _reuse_merged(job: SplitJob) -> int:
    """A merged split of the same settings and fewer images than ``job``: its images are this
    job's first ones, so their per-image records are written back from the merged scenes (and
    :func:`visual_parts_path`) and only the new images are rendered. An image whose bytes differ
    from the manifest's sha256 is left to render again. Returns the images reused."""
    entry = _manifest_entry(job)
    if entry is None or settings(entry.get("config", {})) != settings(job.config()):
        return 0
    n = int(entry.get("counts", {}).get("images", 0))
    if n >= job.num_images or not visual_parts_path(job).is_file():
        return 0
    scenes = read_json(merged_path(job), allow_nan=True)["scenes"]
    parts = read_json(visual_parts_path(job), allow_nan=True)
    reused = 0
    for k in range(min(n, len(scenes), len(parts))):
        image, sha = job.image_path(k), entry.get("sha256", {}).get(f"images/{job.split}/{job.image_name(k)}")
        if scenes[k].get("image_index") != k or job.record_path(k).exists():
            continue
        if sha is None or not image.is_file() or sha256_file(image) != sha:
            continue
        write_json_atomic(job.record_path(k), {**scenes[k], VISUAL_PARTS: parts[k]})
        reused += 1
    return reused


def existing_size(job: SplitJob) -> int | None:
    """How many images the manifest records for the job's split (``None``: no merged split)."""
    done = _manifest_entry(job)
    return None if done is None else int(done.get("counts", {}).get("images", 0))


def check_no_shrink(job: SplitJob, force: bool = False) -> None:
    """Refuse a job that would replace the existing split with a smaller one, unless ``force``.

    Raises:
        SplitWouldShrink: naming the manifest, the split, its current size and ``--force``.
    """
    n = existing_size(job)
    if n is not None and job.num_images < n and not force:
        raise SplitWouldShrink(
            f"{job.folder / 'manifest.json'}: split {job.variant}/{job.split} holds {n} images; --num-images "
            f"{job.num_images} would replace it with {job.num_images}. Nothing written: rerun with --num-images "
            f"{n} to keep it, or add --force to replace it")


def _drop_images_beyond(job: SplitJob) -> None:
    """Remove the split's images (and resume records) whose index is past ``job.num_images``."""
    for folder, pattern in ((job.folder / "images" / job.split, f"{PREFIX}_{job.split}_*.png"),
                            (job.folder / "scenes" / job.split, "*.json")):
        for path in folder.glob(pattern) if folder.is_dir() else ():
            stem = path.stem.rsplit("_", 1)[-1]
            if stem.isdigit() and int(stem) >= job.num_images:
                path.unlink()


class _Worker:
    """Renders images of one job in one process (one EGL context per process)."""

    def __init__(self, job: SplitJob):
        self.job = job
        self.onto = load_ontology(job.ontology)
        # single-sample colour pass + FXAA: ~2.5x faster than 4x MSAA on llvmpipe, same exact ids
        self.renderer = Renderer(job.width, job.height, samples=0, shadow_size=512)

    def __call__(self, index: int) -> int:
        job = self.job
        img = generate_image(self.renderer, self.onto, job.params, job.split_seed, index, job.split,
                             job.image_name(index))
        write_atomic(job.image_path(index), png_bytes(img.rgb))
        write_json_atomic(job.record_path(index), img.scene)  # written last: marks the image done
        return index


_WORKER: _Worker | None = None


def _init_worker(job: SplitJob) -> None:
    global _WORKER
    _WORKER = _Worker(job)


def _work(index: int) -> int:
    assert _WORKER is not None
    return _WORKER(index)


def generate_split(job: SplitJob, workers: int = 1, shard: tuple[int, int] = (0, 1),
                   progress: bool = True, finalize: bool = True,
                   on_image: Callable[[int], None] | None = None, force: bool = False) -> dict:
    """Generate the missing images of ``job`` (this shard), then merge the split when complete.
    Stale temporaries of a killed run in the variant's folder are removed first. One process at a
    time writes a split (or one shard of it): a lock file in the variant folder
    (:class:`nsvqa.fileio.FolderLock`).

    Args:
        workers: processes (each with its own renderer); 1 renders in this process.
        shard: (i, n): this call renders the indices k with k % n == i.
        finalize: merge scenes, write COCO annotations and the manifest once every image exists.
        on_image: called with each finished index (tests use it to interrupt a run).
        force: replace an existing split by a smaller one (its images past the new size removed),
            or by one of other settings.

    A split grown (the same settings, more images) renders only its new images
    (:func:`_reuse_merged`).

    Returns:
        {"rendered": n, "skipped": n, "finalized": bool}

    Raises:
        SplitWouldShrink: the split exists with more images than ``job.num_images`` and not ``force``.
        SplitSettingsDiffer: the split exists (or was begun) with other settings and not ``force``.
        nsvqa.fileio.FolderInUse: another live process generates the split (the same shard).
    """
    i, n = shard
    with FolderLock(job.folder, f"split {job.variant}/{job.split}" + (f" (shard {i}/{n})" if n > 1 else ""),
                    name=f".nsvqa-{job.split}" + (f"-{i}of{n}" if n > 1 else "") + ".lock"):
        return _generate_split(job, workers, shard, progress, finalize, on_image, force)


def _generate_split(job: SplitJob, workers: int, shard: tuple[int, int], progress: bool, finalize: bool,
                    on_image: Callable[[int], None] | None, force: bool) -> dict:
    """:func:`generate_split` with the split's lock held."""
    from tqdm import tqdm  # heavy for the study plan's import (~50 modules): only while a split is made

    check_no_shrink(job, force)
    check_same_settings(job, force)
    sweep_temporaries(job.folder, recursive=True)
    if force:
        made = _made_with(job)
        if made is not None and made[1] != settings(job.config()):  # other settings: no image of theirs is kept
            for record in (job.folder / "scenes" / job.split).glob("[0-9]*.json"):
                record.unlink(missing_ok=True)
        _drop_images_beyond(job)
    if not is_complete(job):
        _reuse_merged(job)
        write_json_atomic(settings_path(job), settings(job.config()))

    todo = pending(job, shard)
    total = len(range(shard[0], job.num_images, shard[1]))
    bar = tqdm(total=total, initial=total - len(todo), disable=not progress, unit="img",
               desc=f"{job.variant}/{job.split}")
    if todo and workers <= 1:
        worker = _Worker(job)
        try:
            for k in todo:
                worker(k)
                bar.update()
                if on_image:
                    on_image(k)
        finally:
            worker.renderer.release()
    elif todo:
        ctx = mp.get_context("spawn")  # a fresh process per worker: no GL state crosses a fork
        with ctx.Pool(workers, initializer=_init_worker, initargs=(job,)) as pool:
            for k in pool.imap_unordered(_work, todo, chunksize=4):
                bar.update()
                if on_image:
                    on_image(k)
    bar.close()
    done = not pending(job)
    if finalize and done and not is_complete(job):
        finalize_split(job, progress)
    return {"rendered": len(todo), "skipped": total - len(todo), "finalized": bool(finalize and done)}


def finalize_split(job: SplitJob, progress: bool = False) -> None:
    """Merge the per-image records into the split files, ask the questions, update the manifest.

    Questions are made in one pass over the images in index order with one generator, so answer
    balancing spans the split and the result does not depend on how rendering was divided. They are
    asked about the mid-level form of each layout and must be well-posed at the easy level too
    (:func:`nsvqa.generation.scenes.question_scene`); each record carries the answer at this job's
    own level. So the easy, mid and hard splits of one seed hold the same (image, question,
    program) triples, as the paper's visual-complexity levels do, answered each at its level.
    """
    from tqdm import tqdm  # heavy for the study plan's import (~50 modules): only while a split is made

    onto = load_ontology(job.ontology)
    scenes = [read_json(job.record_path(k), allow_nan=True) for k in range(job.num_images)]
    info = {"generator": "nsvqa", "version": GENERATOR_VERSION, "variant": job.variant, "split": job.split,
            "redundancy": job.redundancy}
    qgen = QuestionGenerator(onto, load_templates(ontology=onto))
    n_obj, n_part = job.questions_per_image
    questions, visual_parts = [], []
    for sc in tqdm(scenes, disable=not progress, unit="img", desc=f"{job.variant}/{job.split} questions"):
        rng = np.random.default_rng([job.split_seed, int(sc["image_index"]), 1])
        # the mid-level form of the layout, well-posed at easy too: every visual level asks the same
        ask, other_levels = question_scene(sc)
        questions += qgen.generate(ask, rng, n_object=n_obj, n_part=n_part, redundancy=job.redundancy,
                                   companions=other_levels, answer_scene=sc)
        visual_parts.append(sc.pop(VISUAL_PARTS, None))  # a generation aid, not part of the scene schema
    for k, q in enumerate(questions):
        q["question_index"] = k
    write_json_atomic(merged_path(job), {"info": info, "scenes": scenes})
    write_json_atomic(questions_path(job), {"info": info, "questions": questions})
    coco = coco_from_scenes(scenes, onto.scene_values("shape"), onto.part_names, job.width, job.height, info)
    write_json_atomic(job.folder / "annotations" / f"{job.split}_coco.json", coco)
    write_json_atomic(visual_parts_path(job), visual_parts)
    update_manifest(job, n_questions=len(questions))
    # the split is whole: the per-image records were only the resume markers
    for k in range(job.num_images):
        job.record_path(k).unlink()
    settings_path(job).unlink(missing_ok=True)
    try:
        (job.folder / "scenes" / job.split).rmdir()
    except OSError:
        pass


def questions_path(job: SplitJob) -> Path:
    return job.folder / "questions" / f"{job.split}_questions.json"


def update_manifest(job: SplitJob, n_questions: int) -> dict:
    """Record this split (config, counts, sha256 of its files) in ``manifest.json``."""
    path = job.folder / "manifest.json"
    manifest = read_json(path) if path.exists() else {}  # strict: a damaged manifest is named, not merged into
    files = [job.image_path(k) for k in range(job.num_images)]
    files += [merged_path(job), questions_path(job), job.folder / "annotations" / f"{job.split}_coco.json"]
    manifest.update({"generator": "nsvqa", "generator_version": GENERATOR_VERSION, "variant": job.variant})
    if job.spec is not None:
        manifest["variant_spec"] = dict(job.spec)
    manifest.setdefault("splits", {})[job.split] = {
        "config": job.config(), "counts": {"images": job.num_images, "questions": n_questions},
        "sha256": {str(p.relative_to(job.folder)): sha256_file(p) for p in files},
    }
    write_json_atomic(path, manifest)
    return manifest


def job_for(root: Path, variant: str, split: str, num_images: int, seed: int, width: int = 320,
            height: int = 240, questions: str = "object+part") -> SplitJob:
    """A :class:`SplitJob` for a catalogue variant (its scene parameters for ``split``) asking the
    question set ``questions`` (:data:`QUESTION_SETS`).

    Raises:
        ValueError: an unknown question set.
    """
    if questions not in QUESTION_SETS:
        raise ValueError(f"question set {questions!r}: expected one of {sorted(QUESTION_SETS)}")
    v = load_variant(variant)
    onto = load_ontology("superclevr")
    return SplitJob(Path(root), v.name, split, num_images, seed, v.scene_params(split, onto), width, height,
                    spec=v.spec(), redundancy=v.redundancy, questions_per_image=QUESTION_SETS[questions])
