"""NSCL (Mao et al., 2019): visual concepts learned from question–answer pairs alone, through a
quasi-symbolic executor that runs the question's program on object features with soft masks.

Model (sizes per profile):

* **objects**: ``backbone`` ``lite0`` (the CPU profiles, as the paper's ImageNet ResNet-34): the
  frozen ImageNet EfficientNet-Lite0's maps at ``feature_stride`` (112 channels at stride 16 of the
  320x240 image), computed once per image and cached (:func:`baselines.common.backbone_features`);
  or ``small``: a CNN trained from scratch (stride 4) over the resized image. Each object box
  (ground-truth boxes of the training scenes; at test time the boxes a detector found, see below)
  is pooled by ``torchvision.ops.roi_align`` to a ``roi_size`` x ``roi_size`` grid; the grid and the
  box geometry give the object feature;
* **parts**: one learned query per part name attends over the object's RoI grid; the attended
  cells give the feature of that part of that object (no part boxes are needed, so test images
  parsed by an object detector have parts too);
* **concepts**: per attribute an operator (a linear map of object or part features into a concept
  space of ``concept_dim``) and one embedding per value, shared by objects and parts; the logit of
  "object i is red" is ``(cos(op(f_i), c_red) - γ) / τ`` (NSCL's γ = 0.2, τ = 0.1). Relations
  (left / right / front / behind) come from an MLP over the pair's box geometry and projected
  features; "part k of object i exists" from a linear map of the part feature, masked by the part
  names the object's (soft) shape has.

Quasi-symbolic executor (:class:`SoftExecutor`), over the same program functions as the symbolic
executors, parts included: an object set is a mask in [0, 1]^N; ``filter`` = min(mask, concept
membership), ``union`` = max, ``intersect`` = min, ``exist`` = max, ``count`` = sum of the mask,
``unique`` = softmax over the mask's logits (an attention over objects), ``relate`` and ``same_*``
= the attention times the pairwise relation (sameness) probabilities, ``query_*`` = the attention
times the softmax over the attribute's concepts, ``equal_*`` = the probability that two
distributions agree, ``equal_integer`` / ``less_than`` / ``greater_than`` = a logistic of the count
difference. Part sets are masks over (object, part name); ``object2part`` = the object mask times
the part existence, ``part2object`` = max (set) or sum (one part) over part names. A count answer
is scored by a softmax over 0..10 of ``-(count - k)^2 / (2 σ^2)`` (``count_sigma``). The loss is
the negative log-probability of the answer; the prediction is the most probable answer.

Training uses the ground-truth programs of the training questions (NSCL trains its parser jointly
by REINFORCE; here programs come from annotations, as in NS-VQA's supervised setting) and a
curriculum (``curriculum``): ``"f1:n1:o1,f2:n2:o2"`` trains the first ``f1`` of the steps on
questions of at most ``n1`` program nodes about scenes of at most ``o1`` objects, up to ``f2`` on
``n2`` / ``o2``, then on everything (NSCL's curriculum grows the programs and the scenes the same
way). Each step draws ``images_per_batch`` images and up to ``questions_per_image`` eligible
questions of each, as a function of ``(seed, step)`` only, so a resumed run continues exactly.

Prediction (:meth:`NSCLBaseline.predict`): boxes are ``likelihoods``' detections (a scene
parser's ``likelihoods.json``; those scoring at least ``min_score``), and programs are
``programs``' (a question parser's ``programs.json``); without them the variant's ground-truth
scene boxes and programs are used ("oracle" inputs, for standalone checks).
``scripts/train_variant.py`` gives NSCL the run's own parses, like NS-VQA, and first lets it choose
``min_score`` on the training variant's val split (:meth:`NSCLBaseline.tune`, saved in
``RUN/tuned.json``; never on a test split). A question whose program is invalid, or whose image has
no box, gets the most frequent training answer, flagged ``guessed``.

Differences from the paper: the frozen features are EfficientNet-Lite0's stride-16 map rather than
a fine-tuned ResNet-34's (one scale, no FPN); programs are supervised (ground-truth programs of the
training questions) rather than learnt by REINFORCE; parts are attended inside the object's RoI grid
(NSCL has no parts); relations come from box geometry and projected features rather than NSCL's
RoI-pair features; the CPU profiles are much smaller (feature and concept sizes, steps).
"""
from __future__ import annotations

from baselines.nscl.baseline import NSCLBaseline
from baselines.nscl.config import MIN_SCORE_CANDIDATES, NSCLConfig, parse_curriculum
from baselines.nscl.data import (CurriculumSampler, NSCLImages, NSCLQuestion, NSCLSplit, collate_nscl,
                                 collate_nscl_images, detection_boxes, load_split, parsed_programs, scene_boxes)
from baselines.nscl.executor import SoftExecutor
from baselines.nscl.inference import accuracy, answer_all, concept_accuracy
from baselines.nscl.network import ConceptSpace, NSCLNet
from baselines.nscl.training import question_losses, train_nscl
from nsvqa.models import TUNED, read_tuned

__all__ = ["NSCLConfig", "NSCLNet", "ConceptSpace", "SoftExecutor", "NSCLBaseline", "parse_curriculum",
           "CurriculumSampler", "NSCLSplit", "NSCLImages", "collate_nscl", "collate_nscl_images", "load_split",
           "scene_boxes", "detection_boxes", "parsed_programs", "read_tuned", "MIN_SCORE_CANDIDATES", "question_losses",
           "answer_all", "accuracy", "concept_accuracy", "NSCLQuestion", "train_nscl", "TUNED"]
