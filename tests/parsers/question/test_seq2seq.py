"""The network: shapes, padding invariance, decoding modes agree, sampled log-probabilities."""
from __future__ import annotations

import pytest
import torch

from nsvqa.training.question_config import QuestionParserConfig
from parsers.question.seq2seq import Seq2Seq, pad_sequences
from parsers.question.vocab import END_ID, NULL_ID, START_ID, UNK_ID


def _model(seed=0, **kw) -> Seq2Seq:
    torch.manual_seed(seed)
    return Seq2Seq(30, 20, word_dim=8, hidden=8, layers=2, dropout=0.0, max_decode_len=12, **kw).eval()


def test_pad_sequences_pads_and_maps_empty_to_unk():
    x, n = pad_sequences([[5, 6, 7], [], [4]])
    assert x.tolist() == [[5, 6, 7], [UNK_ID, NULL_ID, NULL_ID], [4, NULL_ID, NULL_ID]]
    assert n.tolist() == [3, 1, 1] and x.dtype == torch.int64


def test_forward_shapes_and_loss():
    m = _model()
    words, lengths = pad_sequences([[4, 5, 6, 7], [8, 9]])
    targets, _ = pad_sequences([[START_ID, 4, 5, END_ID], [START_ID, 6, END_ID]])
    logits = m(words, lengths, targets)
    assert logits.shape == (2, 3, 20)
    loss = m.loss(words, lengths, targets)
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None for n, p in m.named_parameters() if "embed" not in n)


def test_padding_does_not_change_a_question():
    """Packing: a question decodes the same alone and next to a longer one."""
    m = _model()
    alone, n1 = pad_sequences([[4, 5, 6]])
    both, n2 = pad_sequences([[4, 5, 6], [7, 8, 9, 10, 11, 12, 13]])
    tg, _ = pad_sequences([[START_ID, 4, 5, END_ID]] * 2)
    with torch.no_grad():
        a = m(alone, n1, tg[:1])
        b = m(both, n2, tg)
        enc_a, _, _ = m.encode(alone, n1)
        enc_b, mask_b, _ = m.encode(both, n2)
    torch.testing.assert_close(a[0], b[0])
    torch.testing.assert_close(enc_a[0], enc_b[0, :3])
    assert mask_b.tolist()[0] == [True] * 3 + [False] * 4
    assert torch.all(enc_b[0, 3:] == 0)


def _seq_logprob(m, words, lengths, ids):
    """Summed log-probability of each decoded sequence (up to and including <END>), teacher-forced."""
    out = []
    for i in range(ids.shape[0]):
        row = ids[i].tolist()
        row = row[:row.index(END_ID) + 1] if END_ID in row else row
        tg = torch.tensor([[START_ID, *row]])
        with torch.no_grad():
            lp = torch.log_softmax(m(words[i:i + 1], lengths[i:i + 1], tg), -1)[0]
        out.append(float(lp.gather(1, tg[0, 1:, None]).sum()))
    return out


def test_beam_one_equals_greedy_and_wider_beams_score_at_least_as_high():
    m = _model(3)
    words, lengths = pad_sequences([[4, 5, 6, 7], [8, 9], [10, 11, 12, 13, 14, 15]])
    greedy = m.greedy(words, lengths)
    assert torch.equal(m.beam_search(words, lengths, beam_size=1)[:, :greedy.shape[1]], greedy)
    g = _seq_logprob(m, words, lengths, greedy)
    b = _seq_logprob(m, words, lengths, m.beam_search(words, lengths, beam_size=4))
    assert all(bi >= gi - 1e-5 for bi, gi in zip(b, g))


def test_decodes_pad_with_null_after_end():
    m = _model(1)
    # make <END> likely after two steps: bias the output layer so every step prefers token 5 then <END>
    with torch.no_grad():
        m.decoder.out.bias.zero_()
        m.decoder.out.bias[END_ID] = 2.0
        m.decoder.out.bias[5] = 2.5
    words, lengths = pad_sequences([[4, 5], [6, 7, 8]])
    for ids in (m.greedy(words, lengths), m.beam_search(words, lengths, 3)):
        for row in ids.tolist():
            if END_ID in row:
                assert all(t == NULL_ID for t in row[row.index(END_ID) + 1:])
            assert START_ID not in row


def test_sample_gives_log_probabilities_with_gradient():
    m = _model(2)
    words, lengths = pad_sequences([[4, 5, 6], [7, 8]])
    ids, logp = m.sample(words, lengths, generator=torch.Generator().manual_seed(0))
    ids2, _ = m.sample(words, lengths, generator=torch.Generator().manual_seed(0))
    assert torch.equal(ids, ids2)
    assert logp.shape == (2,) and logp.requires_grad and bool((logp <= 0).all())
    torch.testing.assert_close(logp.detach(), torch.tensor(_seq_logprob(m, words, lengths, ids)), atol=1e-4, rtol=1e-4)
    logp.sum().backward()


def test_profiles_and_bad_arguments():
    tiny = QuestionParserConfig.from_profile("d", "tiny")
    m = Seq2Seq.from_config(tiny.to_dict(), 10, 12)
    assert m.max_decode_len == tiny.max_decode_len
    assert m.encoder.hidden == tiny.hidden and m.encoder.embed.embedding_dim == tiny.word_dim
    with pytest.raises(ValueError, match="beam_size must be >= 1, got 0"):
        _model().beam_search(*pad_sequences([[4]]), beam_size=0)
