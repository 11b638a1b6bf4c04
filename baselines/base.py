"""What every baseline is: a :class:`nsvqa.models.Model` with a run directory of its own
(:class:`Baseline`). Each
baseline module derives its model from :class:`Baseline`; ``baselines.MODELS`` names them."""
from __future__ import annotations

from typing import ClassVar

from nsvqa.models import Model


class Baseline(Model):
    """A model with a run directory of its own (stateless: everything lives in that directory).

    Subclasses set ``config_class`` (the frozen config dataclass, fields ``data`` and ``profile``
    first; its defaults the ``mini`` profile, its ``PROFILES`` what the other profiles change) and
    ``family``, and implement ``train`` and ``predict`` (:class:`nsvqa.models.Model`).
    """

    config_class: ClassVar[type]


__all__ = ["Baseline"]
