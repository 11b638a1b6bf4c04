"""Tokenizer and vocabularies of the question parser (pure Python, no torch).

Questions are lower-cased and split into words and punctuation marks; programs are their prefix
token form (``count filter_color[red] scene``, :meth:`executors.Program.to_prefix`). Both
vocabularies start with the same four special tokens, at fixed indices, and are saved in the
checkpoint as plain dicts (:meth:`Vocabulary.to_dict`). A question is at most
:data:`MAX_QUESTION_TOKENS` tokens (:func:`check_question_length`: the questions reader and
:meth:`QuestionParser.parse` refuse longer ones).
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from executors.errors import FormatError

NULL, START, END, UNK = "<NULL>", "<START>", "<END>", "<UNK>"
SPECIALS = (NULL, START, END, UNK)
NULL_ID, START_ID, END_ID, UNK_ID = range(4)

_WORD = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")


def tokenize(text: str) -> list[str]:
    """Words (lower-cased letters and digits) and single punctuation marks, in order.

    >>> tokenize("Is the big bus's colour RED?")
    ['is', 'the', 'big', 'bus', "'", 's', 'colour', 'red', '?']
    """
    return _WORD.findall(text.lower())


#: The longest question read, in :func:`tokenize` tokens. Generated questions have at most 40
#: (17 typical, 37 at the 99.9th percentile), CLEVR's about 45: five times that is room for any
#: real question and bounds the parsers' and baselines' work (an LSTM step per token).
MAX_QUESTION_TOKENS = 200


def check_question_length(text: str, where: str) -> None:
    """Refuse a question longer than :data:`MAX_QUESTION_TOKENS` tokens (tokenized only when it
    has more characters than that: a shorter text cannot have more tokens).

    Raises:
        FormatError: naming ``where`` (file and question), the field and both lengths.
    """
    if len(text) > MAX_QUESTION_TOKENS:
        n = len(tokenize(text))
        if n > MAX_QUESTION_TOKENS:
            raise FormatError(f"{where}, field 'question': {n} words and marks ({len(text)} characters), over the "
                              f"cap of {MAX_QUESTION_TOKENS} (parsers.question.vocab.MAX_QUESTION_TOKENS)")


class Vocabulary:
    """A bijection token <-> index whose first four entries are ``<NULL> <START> <END> <UNK>``.

    Args:
        tokens: the non-special tokens, in index order (duplicates and specials are not allowed).
    """

    def __init__(self, tokens: Iterable[str] = ()):
        self.itos: list[str] = list(SPECIALS)
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(SPECIALS)}
        for t in tokens:
            if not isinstance(t, str) or not t:
                raise ValueError(f"vocabulary token must be a non-empty string, got {t!r}")
            if t in self.stoi:
                raise ValueError(f"duplicate vocabulary token {t!r}")
            self.stoi[t] = len(self.itos)
            self.itos.append(t)

    @classmethod
    def build(cls, sequences: Iterable[Sequence[str]], min_count: int = 1) -> "Vocabulary":
        """Every token seen at least ``min_count`` times, most frequent first (ties by name)."""
        counts = Counter(t for seq in sequences for t in seq)
        kept = [t for t, c in counts.items() if c >= min_count and t not in SPECIALS]
        return cls(sorted(kept, key=lambda t: (-counts[t], t)))

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.itos == other.itos

    def index(self, token: str) -> int:
        """Index of ``token``; ``<UNK>``'s index for a token outside the vocabulary."""
        return self.stoi.get(token, UNK_ID)

    def encode(self, tokens: Sequence[str], add_start_end: bool = False) -> list[int]:
        """Indices of ``tokens`` (unknown ones -> ``<UNK>``), optionally wrapped in START ... END."""
        ids = [self.stoi.get(t, UNK_ID) for t in tokens]
        return [START_ID, *ids, END_ID] if add_start_end else ids

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens of ``ids`` (IndexError naming the index if one is out of range)."""
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.itos):
                raise IndexError(f"token index {i} outside the vocabulary of {len(self.itos)} tokens")
            out.append(self.itos[i])
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain form for a checkpoint: ``{"tokens": [...]}`` (the specials included)."""
        return {"tokens": list(self.itos)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "vocabulary") -> "Vocabulary":
        """Inverse of :meth:`to_dict`; ValueError naming ``where`` if the specials are not first."""
        toks = d.get("tokens") if isinstance(d, Mapping) else None
        if not isinstance(toks, list) or list(toks[:len(SPECIALS)]) != list(SPECIALS):
            raise ValueError(f"{where}: field 'tokens' must be a list starting with {list(SPECIALS)}")
        return cls(toks[len(SPECIALS):])


def build_vocabularies(questions: Iterable[str], programs: Iterable[Sequence[str]],
                       min_word_count: int = 1) -> tuple[Vocabulary, Vocabulary]:
    """(question vocabulary, program vocabulary) of training questions and prefix programs."""
    return (Vocabulary.build((tokenize(q) for q in questions), min_word_count),
            Vocabulary.build(programs))


__all__ = ["NULL", "START", "END", "UNK", "SPECIALS", "NULL_ID", "START_ID", "END_ID", "UNK_ID",
           "MAX_QUESTION_TOKENS", "check_question_length", "tokenize", "Vocabulary", "build_vocabularies"]
