"""Tokenizer and vocabularies: specials at fixed indices, <UNK> for unknown words, round trips."""
from __future__ import annotations

import pytest

from parsers.question.vocab import (END_ID, NULL_ID, SPECIALS, START_ID, UNK_ID, Vocabulary, build_vocabularies,
                                    tokenize)


def test_tokenize_lowercases_and_splits_punctuation():
    assert tokenize("How many RED cars are there?") == ["how", "many", "red", "cars", "are", "there", "?"]
    assert tokenize("the bus's wheel; left,right") == ["the", "bus", "'", "s", "wheel", ";", "left", ",", "right"]
    assert tokenize("") == [] and tokenize("   ") == []


def test_specials_have_fixed_indices():
    v = Vocabulary(["a", "b"])
    assert v.itos[:4] == list(SPECIALS) == ["<NULL>", "<START>", "<END>", "<UNK>"]
    assert (v.index("<NULL>"), v.index("<START>"), v.index("<END>"), v.index("<UNK>")) == (
        NULL_ID, START_ID, END_ID, UNK_ID) == (0, 1, 2, 3)
    assert len(v) == 6


def test_build_orders_by_frequency_and_respects_min_count():
    v = Vocabulary.build([["b", "a", "b"], ["c", "b", "a"]], min_count=2)
    assert v.itos[4:] == ["b", "a"]
    assert "c" not in v


def test_unknown_words_map_to_unk():
    v = Vocabulary(["red", "car"])
    assert v.encode(["red", "zebra", "car"]) == [4, UNK_ID, 5]
    assert v.encode(["red"], add_start_end=True) == [START_ID, 4, END_ID]
    assert v.decode([START_ID, 4, UNK_ID]) == ["<START>", "red", "<UNK>"]


def test_decode_out_of_range_names_the_index():
    with pytest.raises(IndexError, match="token index 9 outside the vocabulary of 5 tokens"):
        Vocabulary(["x"]).decode([4, 9])


def test_duplicate_or_empty_tokens_rejected():
    with pytest.raises(ValueError, match="duplicate vocabulary token 'a'"):
        Vocabulary(["a", "a"])
    with pytest.raises(ValueError, match="duplicate vocabulary token '<END>'"):
        Vocabulary(["<END>"])
    with pytest.raises(ValueError, match="non-empty string"):
        Vocabulary([""])


def test_dict_round_trip_and_bad_dict():
    q, p = build_vocabularies(["How many cars?", "Is it red?"], [["count", "scene"], ["exist", "scene"]])
    assert Vocabulary.from_dict(q.to_dict()) == q and Vocabulary.from_dict(p.to_dict()) == p
    assert "?" in q and "count" in p and p.itos[4] == "scene"
    with pytest.raises(ValueError, match=r"ckpt.pt, vocabularies.question: field 'tokens' must be a list starting"):
        Vocabulary.from_dict({"tokens": ["a", "b"]}, "ckpt.pt, vocabularies.question")
