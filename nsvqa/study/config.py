"""The names ``nsvqa/study/config.py`` held before the plan was split by job (docs/decisions.md,
2026-12-05), handed on from the modules that own them until their last importers name those
modules; it defines nothing, and new code imports the owner (or :mod:`nsvqa.study`):

    study_config  :class:`StudyConfig`, :data:`STUDY`, :data:`STUDY_FILE`, :func:`results_config`,
                  :class:`StudyError`
    plan          the pieces: :class:`Piece`, :func:`study_pieces`, :func:`piece_setup`, the aliases
    attempts      a piece's ledger of attempts and :data:`PIECE_FORMAT`
    scale_record  the redundancy scale check's layout and ``scale.json``
    cost          the budget: the hours spent and projected against the cap
"""
from __future__ import annotations

from nsvqa.study.attempts import (PIECE_FORMAT, _attempt_starts, attempt_seconds, attempt_starts,  # noqa: F401
                                  close_stopped_attempts, read_ledger, stopped_in_training)
from nsvqa.study.cost import budget, budget_group, budget_markdown, out_of_time, over_cap  # noqa: F401
from nsvqa.study.plan import (PART_GROUP, SCENE_GROUPS, Piece, PieceSetup, canonical, check_aliases,  # noqa: F401
                              is_done, pending_pieces, piece_dir, piece_setup, scene_source, study_pieces,
                              training_variants, variants_tested)
from nsvqa.study.scale_record import (SCALE_BUDGET_GROUP, SCALE_FACTOR, SCALE_RESULTS, SCALE_RUNS,  # noqa: F401
                                      parse_scale_label, read_scale_record, scale_label, scale_record_path,
                                      scale_runs, scale_seconds)
from nsvqa.study.study_config import STUDY, STUDY_FILE, StudyConfig, StudyError, results_config  # noqa: F401
