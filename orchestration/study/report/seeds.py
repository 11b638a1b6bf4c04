"""Which findings more training seeds would decide, and the pieces to run for them, by one rule.

A finding is listed when its status rests on one training seed and either an interval that
decides it has a bound within :data:`NEAR_ZERO` of 0 (a knife edge: another seed could move it
across), or it holds at 95% but not after the multiple-comparison correction. For each listed
interval its cells (``basis["cells"]`` of :func:`orchestration.study.report.findings.findings`: the
[training variant, model] pairs it is computed from) name the committed seed-0 pieces they come
from; the pieces to run are those pieces at the seeds :data:`MORE_SEEDS`. Pieces are ordered most
decisive first: by how many listed intervals rest on them, then by name. Findings judged against
the models that see are listed beside the others (``against``).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from nsvqa.evaluation.resampling import widen

#: A deciding interval with a bound this close to 0 (a fraction: 1.5 points) asks for more seeds.
NEAR_ZERO = 0.015
#: The training seeds a listed finding's pieces run next.
MORE_SEEDS = (1, 2)


def _edge(ci: Sequence[float] | None) -> bool:
    return ci is not None and min(abs(ci[0]), abs(ci[1])) <= NEAR_ZERO


def _at_95_only(ci: Sequence[float] | None, k: int) -> bool:
    """Clear of 0 at 95%, not when widened to the corrected level over ``k`` intervals."""
    if ci is None or ci[0] <= 0 <= ci[1]:
        return False
    lo, hi = widen(ci, k)
    return lo <= 0 <= hi


def piece_of(pieces: Sequence[Mapping[str, Any]], train: str, model: str, seed: int = 0) -> str | None:
    """The name of the committed piece trained on ``train`` at ``seed`` whose models include
    ``model`` (``pieces``: the report's ``pieces`` rows), or None."""
    for p in pieces:
        if p["name"].startswith(f"{train}-seed{seed}-") and model in p.get("models", ()):
            return p["name"]
    return None


def _reseeded(name: str, seed: int) -> str:
    head, _, rest = name.partition("-seed0-")
    return f"{head}-seed{seed}-{rest}"


def listed(row: Mapping[str, Any], k: int, against: str = "paper-recipe") -> dict[str, Any] | None:
    """``row`` (a finding with ``intervals``, ``status``, ``basis``) as a listed finding, or None
    when the rule does not list it. ``k``: the size of the correction's family."""
    basis = row.get("basis") or {}
    if row.get("status") == "pending" or basis.get("seeds") != 1 or basis.get("counts"):
        return None
    cis, cells = row.get("intervals") or [], basis.get("cells") or []
    picked = []
    for i, ci in enumerate(cis):
        why = [w for w, hit in (("a bound within 1.5 points of 0", _edge(ci)),
                                ("clear of 0 at 95% only", _at_95_only(ci, k))) if hit]
        if why:
            picked.append({"interval": list(ci), "why": why, "cells": cells[i] if i < len(cells) else []})
    if not picked:
        return None
    return {"key": row["key"], "against": against, "status": row["status"], "intervals": picked}


def more_seeds(rows: Sequence[Mapping[str, Any]], seeing: Mapping[str, Sequence[Mapping[str, Any]]],
               pieces: Sequence[Mapping[str, Any]], k: int) -> dict[str, Any]:
    """The listed findings (``rows``: judged against the paper-recipe models; ``seeing``: group ->
    the findings judged against that group of models that see; both before
    :func:`~orchestration.study.report.findings.decide_all` merges them) and the pieces to run, seed by seed (every listed piece at the first further seed before any at
    the next: a factor pools a seed only once each of its training variants has it), within a seed
    the pieces most listed intervals rest on first: ``{"near_zero", "seeds", "findings": [...],
    "pieces": [{"piece", "seed_0", "intervals", "findings", "done"}]}`` (``done``: ``run``, the
    piece is committed with its seed-0 piece's models and tests; ``partly``, committed with fewer,
    as the default variant's further seeds of the executors tested in domain only; ``no``)."""
    rows_of = {p["name"]: p for p in pieces}

    def status(seed_0: str, name: str) -> str:
        """``run`` (committed with the seed-0 piece's models and tests), ``partly`` (committed with
        fewer: it cannot stand for the seed-0 piece in a factor), or ``no``."""
        if name not in rows_of:
            return "no"
        a, b = rows_of[seed_0], rows_of[name]
        return "run" if set(a.get("models", ())) <= set(b.get("models", ())) and \
            set(a.get("tests", ())) <= set(b.get("tests", ())) else "partly"

    found = [x for x in (*(listed(r, k) for r in rows),
                         *(listed(r, k, g) for g, found in seeing.items() for r in found
                           if r.get("rests_on", "—") != "—")) if x]
    count: dict[str, dict[str, Any]] = {}
    for f in found:
        for iv in f["intervals"]:
            names = sorted({n for t, m in iv["cells"] if (n := piece_of(pieces, t, m)) is not None})
            iv["pieces"] = names
            for n in names:
                c = count.setdefault(n, {"intervals": 0, "findings": []})
                c["intervals"] += 1
                if f["key"] not in c["findings"]:
                    c["findings"].append(f["key"])
    order = sorted(count, key=lambda n: (-count[n]["intervals"], n))
    return {"near_zero": NEAR_ZERO, "seeds": list(MORE_SEEDS), "findings": found,
            "pieces": [{"piece": _reseeded(n, s), "seed_0": n, "intervals": count[n]["intervals"],
                        "findings": count[n]["findings"], "done": status(n, _reseeded(n, s))}
                       for s in MORE_SEEDS for n in order]}


def more_seeds_markdown(record: Mapping[str, Any]) -> list[str]:
    """The record of :func:`more_seeds` as Markdown lines: the listed findings, each interval with the
    seed-0 pieces it rests on ("no study piece" for one no study piece's cells give, as a check's
    own runs), then the pieces."""
    if not record.get("findings"):
        return ["No finding rests on one seed at a knife edge or at 95% only."]
    out = ["Each interval as it decides the status: the 95% interval of the findings table widened by the "
           "Monte-Carlo error of its bounds (`findings.deciding`), so a bound may read 0.1 point wider here.", "",
           "| finding | judged against | status | deciding interval (points) | why | pieces it rests on |",
           "|---|---|---|---|---|---|"]
    for f in record["findings"]:
        for iv in f["intervals"]:
            lo, hi = iv["interval"]
            out.append(f"| {f['key']} | {f['against']} | {f['status']} | [{100 * lo:+.1f}, {100 * hi:+.1f}] "
                       f"| {'; '.join(iv['why'])} | {', '.join(iv['pieces']) or 'no study piece'} |")
    out += ["", "| piece | intervals it decides | findings | run |", "|---|---|---|---|"]
    out += [f"| {p['piece']} | {p['intervals']} | {', '.join(p['findings'])} | {p['done']} |"
            for p in record["pieces"]]
    return out


__all__ = ["MORE_SEEDS", "NEAR_ZERO", "listed", "more_seeds", "more_seeds_markdown", "piece_of"]
