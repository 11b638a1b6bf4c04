"""The question parser's network: a bi-LSTM encoder and an LSTM decoder with attention (NS-VQA).

Shapes: B questions, L words (padded with ``<NULL>``), T program tokens, H the encoder's hidden
size per direction, D = 2H the decoder's hidden size (the encoder's two directions concatenated),
V the program vocabulary. The decoder starts from the encoder's final states (layer by layer, both
directions concatenated) and attends over the encoder outputs with dot-product (Luong) attention
at every step; the attended context and the LSTM output are combined by ``tanh(W [h; c])`` before
the output layer. Teacher forcing runs the decoder over the whole target in one call; greedy,
beam and sampled decoding run it one token at a time with the same weights.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .vocab import END_ID, NULL_ID, START_ID, UNK_ID

State = tuple[torch.Tensor, torch.Tensor]


def pad_sequences(seqs: Sequence[Sequence[int]], pad: int = NULL_ID,
                  min_len: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack index lists into ``(B, Lmax)`` int64, padded with ``pad``, and their lengths ``(B,)``.

    An empty sequence becomes one ``<UNK>`` (length 1), so a question with no words still encodes.
    """
    seqs = [list(s) if len(s) else [UNK_ID] for s in seqs]
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.int64)
    width = max([min_len, *lengths.tolist()]) if seqs else min_len
    out = torch.full((len(seqs), width), pad, dtype=torch.int64)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.as_tensor(s, dtype=torch.int64)
    return out, lengths


class Encoder(nn.Module):
    """Word embeddings and a bidirectional multi-layer LSTM.

    forward(words (B, L) int64, lengths (B,) int64) -> outputs (B, L, 2H) (zero at padding),
    state (h, c), each (layers, B, 2H): the final states of both directions, concatenated.
    """

    def __init__(self, num_words: int, word_dim: int, hidden: int, layers: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(num_words, word_dim, padding_idx=NULL_ID)
        self.lstm = nn.LSTM(word_dim, hidden, layers, batch_first=True, bidirectional=True,
                            dropout=dropout if layers > 1 else 0.0)
        self.drop = nn.Dropout(dropout)
        self.layers, self.hidden = layers, hidden

    def forward(self, words: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, State]:
        b, length = words.shape
        x = self.drop(self.embed(words))
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, (h, c) = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=length)

        def merge(s: torch.Tensor) -> torch.Tensor:  # (layers*2, B, H) -> (layers, B, 2H)
            return s.view(self.layers, 2, b, self.hidden).permute(0, 2, 1, 3).reshape(self.layers, b, 2 * self.hidden)

        return out, (merge(h), merge(c))


