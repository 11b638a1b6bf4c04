"""The questions and answers as the learned baselines read them: the answer vocabulary
(:func:`answer_vocabulary`), a split's questions (:func:`read_qa`, one :data:`QARecord` each),
questions as word ids (:func:`encode_questions`, :func:`pad_words`), and a split ready for a
network, :class:`EncodedQA` (word ids, answer ids and, for image models, the images and each
question's image row), batched by :func:`collate_qa`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

from executors.io import normalize_answer
from executors.ontology import Ontology
from nsvqa.artifacts.questions import Question, questions_path, read_questions
from parsers.question.vocab import NULL_ID, Vocabulary, tokenize

from .images import normalise_images


def answer_vocabulary(ontology: Ontology, train_answers: Sequence[str] = ()) -> list[str]:
    """Every answer the ontology can give (normalised, in its order: attribute values, part names,
    0..10, yes/no), then the training answers outside it, sorted."""
    out = list(dict.fromkeys(normalize_answer(a) for vals in ontology.answer_vocabulary().values() for a in vals))
    known = set(out)
    return out + sorted({a for a in train_answers if a not in known})


#: One question of a split as the learned baselines read it: the questions artifact's typed item
#: (``index``, ``question`` text, normalised ``answer`` or None, ``image_filename`` or None,
#: ``obj_map`` for mDETR, ...).
QARecord = Question


def read_qa(folder: str | Path, split: str, ontology: Ontology, *, require_answer: bool,
            require_image: bool, limit: int | None = None) -> list[QARecord]:
    """The questions of ``FOLDER/questions/<split>_questions.json`` (the first ``limit``), each
    with a string ``question`` (and a valid program when it has one).

    Raises:
        FormatError: no such file, or a record without a string ``question``, without ``answer``
            (when required) or without a string ``image_filename`` (when required); the message
            names the file, the question and the field.
    """
    return list(read_questions(questions_path(folder, split), ontology, require_text=True,
                               require_answer=require_answer, require_image=require_image, limit=limit))


def encode_questions(questions: Sequence[str], vocab: Vocabulary) -> tuple[list[list[int]], np.ndarray]:
    """(word ids per question, lengths (N,) int64 >= 1); unknown words -> ``<UNK>``."""
    words = [vocab.encode(tokenize(q)) for q in questions]
    return words, np.array([max(1, len(w)) for w in words], dtype=np.int64)


def pad_words(rows: Sequence[Sequence[int] | torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """words (B, L) int64 padded with ``<NULL>`` (an empty question becomes one ``<NULL>``),
    lengths (B,) int64; a row is a list of word ids or an int64 tensor of them."""
    lengths = torch.tensor([max(1, len(r)) for r in rows], dtype=torch.long)
    out = torch.full((len(rows), int(lengths.max()) if len(rows) else 1), NULL_ID, dtype=torch.long)
    for i, r in enumerate(rows):
        if len(r):
            out[i, :len(r)] = torch.as_tensor(r, dtype=torch.long)
    return out, lengths


@dataclass
class EncodedQA(Dataset):
    """A split ready for a network: a Dataset of questions (collated by :func:`collate_qa`).

    Attributes:
        words: word ids per question; ``lengths`` (N,) int64.
        answers: (N,) int64 answer ids; -1 where the answer is unknown or outside the vocabulary.
        image_rows: (N,) int64 row of each question's image in ``images``, or None.
        images: (M, 3, H, W) uint8, or None for question-only models.

    Item ``i``: ``{"words": (L_i,) int64, "answer": () int64}`` and, with images,
    ``"image": (3, H, W) uint8``.
    """

    words: list[list[int]]
    lengths: np.ndarray
    answers: torch.Tensor
    image_rows: torch.Tensor | None = None
    images: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.words)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        item = {"words": torch.tensor(self.words[i], dtype=torch.long), "answer": self.answers[i]}
        if self.images is not None:
            item["image"] = self.images[self.image_rows[i]]
        return item

    @staticmethod
    def build(records: Sequence[QARecord], vocab: Vocabulary, answers: Sequence[str], images=None) -> "EncodedQA":
        """``images``: None, or (uint8 tensor, file name -> row) from :func:`load_images`."""
        words, lengths = encode_questions([r.question for r in records], vocab)
        index = {a: i for i, a in enumerate(answers)}
        ans = torch.tensor([index.get(r.answer, -1) if r.answer is not None else -1 for r in records],
                           dtype=torch.long)
        if images is None:
            return EncodedQA(words, lengths, ans)
        tensor, rows = images
        return EncodedQA(words, lengths, ans, torch.tensor([rows[r.image_filename] for r in records],
                                                           dtype=torch.long), tensor)


def collate_qa(items: Sequence[dict[str, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None,
                                                                   torch.Tensor]:
    """Items of :class:`EncodedQA` -> words (B, L) int64 (``<NULL>``-padded), lengths (B,) int64,
    images (B, 3, H, W) float normalised (:func:`normalise_images`; cached backbone maps, float16,
    come as float32) or None, answers (B,) int64."""
    words, lengths = pad_words([it["words"] for it in items])
    images = None
    if items and "image" in items[0]:
        images = torch.stack([it["image"] for it in items])
        images = normalise_images(images) if images.dtype == torch.uint8 else images.float()
    return words, lengths, images, torch.stack([it["answer"] for it in items])


__all__ = ["answer_vocabulary", "QARecord", "read_qa", "encode_questions", "pad_words", "EncodedQA", "collate_qa"]
