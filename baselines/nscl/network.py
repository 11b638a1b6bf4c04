"""NSCL's network: RoI object and pair features projected into a concept space (:class:`NSCLNet`)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch
from torch import nn
from torch.nn import functional as F
from torchvision.ops import roi_align

from executors.ontology import Ontology

from baselines.nscl.config import CNN_STRIDE, NSCLConfig
from parsers.backbones import TAP_CHANNELS


# ---------------------------------------------------------------------------- network
class ConceptSpace(nn.Module):
    """Per attribute: operators for objects and for parts into a ``dim`` concept space, and one
    embedding per value (shared by objects and parts).

    ``logits(attribute, x (..., in_dim), part) -> (..., V)`` = (cos(op(x), c_v) - γ) / τ.
    """

    def __init__(self, in_dim: int, dim: int, sizes: Mapping[str, int], part_attributes: Sequence[str],
                 gamma: float = 0.2, tau: float = 0.1):
        super().__init__()
        self.gamma, self.tau = gamma, tau
        self.obj_op = nn.ModuleDict({a: nn.Linear(in_dim, dim) for a in sizes})
        self.part_op = nn.ModuleDict({a: nn.Linear(in_dim, dim) for a in part_attributes})
        self.embedding = nn.ParameterDict({a: nn.Parameter(torch.randn(v, dim)) for a, v in sizes.items()})

    def logits(self, attribute: str, x: torch.Tensor, part: bool = False) -> torch.Tensor:
        op = (self.part_op if part else self.obj_op)[attribute]
        u = F.normalize(op(x), dim=-1)
        c = F.normalize(self.embedding[attribute], dim=-1)
        return (u @ c.T - self.gamma) / self.tau


class NSCLNet(nn.Module):
    """Object and part features, concepts and relations of the boxes of a batch of images.

    ``forward(images (B, 3, H, W) float, or the cached backbone maps (B, C, h, w), boxes: B tensors
    (n_b, 4) xyxy in pixels of the ``image_size`` (width, height) image) -> one dict per image`` of
    logits: ``attributes[a]`` (n, V_a), ``relations`` (n, n, R), ``part_exist`` (n, P),
    ``part_attributes[a]`` (n, P, V_a).
    """

    def __init__(self, onto: Ontology, *, cnn_width: int, roi_size: int, feature_dim: int, concept_dim: int,
                 image_size: tuple[int, int], backbone: str, feature_stride: int):
        super().__init__()
        self.image_size = tuple(image_size)
        self.attributes = tuple(onto.attribute_names)
        self.part_attributes = tuple(a for a in onto.part_attributes if a in onto.attributes) if onto.has_parts else ()
        self.num_parts = len(onto.part_names) if onto.has_parts else 0
        self.roi_size = roi_size
        if backbone == "lite0":  # the input is already the frozen backbone's map
            self.cnn, c_in, self.stride = nn.Identity(), TAP_CHANNELS[feature_stride], feature_stride
        else:
            w = cnn_width
            layers: list[nn.Module] = []
            c_in = 3
            for k, c in enumerate([w, 2 * w, 4 * w, 4 * w]):
                layers += [nn.Conv2d(c_in, c, 3, stride=2 if k < 2 else 1, padding=1, bias=False), nn.BatchNorm2d(c),
                           nn.ReLU(inplace=True)]
                c_in = c
            self.cnn, self.stride = nn.Sequential(*layers), CNN_STRIDE
        self.cell = nn.Linear(c_in, feature_dim)
        self.obj = nn.Sequential(nn.Linear(c_in * roi_size * roi_size + 6, 2 * feature_dim), nn.ReLU(inplace=True),
                                 nn.Linear(2 * feature_dim, feature_dim))
        # one concept per value a scene can hold (no embedding for Super-CLEVR's unplaced addi)
        self.concepts = ConceptSpace(feature_dim, concept_dim, {a: len(onto.scene_values(a)) for a in self.attributes},
                                     self.part_attributes)
        n_rel = len(onto.relations)
        self.rel_feat = nn.Linear(feature_dim, 16)
        self.rel = nn.Sequential(nn.Linear(3 * 6 + 2 * 16, 64), nn.ReLU(inplace=True), nn.Linear(64, n_rel))
        if self.num_parts:
            self.part_query = nn.Parameter(torch.randn(self.num_parts, feature_dim) / feature_dim ** 0.5)
            self.part_feat = nn.Sequential(nn.Linear(feature_dim, feature_dim), nn.ReLU(inplace=True))
            self.part_exist = nn.Linear(feature_dim, 1)

    @staticmethod
    def geometry(boxes: torch.Tensor, width: int, height: int) -> torch.Tensor:
        """(n, 4) xyxy pixels -> (n, 6): x1, y1, x2, y2, centre x, centre y, each in [0, 1]."""
        scale = boxes.new_tensor([width, height, width, height])
        b = boxes / scale
        return torch.cat([b, (b[:, :2] + b[:, 2:]) / 2], dim=1)

    def forward(self, images: torch.Tensor, boxes: Sequence[torch.Tensor]) -> list[dict[str, Any]]:
        fmap = self.cnn(images)
        w, h = self.image_size
        sizes = [len(b) for b in boxes]
        if sum(sizes) == 0:
            return [self._empty(images) for _ in boxes]
        r = self.roi_size
        rois = roi_align(fmap, [b.to(fmap.dtype) for b in boxes], output_size=(r, r), spatial_scale=1.0 / self.stride,
                         sampling_ratio=2, aligned=True)  # (n, C, r, r)
        geo = torch.cat([self.geometry(b, w, h) for b in boxes if len(b)])
        feats = self.obj(torch.cat([rois.flatten(1), geo], dim=1))
        cells = self.cell(rois.flatten(2).transpose(1, 2))  # (n, r*r, D)
        out, start = [], 0
        for n in sizes:
            if n == 0:
                out.append(self._empty(images))
                continue
            sl = slice(start, start + n)
            start += n
            out.append(self._scene(feats[sl], cells[sl], geo[sl]))
        return out

    def _empty(self, images: torch.Tensor) -> dict[str, Any]:
        z = images.new_zeros
        return {"n": 0, "attributes": {a: z((0, self.concepts.embedding[a].shape[0])) for a in self.attributes}}

    def _scene(self, f: torch.Tensor, cells: torch.Tensor, geo: torch.Tensor) -> dict[str, Any]:
        n = f.shape[0]
        scene: dict[str, Any] = {"n": n, "attributes": {a: self.concepts.logits(a, f) for a in self.attributes}}
        g = self.rel_feat(f)
        gi, gj = geo[:, None, :].expand(n, n, 6), geo[None, :, :].expand(n, n, 6)
        pair = torch.cat([gi, gj, gi - gj, g[:, None, :].expand(n, n, 16), g[None, :, :].expand(n, n, 16)], dim=-1)
        scene["relations"] = self.rel(pair)  # (n, n, R)
        if self.num_parts:
            att = torch.softmax(torch.einsum("ncd,pd->npc", cells, self.part_query) / cells.shape[-1] ** 0.5, dim=-1)
            pf = self.part_feat(torch.einsum("npc,ncd->npd", att, cells) + self.part_query)  # (n, P, D)
            scene["part_exist"] = self.part_exist(pf).squeeze(-1)
            scene["part_attributes"] = {a: self.concepts.logits(a, pf, part=True) for a in self.part_attributes}
        return scene


def build_net(cfg: NSCLConfig, onto: Ontology) -> NSCLNet:
    """The network ``cfg`` describes, over ``onto``'s concepts (untrained)."""
    return NSCLNet(onto, cnn_width=cfg.cnn_width, roi_size=cfg.roi_size, feature_dim=cfg.feature_dim,
                   concept_dim=cfg.concept_dim, image_size=(cfg.image_width, cfg.image_height),
                   backbone=cfg.backbone, feature_stride=cfg.feature_stride)
