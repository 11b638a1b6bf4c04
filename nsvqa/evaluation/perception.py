"""The scene parser on a test split, object by object: what a model's answers across variants rest on.

:func:`perception` reads a run's parse of a split (``likelihoods.json``) and the split's
ground-truth scenes, and returns, as JSON:

- ``all``: every object of the split: ``objects``, ``recall`` (matched one-to-one by mask IoU,
  :func:`nsvqa.evaluation.scene_parser.match_scene`), the argmax accuracy of each object attribute
  over matched objects (``object.<attribute>``), and the object count an argmax scene gives
  (detections with existence >= ``min_exist``): the share of images counted exactly
  (``count_exact``) and the mean signed error (``count_error``, detected minus true); and
  ``recall_by_category`` (shape category -> ``objects``, ``recall``: the thin bicycles match a
  mask IoU of 0.5 far less often than the other categories);
- on a systematic split (its spec has ``ood``, :attr:`nsvqa.generation.variants.Variant.ood`), the same for
  ``id`` and ``ood`` objects apart: a held-out (shape category, color) pair, or an image whose object
  count or camera scale training never saw (every object of it); and ``fallback``, whether the
  parser's errors on held-out values land on values training showed:

  * shape category x color: of the held-out objects' wrong colours, the share naming a colour seen
    with the object's category in training (``seen_with_category``), beside ``uniform``, the share
    a wrong colour drawn uniformly would give;
  * object count x camera scale: of the miscounted images, the share whose count is one training
    had (``to_training_count``; the counts of the spec's training grid), per group, and the mean
    signed count error per group (a parser
    pulled toward the training range under-counts above it and over-counts below it).

Schott et al. (ICLR 2022) found that predictions on held-out factor values regress toward the
training distribution; this measures it on the parser's attributes and counts.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from executors import Ontology
from nsvqa.artifacts import read_scenes, scenes_path
from nsvqa.artifacts.predictions import scene_held_out
from nsvqa.artifacts.records import check_same_image
from nsvqa.evaluation.scene_parser import load_parsed, match_scene

#: Existence cut of the argmax scene whose objects are counted (NS-VQA's default).
MIN_EXIST = 0.5
_SCENE_FACTORS = {"num_objects", "camera_scale"}


def _group_of(obj: Mapping[str, Any], held_image: bool | None, spec: Mapping[str, Any] | None,
              onto: Ontology) -> str | None:
    if spec is None:
        return None
    factors = tuple(spec.get("factors", ()))
    if factors == ("shape_category", "color"):
        held = {tuple(p) for p in spec.get("test_only", {}).get("pairs", ())}
        return "ood" if (onto.category_of(obj["shape"]), obj["color"]) in held else "id"
    if set(factors) <= _SCENE_FACTORS:
        return None if held_image is None else ("ood" if held_image else "id")
    raise ValueError(f"the systematic split's factors {list(factors)} are not known "
                     f"(known: ['shape_category', 'color'], ['num_objects', 'camera_scale'])")


class _Tally:
    def __init__(self, attributes: Sequence[str]):
        self.objects = self.matched = self.images = self.exact = 0
        self.error = 0.0
        self.correct = {a: 0 for a in attributes}
        self.miscounted = self.to_training = 0
        self.by_category: dict[str, list[int]] = {}  # shape category -> [objects, matched]

    def to_json(self, counts: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"objects": self.objects, "recall": self.matched / self.objects if self.objects else None}
        out["recall_by_category"] = {c: {"objects": n, "recall": m / n} for c, (n, m) in sorted(self.by_category.items())}
        out.update({f"object.{a}": (c / self.matched if self.matched else None) for a, c in self.correct.items()})
        if counts:
            out.update({"images": self.images, "count_exact": self.exact / self.images if self.images else None,
                        "count_error": self.error / self.images if self.images else None})
        return out


def training_counts(spec: Mapping[str, Any]) -> set[int] | None:
    """The object counts of a variant's training scenes, from its spec's ``splits.train.joint``
    grid of (count, camera scale) (None when it has none)."""
    joint = ((spec.get("splits") or {}).get("train") or {}).get("joint")
    return {int(p[0]) for p in joint} if joint else None


def perception(parsed: str | Path, data: str | Path, split: str = "test", *,
               spec: Mapping[str, Any] | None = None, min_exist: float = MIN_EXIST,
               min_iou: float = 0.5) -> dict[str, Any]:
    """See the module docstring. ``data``: the variant's folder; ``spec``: its catalogue spec
    (:meth:`nsvqa.generation.variants.Variant.spec`); a systematic split's has ``ood`` (else
    ``all`` only).

    Raises:
        KeyError: a parsed scene with no ground-truth scene of its ``image_index``.
        ValueError: a systematic split over factors this function does not know.
    """
    doc, liks = load_parsed(parsed)
    for field, want in (("data", Path(data).name), ("split", split)):
        got = doc.get(field)
        if got is not None and (Path(got).name if field == "data" else got) != want:
            raise ValueError(f"{parsed}, field {field!r}: a parse of {got!r}, not of {want!r} "
                             f"({Path(data) / 'scenes'} / {split})")
    gt = {i: s.record for i, s in read_scenes(scenes_path(Path(data), split)).by_image_index().items()}
    onto = liks[0].ontology if liks else None
    attributes = ("shape", "color", "material", "size")
    tallies = {g: _Tally(attributes) for g in ("all", "id", "ood")}
    wrong_colors: list[tuple[str, str]] = []  # (category, predicted colour) of held-out objects
    ood_spec = (spec or {}).get("ood")
    scene_split = ood_spec is not None and set(ood_spec.get("factors", ())) <= _SCENE_FACTORS
    counts_train = training_counts(spec or {}) if scene_split else None
    for s, lik in zip(doc["scenes"], liks):
        scene = gt.get(int(s["image_index"]))
        if scene is None:
            raise KeyError(f"{parsed}: scene {s['image_index']}: no ground-truth scene with that image_index "
                           f"in {scenes_path(Path(data), split)}")
        check_same_image(f"{parsed}, scene {s['image_index']}", s["image_index"], s.get("image_filename"),
                         scene.get("image_filename"), scenes_path(Path(data), split), "ground-truth scene")
        objs = scene["objects"]
        held_image = scene_held_out(scene, ood_spec) if scene_split else None
        groups = [_group_of(o, held_image, ood_spec, onto) for o in objs]
        pairs = dict((j, i) for i, j in match_scene(s["detections"], objs, min_iou)[0])
        counted = int(np.sum(lik.exist >= min_exist))
        for j, o in enumerate(objs):
            for g in ("all", groups[j]):
                if g is None:
                    continue
                t = tallies[g]
                t.objects += 1
                per_category = t.by_category.setdefault(onto.category_of(o["shape"]), [0, 0])
                per_category[0] += 1
                if j not in pairs:
                    continue
                t.matched += 1
                per_category[1] += 1
                for a in attributes:
                    pred = onto.values(a)[int(np.argmax(lik.attributes[a][pairs[j]]))]
                    t.correct[a] += pred == o[a]
                    if a == "color" and g == "ood" and not scene_split and pred != o[a]:
                        wrong_colors.append((onto.category_of(o["shape"]), pred))
        image_groups = {"all"} | ({("ood" if held_image else "id")} if scene_split and held_image is not None else set())
        for g in image_groups:
            t = tallies[g]
            t.images += 1
            t.exact += counted == len(objs)
            t.error += counted - len(objs)
            if counted != len(objs):
                t.miscounted += 1
                t.to_training += counts_train is not None and counted in counts_train
    out: dict[str, Any] = {"split": split, "min_exist": min_exist, "all": tallies["all"].to_json(True)}
    if ood_spec is None:
        return out
    out["id"] = tallies["id"].to_json(scene_split)
    out["ood"] = tallies["ood"].to_json(scene_split)
    if scene_split:
        out["fallback"] = {g: {"miscounted": tallies[g].miscounted,
                               "to_training_count": (tallies[g].to_training / tallies[g].miscounted
                                                     if tallies[g].miscounted and counts_train is not None
                                                     else None)} for g in ("id", "ood")}
        out["fallback"]["training_counts"] = None if counts_train is None else sorted(counts_train)
    else:
        held = {tuple(p) for p in ood_spec.get("test_only", {}).get("pairs", ())}
        n_colors = len(onto.values("color")) if onto is not None else 0
        held_colors = {cat: {col for (c, col) in held if c == cat} for cat, _ in wrong_colors}
        seen = sum(col not in held_colors[cat] for cat, col in wrong_colors)
        # a wrong colour drawn uniformly from the other colours (the true one is held out itself)
        uniform = [1 - (len(held_colors[cat]) - 1) / (n_colors - 1) for cat, _ in wrong_colors]
        out["fallback"] = {"wrong_colors": len(wrong_colors),
                           "seen_with_category": seen / len(wrong_colors) if wrong_colors else None,
                           "uniform": float(np.mean(uniform)) if uniform else None,
                           "predicted": dict(sorted(Counter(c for _, c in wrong_colors).items()))}
    return out


__all__ = ["MIN_EXIST", "perception", "training_counts"]
