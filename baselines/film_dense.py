"""FiLM that sees (``film-dense``): the FiLM network of :mod:`baselines.film` (Perez et al., 2018),
unchanged, given what the paper's recipe assumes and the committed ``film`` row lacks at this scale:

* more questions per training image: ``extra_questions_per_image`` further object questions of
  each training scene, asked by the question engine without rendering (:mod:`baselines.more_questions`;
  the CLEVR recipe had ~70 questions per image, our data has 10 object questions);
* denser frozen features: the ImageNet EfficientNet-Lite0's stride-8 maps (40 channels, 40 x 30 of
  the 320 x 240 image) rather than stride 16 (20 x 15), so that small objects cover whole cells;
* the same steps on half the batch in ``mini`` (the stride-8 maps cost four times the cells), the
  paper's sizes and schedule in ``full``.

Everything else (the GRU, γ = 1 + Δγ, the coordinate maps, the residual blocks, the max-pooled
classifier, Adam with weight decay 1e-5) is :class:`baselines.film.FiLMNet`'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .film import FiLMBaseline, FiLMConfig
from .more_questions import MoreQuestions


@dataclass(frozen=True)
class FiLMDenseConfig(FiLMConfig):
    """film-dense's config: a :class:`baselines.film.FiLMConfig` plus ``extra_questions_per_image``
    (0: the train file's questions only). The defaults are the ``mini`` profile: film's, on stride-8 frozen maps (4x the
    cells of film's stride 16), 30 more object questions per training image (40 in all), 6,000 steps
    of 32 questions: ~22 min on 2 threads by arithmetic from film's measured mini (19 min at 1
    thread), not yet measured on mid. :attr:`PROFILES` holds the fields the other profiles change."""

    model: str = "film-dense"
    batch: int = 32
    warmup: int = 200
    feature_stride: int = 8
    extra_questions_per_image: int = 30

    MUST_MATCH: ClassVar[tuple[str, ...]] = FiLMConfig.MUST_MATCH + ("extra_questions_per_image",)
    PROFILES: ClassVar = {
        "tiny": dict(FiLMConfig.PROFILES["tiny"], steps=60, feature_stride=16, extra_questions_per_image=5),
        "demo": dict(steps=1500, eval_every=500, val_questions=500, extra_questions_per_image=10),
        "mini": {},
        # the paper's network (film's full) on stride-8 maps, 100 more questions per image
        "full": dict(FiLMConfig.PROFILES["full"], extra_questions_per_image=100),
    }

    def check(self) -> None:
        super().check()
        if self.extra_questions_per_image < 0:
            raise ValueError(f"extra_questions_per_image must be >= 0, got {self.extra_questions_per_image}")


class FiLMDenseBaseline(MoreQuestions, FiLMBaseline):
    """FiLM (:class:`baselines.film.FiLMNet`) on denser features, more questions and a longer schedule."""

    config_class = FiLMDenseConfig
    family = "holistic"


__all__ = ["FiLMDenseConfig", "FiLMDenseBaseline"]
