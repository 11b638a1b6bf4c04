"""The official release's layout: file names, its splits, where its files are (:class:`OfficialRelease`), and
:class:`OfficialFormatError`."""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from executors.errors import FormatError

from nsvqa.generation.dataset import PROFILES, SPLITS


IMPORTER_VERSION = "1.0.0"
#: ``generator`` of the manifest of an imported folder.
IMPORT_GENERATOR = "superclevr-import"
#: The release's splits: image_index ranges, both ends included (20k train, 5k val, 5k test).
OFFICIAL_SPLITS: Mapping[str, tuple[int, int]] = {"train": (0, 19_999), "val": (20_000, 24_999),
                                                   "test": (25_000, 29_999)}
SCENES_FILE = "superCLEVR_scenes.json"
#: The release's questions file (10 per image, CLEVR 1.0 templates).
QUESTIONS_FILE = "superCLEVR_questions_30k.json"
#: The questions file :func:`export_release` writes.
EXPORT_QUESTIONS_FILE = "superCLEVR_questions.json"
#: Key of the exported scenes file's ``info``: ``{split: [first image_index, last]}``.
SPLITS_KEY = "nsvqa_splits"
#: What :func:`import_release` does with a part name the object's shape does not have.
UNKNOWN_PARTS = ("error", "skip")
#: Fields of an object record that only this project's scenes carry (dropped on export).
_MASK_FIELDS = ("bbox", "mask", "part_masks")


class OfficialFormatError(FormatError):
    """A malformed official release (or variant folder to export); the message names the file, the
    scene (``image_index``), the object and the field."""


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr)


def parse_split_ranges(specs: Iterable[str]) -> dict[str, tuple[int, int]]:
    """``["test=0-9", "train=10-99"]`` -> ``{"test": (0, 9), "train": (10, 99)}`` (both ends
    included; ``"val=5"`` is one image).

    Args:
        specs (iterable of str): ``SPLIT=FIRST-LAST`` items, SPLIT one of train, val, test.

    Raises:
        ValueError: a malformed item, an unknown split name, a range whose end precedes its start,
            a split given twice, or overlapping ranges.
    """
    out: dict[str, tuple[int, int]] = {}
    for s in specs:
        name, sep, rng = str(s).partition("=")
        name = name.strip()
        if not sep or name not in SPLITS:
            raise ValueError(f"split range {s!r}: expected SPLIT=FIRST-LAST with SPLIT one of {list(SPLITS)}")
        lo, dash, hi = rng.strip().partition("-")
        try:
            a, b = int(lo), int(hi if dash else lo)
        except ValueError:
            raise ValueError(f"split range {s!r}: FIRST and LAST must be integers") from None
        if a < 0 or b < a:
            raise ValueError(f"split range {s!r}: expected 0 <= FIRST <= LAST")
        if name in out:
            raise ValueError(f"split {name!r} given twice")
        out[name] = (a, b)
    check_split_ranges(out)
    return out


def check_split_ranges(ranges: Mapping[str, Sequence[int]]) -> None:
    """Raise ``ValueError`` when two splits' image_index ranges overlap or a name is not a split.

    Args:
        ranges (dict[str, (int, int)]): split name -> (first, last) image_index, both included.
    """
    items = sorted(((int(r[0]), int(r[1]), n) for n, r in ranges.items()))
    for n in ranges:
        if n not in SPLITS:
            raise ValueError(f"split {n!r}: expected one of {list(SPLITS)}")
    for (a0, b0, n0), (a1, b1, n1) in zip(items, items[1:]):
        if a1 <= b0:
            raise ValueError(f"split ranges overlap: {n0} {a0}-{b0} and {n1} {a1}-{b1}")


def add_release_args(parser: argparse.ArgumentParser) -> None:
    """The command-line options of an import: the release's files where they are not under its
    folder (``--scenes``, ``--questions``, ``--images``: :meth:`OfficialRelease.find`'s arguments)
    and the size the images are resized to (``--width``, ``--height``: the ``mini`` profile's)."""
    parser.add_argument("--scenes", type=Path, help="the scenes file (default: RELEASE/superCLEVR_scenes.json)")
    parser.add_argument("--questions", type=Path, nargs="+",
                        help="question files, read in this order (default: RELEASE/superCLEVR_questions_30k.json, "
                             "else the one RELEASE/superCLEVR_questions*.json)")
    parser.add_argument("--images", type=Path, help="the image folder (default: RELEASE/images)")
    for name in ("width", "height"):
        default = getattr(PROFILES["mini"], name)
        parser.add_argument(f"--{name}", type=int, default=default,
                            help=f"{name} the images are resized to (default: mini's {default})")


# ---------------------------------------------------------------------- the release's files
@dataclass(frozen=True)
class OfficialRelease:
    """Where an official release's files are.

    Attributes:
        scenes (Path): the scenes file (``superCLEVR_scenes.json``).
        questions (tuple[Path, ...]): question files, read in this order (may be empty).
        images (Path): the folder the scenes' ``image_filename`` are relative to.
    """

    scenes: Path
    questions: tuple[Path, ...] = ()
    images: Path = Path("images")

    @classmethod
    def find(cls, root: str | os.PathLike, scenes: str | os.PathLike | None = None,
             questions: Sequence[str | os.PathLike] | None = None,
             images: str | os.PathLike | None = None) -> "OfficialRelease":
        """The release under ``root``: ``root/superCLEVR_scenes.json``, ``root/images`` and the
        questions file ``superCLEVR_questions_30k.json`` (else the one ``superCLEVR_questions*.json``
        there; none: no questions). Explicit paths win.

        Raises:
            OfficialFormatError: no scenes file or image folder, or several candidate question files.
        """
        root = Path(root)
        sp = Path(scenes) if scenes is not None else root / SCENES_FILE
        ip = Path(images) if images is not None else root / "images"
        if questions is not None:
            qs = tuple(Path(q) for q in questions)
        elif (root / QUESTIONS_FILE).is_file():
            qs = (root / QUESTIONS_FILE,)
        else:
            found = sorted(root.glob("superCLEVR_questions*.json"))
            if len(found) > 1:
                raise OfficialFormatError(f"{root}: several question files ({', '.join(p.name for p in found)}); "
                                          "name the ones to import (--questions)")
            qs = tuple(found)
        if not sp.is_file():
            raise OfficialFormatError(f"{sp}: no scenes file")
        if not ip.is_dir():
            raise OfficialFormatError(f"{ip}: no image folder")
        for q in qs:
            if not q.is_file():
                raise OfficialFormatError(f"{q}: no questions file")
        return cls(sp, qs, ip)
