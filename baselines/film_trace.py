"""FiLM grounded by the training programs' traces (``film-trace``): ``film-dense`` (the FiLM network
of :mod:`baselines.film` on stride-8 frozen maps, with more questions per training image) plus an
auxiliary grounding loss, as ``objmac-trace`` adds one to objmac.

Network: :class:`baselines.film.FiLMNet` unchanged, and a 1x1 convolution (``module_dim`` -> 1) on
the output of each traced FiLMed block (``trace_blocks``: ``"all"`` blocks or the ``"last"`` one)
giving one logit per feature-map cell: "this cell lies on an object the program's step reads".

Targets (:func:`baselines.trace_targets.cell_targets`): the training question's ground-truth
program is run on its image's ground-truth scene; its object-valued steps are spread over the
traced blocks as over objmac's hops (the last block reads the last set); a cell is an object's
where the object's ground-truth mask covers at least half of it or covers it most
(:func:`baselines.trace_targets.object_cells`). They are built once, before the first step, for
every training question (kept factored: sets per question, cells per image). Loss: the answers'
cross entropy plus ``trace_weight`` times the per-cell binary cross entropy averaged over the
supervised (question, block) pairs (:func:`baselines.trace_targets.cell_loss`); with
``trace_weight`` 0 it is film-dense's loss. At prediction only the answer path runs: no program,
no scene, no mask.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from executors.ontology import load_ontology

from .film import FiLMConfig, FiLMNet, build_cnn
from .film_dense import FiLMDenseBaseline, FiLMDenseConfig
from .trace_targets import cell_loss, cell_targets

#: which FiLMed blocks the grounding loss reads
TRACE_BLOCKS = ("all", "last")


@dataclass(frozen=True)
class FiLMTraceConfig(FiLMConfig):
    """film-trace's config: a :class:`baselines.film.FiLMConfig` with film-dense's values (stride-8
    maps, batches of 32, ``extra_questions_per_image``: :class:`baselines.film_dense.FiLMDenseConfig`;
    the defaults are the ``mini`` profile, the :attr:`PROFILES` film-dense's) plus ``trace_weight``
    (the weight of the grounding loss, >= 0; 0: film-dense's loss) and ``trace_blocks`` (``"all"``:
    one cell head per FiLMed block, the program's object steps spread over them; ``"last"``: the
    last block only, which reads the last step's set)."""

    model: str = "film-trace"
    warmup: int = 200
    batch: int = 32
    feature_stride: int = 8
    extra_questions_per_image: int = 30
    trace_weight: float = 1.0
    trace_blocks: str = "all"

    MUST_MATCH: ClassVar[tuple[str, ...]] = FiLMDenseConfig.MUST_MATCH + ("trace_weight", "trace_blocks")
    PROFILES: ClassVar = FiLMDenseConfig.PROFILES

    def check(self) -> None:
        super().check()
        if self.extra_questions_per_image < 0:
            raise ValueError(f"extra_questions_per_image must be >= 0, got {self.extra_questions_per_image}")
        if not self.trace_weight >= 0:
            raise ValueError(f"trace_weight must be >= 0, got {self.trace_weight}")
        if self.trace_blocks not in TRACE_BLOCKS:
            raise ValueError(f"trace_blocks {self.trace_blocks!r}: valid: {', '.join(TRACE_BLOCKS)}")

    @property
    def traced_blocks(self) -> int:
        """How many of the last FiLMed blocks have a cell head."""
        return self.num_blocks if self.trace_blocks == "all" else 1


class FiLMTraceNet(nn.Module):
    """A :class:`FiLMNet` and one 1x1 conv cell head on each of its last ``traced_blocks`` blocks.

    ``forward(words (B, L) int64, lengths (B,) int64, images (B, 3, H, W) float, cells=False)
    -> logits (B, num_answers)``, the FiLM network's; with ``cells`` also the cell logits
    (B, traced_blocks, h, w) of the traced blocks in order.
    """

    def __init__(self, film: FiLMNet, traced_blocks: int):
        super().__init__()
        if not 1 <= traced_blocks <= film.num_blocks:
            raise ValueError(f"traced_blocks must be in [1, {film.num_blocks}], got {traced_blocks}")
        self.film = film
        self.cell_heads = nn.ModuleList(nn.Conv2d(film.module_dim, 1, 1) for _ in range(traced_blocks))

    def forward(self, words: torch.Tensor, lengths: torch.Tensor, images: torch.Tensor | None = None,
                cells: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        if images is None:
            raise ValueError("film-trace needs images (B, 3, H, W)")
        maps = self.film.block_maps(images, *self.film.film_params(words, lengths))
        logits = self.film.classify(maps[-1])
        if not cells:
            return logits
        traced = maps[len(maps) - len(self.cell_heads):]
        return logits, torch.cat([head(m) for head, m in zip(self.cell_heads, traced)], 1)


def feature_grid(cfg: FiLMTraceConfig, images: torch.Tensor) -> tuple[int, int]:
    """(h, w) of the FiLMed blocks' maps for the config's image inputs ``images`` (a row per
    image): the cached maps' own size for the frozen ``lite0``, else the CNN's output size on an
    ``image_height`` x ``image_width`` image (one forward pass of a fresh CNN)."""
    if cfg.backbone == "lite0":
        return int(images.shape[-2]), int(images.shape[-1])
    cnn, _ = build_cnn(cfg.backbone, cfg.cnn_width, cfg.cnn_layers, cfg.feature_stride)
    with torch.no_grad():
        out = cnn.eval()(torch.zeros(1, 3, cfg.image_height, cfg.image_width))
    return int(out.shape[-2]), int(out.shape[-1])


class FiLMTraceBaseline(FiLMDenseBaseline):
    """film-dense whose FiLMed blocks learn, beside the answers, to mark the cells of the objects the
    training question's ground-truth program reads step by step (a training signal only)."""

    config_class = FiLMTraceConfig
    family = "holistic"

    def build_model(self, cfg: FiLMTraceConfig, num_words: int, num_answers: int) -> FiLMTraceNet:
        return FiLMTraceNet(super().build_model(cfg, num_words, num_answers), cfg.traced_blocks)

    def training_loss(self, cfg: FiLMTraceConfig, folder: Path, records, data, run):
        """The answers' cross entropy, plus ``cfg.trace_weight`` times :func:`cell_loss` of the
        cell heads against :func:`cell_targets` of the training questions when the weight is not 0."""
        if not cfg.trace_weight:
            return super().training_loss(cfg, folder, records, data, run)
        grid = feature_grid(cfg, data.images)
        members, supervised, cells = cell_targets(records, data.image_rows.numpy(), len(data.images), folder, "train",
                                                  load_ontology(cfg.ontology), cfg.traced_blocks, grid)
        used = cells[data.image_rows.unique()]
        run.log(f"trace targets: {int(supervised.any(1).sum())} of {len(records)} questions, "
                f"{float(supervised.float().mean()):.3f} of their block targets supervised; "
                f"{grid[0]}x{grid[1]} cells, {float(used.any(1).float().mean()):.3f} of them on an object")
        rows, weight = data.image_rows, cfg.trace_weight

        def answer_and_trace(model: FiLMTraceNet, batch: Any):
            words, lengths, imgs, ans = batch.data
            idx = torch.as_tensor(batch.indices, dtype=torch.long)
            logits, cell_logits = model(words, lengths, imgs, cells=True)
            answer = F.cross_entropy(logits, ans)
            dev = cell_logits.device
            trace = cell_loss(cell_logits, members[idx].to(dev), cells[rows[idx]].to(dev), supervised[idx].to(dev))
            loss = answer + weight * trace
            return loss, {"loss": loss, "answer_loss": answer, "trace_loss": trace}

        return answer_and_trace


__all__ = ["FiLMTraceConfig", "FiLMTraceNet", "FiLMTraceBaseline", "TRACE_BLOCKS", "feature_grid"]
