"""Perception and language parsers: scenes (detector + attribute head) and questions (seq2seq)."""
