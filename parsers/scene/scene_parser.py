"""Image -> SceneLikelihoods: detections (Mask R-CNN) + attributes of their crops (ResNet head).

Every detection becomes one object of the likelihoods: its score is the existence probability,
the attribute head's softmax outputs are the attribute distributions, its position regression
(mean and variance) is the object's ground-plane position with its uncertainty. The argmax of the
likelihoods is the symbolic scene NS-VQA executes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import nn

from executors import Ontology, SceneLikelihoods, SymbolicScene
from parsers.scene.crops import crop_instance


@dataclass
class ParsedScene:
    """One parsed image.

    Attributes:
        likelihoods: the hand-off to the probabilistic executor (N detections).
        boxes: (N, 4) xyxy; masks: (N, H, W) bool; labels: (N,) detector classes.
    """

    likelihoods: SceneLikelihoods
    boxes: np.ndarray
    masks: np.ndarray
    labels: np.ndarray

    def symbolic(self) -> SymbolicScene:
        """The argmax scene (every detection kept) in the scene schema."""
        return argmax_scene(self.likelihoods)


class SceneParser(nn.Module):
    """Detector + attribute head.

    Args:
        detector: a torchvision Mask R-CNN (see :func:`parsers.scene.detector.build_detector`).
        attribute_head: :class:`parsers.scene.attribute_head.AttributeHead` with the object heads.
        ontology: gives the order of every distribution.
        directions: relation -> (2,) ground-plane direction (the scenes' ``directions`` without z).
        crop_size: side of the attribute head's input crops.
        min_score: detections below this score are dropped (the paper uses 0.7 at the detector).
    """

    def __init__(self, detector: nn.Module, attribute_head: nn.Module, ontology: Ontology,
                 directions: dict[str, Sequence[float]], crop_size: int = 64, min_score: float = 0.5):
        super().__init__()
        self.detector, self.attribute_head = detector, attribute_head
        self.ontology, self.crop_size, self.min_score = ontology, int(crop_size), float(min_score)
        self.directions = {r: np.asarray(v, dtype=float)[:2] for r, v in directions.items()}

    @torch.no_grad()
    def parse(self, images: Sequence[torch.Tensor]) -> list[ParsedScene]:
        """Parse (3, H, W) float images in [0, 1]."""
        self.eval()
        out = []
        for img, det in zip(images, self.detector(list(images))):
            keep = det["scores"] >= self.min_score
            boxes, scores = det["boxes"][keep], det["scores"][keep]
            masks = (det["masks"][keep, 0] >= 0.5) if len(boxes) else torch.zeros((0, *img.shape[1:]), dtype=torch.bool)
            crops = [crop_instance(img, m[None].float(), [float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])],
                                   self.crop_size) for b, m in zip(boxes, masks)]
            heads = self.attribute_head(torch.stack(crops)) if crops else None
            out.append(ParsedScene(self._likelihoods(scores, heads), boxes.numpy(), masks.numpy(),
                                   det["labels"][keep].numpy()))
        return out

    def _likelihoods(self, scores: torch.Tensor, heads: dict | None) -> SceneLikelihoods:
        onto = self.ontology
        n = len(scores)
        attrs = {}
        for a in onto.attributes:
            k = len(onto.values(a))
            if heads is None or a not in heads:
                attrs[a] = np.full((n, k), 1.0 / k)
            else:
                attrs[a] = torch.softmax(heads[a].double(), -1).numpy()
        pos = heads["position"].double().numpy() if heads is not None else np.zeros((n, 2))
        std = (heads["position_logvar"].double().exp().mean(-1).sqrt().numpy() if heads is not None
               else np.zeros(n))
        return SceneLikelihoods(onto, scores.double().numpy(), attrs, pos, std, self.directions, onto.relation_margin)


def argmax_scene(lik: SceneLikelihoods) -> SymbolicScene:
    """The most likely value of every attribute of every detection, as a SymbolicScene with
    ground-plane positions (relations from them with the ontology's margin)."""
    onto = lik.ontology
    objects = [{a: onto.values(a)[int(np.argmax(lik.attributes[a][i]))] for a in onto.attributes}
               for i in range(len(lik))]
    coords = np.concatenate([lik.positions, np.zeros((len(lik), 1))], 1) if len(lik) else None
    dirs = {r: np.r_[v, 0.0] for r, v in lik.directions.items()}
    return SymbolicScene(onto, objects, [{} for _ in objects], coords, dirs, None, None, lik.image_index)