class AttentionDecoder(nn.Module):
    """Program-token embeddings, an LSTM and dot-product attention over the encoder outputs.

    forward(tokens (B, T), state ((layers, B, D) x 2), enc_out (B, L, D), enc_mask (B, L) bool)
    -> logits (B, T, V), new state, attention weights (B, T, L).
    """

    def __init__(self, num_tokens: int, word_dim: int, hidden: int, layers: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(num_tokens, word_dim, padding_idx=NULL_ID)
        self.lstm = nn.LSTM(word_dim, hidden, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
        self.combine = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, num_tokens)
        self.drop = nn.Dropout(dropout)

    def forward(self, tokens: torch.Tensor, state: State, enc_out: torch.Tensor,
                enc_mask: torch.Tensor) -> tuple[torch.Tensor, State, torch.Tensor]:
        y = self.drop(self.embed(tokens))
        dec, state = self.lstm(y, state)                               # (B, T, D)
        scores = torch.bmm(dec, enc_out.transpose(1, 2))               # (B, T, L)
        scores = scores.masked_fill(~enc_mask[:, None, :], float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        context = torch.bmm(attn, enc_out)                             # (B, T, D)
        h = torch.tanh(self.combine(torch.cat([dec, context], dim=-1)))
        return self.out(self.drop(h)), state, attn


class Seq2Seq(nn.Module):
    """Question words -> program tokens.

    Args:
        num_words: size of the question vocabulary.
        num_tokens: size of the program vocabulary (V).
        word_dim: word and program-token embedding size.
        hidden: encoder LSTM size per direction (the decoder has ``2 * hidden``).
        layers: LSTM layers of the encoder and of the decoder.
        dropout: dropout on embeddings, between LSTM layers and before the output layer.
        max_decode_len: most program tokens a decode produces (``<END>`` included).
        (The sizes are a config's, :meth:`from_config`: their defaults and profiles are
        :class:`nsvqa.training.question_config.QuestionParserConfig`'s.)

    Token ids follow :mod:`parsers.question.vocab`: 0 ``<NULL>`` (padding), 1 ``<START>``,
    2 ``<END>``, 3 ``<UNK>``.
    """

    def __init__(self, num_words: int, num_tokens: int, word_dim: int, hidden: int, layers: int, dropout: float,
                 max_decode_len: int):
        super().__init__()
        self.num_words, self.num_tokens = num_words, num_tokens
        self.max_decode_len = max_decode_len
        self.encoder = Encoder(num_words, word_dim, hidden, layers, dropout)
        self.decoder = AttentionDecoder(num_tokens, word_dim, 2 * hidden, layers, dropout)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], num_words: int, num_tokens: int) -> "Seq2Seq":
        """From a config (a mapping, e.g. a checkpoint's) holding ``word_dim hidden layers dropout
        max_decode_len``: the one map from a question-parser config to the network."""
        return cls(num_words, num_tokens, int(cfg["word_dim"]), int(cfg["hidden"]), int(cfg["layers"]),
                   float(cfg["dropout"]), int(cfg["max_decode_len"]))

    # ------------------------------------------------------------------ training
    def encode(self, words: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, State]:
        """-> enc_out (B, L, D), enc_mask (B, L) bool (True at real words), initial decoder state."""
        enc_out, state = self.encoder(words, lengths)
        mask = torch.arange(words.shape[1], device=words.device)[None, :] < lengths.to(words.device)[:, None]
        return enc_out, mask, state

    def forward(self, words: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits.

        Args:
            words: (B, L) question word ids; lengths: (B,).
            targets: (B, T+1) ``<START> tokens... <END> <NULL>...``.

        Returns:
            logits (B, T, V) predicting ``targets[:, 1:]``.
        """
        enc_out, mask, state = self.encode(words, lengths)
        logits, _, _ = self.decoder(targets[:, :-1], state, enc_out, mask)
        return logits

    def loss(self, words: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy per target token (``<NULL>`` padding ignored); a scalar."""
        logits = self(words, lengths, targets)
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets[:, 1:].reshape(-1),
                                           ignore_index=NULL_ID)

    # ------------------------------------------------------------------ decoding
    def _steps(self, words: torch.Tensor, lengths: torch.Tensor, max_len: int | None, choose) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the decoder token by token; ``choose(logits (B, V)) -> (token (B,), log-prob (B,))``.

        Returns ids (B, T) (``<NULL>`` after ``<END>``) and summed log-probs (B,) of the chosen
        tokens up to and including ``<END>``.
        """
        max_len = max_len or self.max_decode_len
        enc_out, mask, state = self.encode(words, lengths)
        b = words.shape[0]
        tok = torch.full((b,), START_ID, dtype=torch.int64, device=words.device)
        done = torch.zeros(b, dtype=torch.bool, device=words.device)
        out, total = [], torch.zeros(b, device=words.device)
        for _ in range(max_len):
            logits, state, _ = self.decoder(tok[:, None], state, enc_out, mask)
            tok, logp = choose(logits[:, 0])
            tok = tok.masked_fill(done, NULL_ID)
            total = total + logp.masked_fill(done, 0.0)
            out.append(tok)
            done = done | (tok == END_ID)
            if bool(done.all()):
                break
        return torch.stack(out, 1), total

    @torch.no_grad()
    def greedy(self, words: torch.Tensor, lengths: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
        """Most likely token at each step -> ids (B, T), ``<NULL>`` after ``<END>``."""
        def choose(logits):
            logp = torch.log_softmax(logits, -1)
            best = logp.argmax(-1)
            return best, logp.gather(1, best[:, None])[:, 0]
        return self._steps(words, lengths, max_len, choose)[0]

    def sample(self, words: torch.Tensor, lengths: torch.Tensor, max_len: int | None = None,
               generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample programs (for REINFORCE) -> ids (B, T) and their log-probabilities (B,), with grad."""
        def choose(logits):
            logp = torch.log_softmax(logits, -1)
            tok = torch.multinomial(logp.detach().exp(), 1, generator=generator)[:, 0]
            return tok, logp.gather(1, tok[:, None])[:, 0]
        return self._steps(words, lengths, max_len, choose)

    @torch.no_grad()
    def beam_search(self, words: torch.Tensor, lengths: torch.Tensor, beam_size: int = 5,
                    max_len: int | None = None) -> torch.Tensor:
        """The highest-scoring (summed log-probability) sequence of a beam of ``beam_size`` per
        question -> ids (B, T), ``<NULL>`` after ``<END>``. ``beam_size=1`` equals :meth:`greedy`."""
        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {beam_size}")
        max_len = max_len or self.max_decode_len
        b, k = words.shape[0], beam_size
        enc_out, mask, (h, c) = self.encode(words, lengths)
        enc_out, mask = enc_out.repeat_interleave(k, 0), mask.repeat_interleave(k, 0)
        state = (h.repeat_interleave(k, 1), c.repeat_interleave(k, 1))
        dev = words.device
        scores = torch.full((b, k), float("-inf"), device=dev)
        scores[:, 0] = 0.0                                     # only one live beam at the start
        tok = torch.full((b * k,), START_ID, dtype=torch.int64, device=dev)
        done = torch.zeros(b * k, dtype=torch.bool, device=dev)
        hist = torch.zeros((b * k, 0), dtype=torch.int64, device=dev)
        for _ in range(max_len):
            logits, state, _ = self.decoder(tok[:, None], state, enc_out, mask)
            logp = torch.log_softmax(logits[:, 0], -1)          # (B*K, V)
            v = logp.shape[-1]
            frozen = torch.full_like(logp, float("-inf"))
            frozen[:, NULL_ID] = 0.0                            # a finished beam only pads, at no cost
            logp = torch.where(done[:, None], frozen, logp)
            cand = (scores.view(-1, 1) + logp).view(b, k * v)
            scores, idx = cand.topk(k, dim=1)                  # sorted, best first
            src = (idx // v + torch.arange(b, device=dev)[:, None] * k).view(-1)
            tok = (idx % v).view(-1)
            hist = torch.cat([hist[src], tok[:, None]], 1)
            state = (state[0][:, src], state[1][:, src])
            done = done[src] | (tok == END_ID)
            if bool(done.all()):
                break
        return hist.view(b, k, -1)[:, 0]


__all__ = ["Seq2Seq", "Encoder", "AttentionDecoder", "pad_sequences"]
