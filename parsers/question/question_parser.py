"""Question strings -> :class:`ParsedProgram` with a trained :class:`Seq2Seq` and its vocabularies."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch

from executors.ontology import Ontology, load_ontology

from .decode import ParsedProgram, ids_to_program
from .seq2seq import Seq2Seq, pad_sequences
from .vocab import Vocabulary, check_question_length, tokenize


class QuestionParser:
    """A question parser ready to use (eval mode).

    Args:
        model: the trained network.
        question_vocab, program_vocab: the vocabularies it was trained with.
        ontology: what decoded programs are validated against.
        device: where the model runs.
    """

    def __init__(self, model: Seq2Seq, question_vocab: Vocabulary, program_vocab: Vocabulary,
                 ontology: Ontology, device: str | torch.device = "cpu"):
        if model.num_words != len(question_vocab) or model.num_tokens != len(program_vocab):
            raise ValueError(f"model sizes ({model.num_words} words, {model.num_tokens} tokens) do not match the "
                             f"vocabularies ({len(question_vocab)}, {len(program_vocab)})")
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.question_vocab, self.program_vocab, self.ontology = question_vocab, program_vocab, ontology

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any], where: str = "checkpoint",
                     device: str | torch.device = "cpu") -> "QuestionParser":
        """From a loaded checkpoint dict ({config, state_dict, vocabularies}); errors name ``where``."""
        voc = payload["vocabularies"]
        for key in ("question", "program"):
            if key not in voc:
                raise ValueError(f"{where}: missing field 'vocabularies.{key}'")
        qv = Vocabulary.from_dict(voc["question"], f"{where}, vocabularies.question")
        pv = Vocabulary.from_dict(voc["program"], f"{where}, vocabularies.program")
        cfg = payload["config"]
        missing = [k for k in ("word_dim", "hidden", "layers", "dropout", "max_decode_len") if k not in cfg]
        if missing:
            raise ValueError(f"{where}: missing config field(s) {missing}")
        model = Seq2Seq.from_config(cfg, len(qv), len(pv))
        model.load_state_dict(payload["state_dict"])
        return cls(model, qv, pv, load_ontology(cfg.get("ontology", "superclevr")), device)

    def encode(self, questions: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded word ids (B, L) and lengths (B,); unknown words become ``<UNK>``."""
        words, lengths = pad_sequences([self.question_vocab.encode(tokenize(q)) for q in questions])
        return words.to(self.device), lengths.to(self.device)

    def decode(self, ids: torch.Tensor) -> list[ParsedProgram]:
        """Decoded ids (B, T) -> one :class:`ParsedProgram` each."""
        return [ids_to_program(row, self.program_vocab, self.ontology) for row in ids.tolist()]

    @torch.no_grad()
    def parse(self, questions: Sequence[str], beam_size: int = 1, batch_size: int = 256) -> list[ParsedProgram]:
        """Parse questions (greedy when ``beam_size == 1``), in batches of similar length.

        Raises:
            FormatError: a question longer than :data:`parsers.question.vocab.MAX_QUESTION_TOKENS`
                tokens (its position named), before any is parsed.
        """
        for i, q in enumerate(questions):
            check_question_length(q, f"question {i}")
        self.model.eval()
        order = sorted(range(len(questions)), key=lambda i: len(tokenize(questions[i])))
        out: list[ParsedProgram | None] = [None] * len(questions)
        for s in range(0, len(order), batch_size):
            idx = order[s:s + batch_size]
            words, lengths = self.encode([questions[i] for i in idx])
            ids = (self.model.greedy(words, lengths) if beam_size == 1
                   else self.model.beam_search(words, lengths, beam_size))
            for i, p in zip(idx, self.decode(ids)):
                out[i] = p
        return out  # type: ignore[return-value]


__all__ = ["QuestionParser"]
