"""What the learned baselines share, re-exported from the modules that hold it (import from either):
:mod:`baselines.runs` (the run directory and checkpoint: ``open_run``, ``checkpoint_path``,
``config_from_dict``), :mod:`baselines.images` (image inputs: ``load_images``, ``image_cache``,
``normalise_images``, the frozen backbone's cached features, ``image_inputs``),
:mod:`baselines.qa_encoding` (the answer vocabulary, reading and encoding the questions,
``EncodedQA``, ``collate_qa``), :mod:`baselines.neural_config` (the backbone names a config can
name), :mod:`baselines.networks` (question and image encoders, ``mlp``) and
:mod:`baselines.classifier` (``NeuralBaseline``, the training loop ``train_classifier`` and
``accuracy``).
"""
from __future__ import annotations

from .classifier import NeuralBaseline, accuracy, train_classifier
from .images import (FEATURE_BACKBONES, backbone_features, feature_cache_dir, image_cache, image_inputs, load_images,
                     normalise_images)
from .networks import ImageEncoder, QuestionEncoder, mlp
from .neural_config import BACKBONES, PIXEL_BACKBONES, check_backbone
from .qa_encoding import (EncodedQA, QARecord, answer_vocabulary, collate_qa, encode_questions, pad_words,
                          read_qa)
from .runs import CHECKPOINT, checkpoint_kind, checkpoint_path, config_from_dict, open_run
# public too, outside __all__ as before the split (film and the tests import them from here)
from .images import IMAGE_MEAN, IMAGE_STD  # noqa: F401
from .networks import Lite0Trunk  # noqa: F401

__all__ = ["CHECKPOINT", "checkpoint_kind", "checkpoint_path", "answer_vocabulary", "QARecord", "read_qa",
           "encode_questions", "pad_words", "load_images", "image_cache", "normalise_images", "EncodedQA",
           "collate_qa",
           "BACKBONES", "PIXEL_BACKBONES", "check_backbone",
           "FEATURE_BACKBONES", "backbone_features", "feature_cache_dir", "image_inputs", "config_from_dict", "QuestionEncoder",
           "ImageEncoder", "mlp", "NeuralBaseline", "accuracy", "open_run", "train_classifier"]
