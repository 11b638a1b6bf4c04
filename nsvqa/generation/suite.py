"""A suite: every variant of a domain-shift factor, with the split sizes of a profile.

Variants of one factor share the seed, so their layouts line up (easy/mid/hard show the same
scenes). Resumable like one split: calling again renders only what is missing.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from nsvqa.generation.dataset import PROFILES, check_no_shrink, check_same_settings, generate_split, job_for
from nsvqa.generation.variants import FACTORS, load_variant


@dataclass(frozen=True)
class SuiteProfile:
    """Images per split (train, val, test) of a profile; the image size is the profile's."""

    train: int
    val: int
    test: int


SUITE_PROFILES = {"tiny": SuiteProfile(6, 3, 3), "demo": SuiteProfile(300, 40, 60), "mini": SuiteProfile(600, 150, 150),
                  "full": SuiteProfile(20000, 5000, 5000)}  # full: the paper's split sizes


def variants_of(factor: str) -> list[str]:
    """The variants of a factor (``all``: of every factor, each once)."""
    if factor == "all":
        return list(dict.fromkeys(v for vs in FACTORS.values() for v in vs))
    if factor not in FACTORS:
        raise KeyError(f"unknown factor {factor!r}; valid: {sorted(FACTORS)} or 'all'")
    return list(FACTORS[factor])


def generate_suite(out: str | Path, factor: str = "all", profile: str = "mini", *, seed: int = 0, workers: int = 1,
                   progress: bool = True, variants: list[str] | None = None,
                   splits: Mapping[str, Sequence[str]] | None = None, questions: str = "object+part",
                   sizes: SuiteProfile | None = None,
                   echo: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> dict[str, dict]:
    """Generate (or complete) every split of the factor's variants under ``out``; returns
    ``{"<variant>/<split>": generate_split's result}``. ``splits`` (variant -> splits) limits
    what is generated, e.g. only the test split of variants no model is trained on. ``questions``:
    the question set (:data:`nsvqa.generation.dataset.QUESTION_SETS`); ``sizes``: split sizes
    instead of the profile's (the image size stays the profile's).

    Raises:
        nsvqa.generation.dataset.SplitWouldShrink, SplitSettingsDiffer: an existing split that the
            suite would replace (smaller, or of other settings), before any image is rendered.
    """
    sizes, img = sizes or SUITE_PROFILES[profile], PROFILES[profile]
    jobs = [job_for(out, name, split, getattr(sizes, split), seed, img.width, img.height, questions)
            for name in variants or variants_of(factor) for split in load_variant(name).available_splits
            if splits is None or split in splits.get(name, ())]
    for job in jobs:  # every split's settings before the first image: nothing rendered for a refused suite
        check_no_shrink(job)
        check_same_settings(job)
    done = {}
    for job in jobs:
        res = generate_split(job, workers=workers, progress=progress)
        echo(f"{job.variant}/{job.split}: rendered {res['rendered']}, already done {res['skipped']}")
        done[f"{job.variant}/{job.split}"] = res
    return done
