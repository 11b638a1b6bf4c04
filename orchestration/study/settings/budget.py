"""The robustness study's compute: the hours its committed pieces took (every attempt of each
``piece.json``, and the redundancy scale check's record; the reruns of issue 64, the further
training seeds of :attr:`~orchestration.study.settings.config.StudyConfig.seed_pieces` and the
perception schedule check apart, under issue 64's cap) and a projection of each pending piece
in plan order against :attr:`~orchestration.study.settings.config.StudyConfig.budget_hours`, from the medians
of the committed pieces' steps; whether a piece fits the cap or a session's time left; the table
``run_study.py --budget`` prints. Data and arithmetic over the plan and the records.
"""
from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any, Mapping, Sequence

from executors.io import read_json
from nsvqa.generation.variants import FACTORS
from orchestration.study.settings.attempts import stopped_in_training
from orchestration.study.settings.perception_record import (PERCEPTION_BUDGET_GROUP, perception_record_path,
                                                            perception_seconds, read_perception_record)
from orchestration.study.settings.pieces import (PART_GROUP, Piece, design_only, is_reduced, lenders, piece_dir,
                                                 record_holds, scene_parser_folder, scene_parser_trainers, sharers,
                                                 study_pieces, trains_scene_parser, uses_scene_parser)
from orchestration.study.settings.scale_record import (SCALE_BUDGET_GROUP, read_scale_record, scale_record_path,
                                                       scale_seconds)
from orchestration.study.settings.config import STUDY, StudyConfig, StudyError


#: Groups never run yet are projected with the steps of the group named here (the part extension
#: trains a larger parser: its projection is a lower bound).
BUDGET_ANALOG = {PART_GROUP: "modular", "seeing": "modular", "regionmac": "seeing"}
#: A model no committed piece has trained is projected with the training step of the model named here
#: (the same reasoner and schedule; regionmac-trace also pools its detector's maps once per variant).
MODEL_ANALOG = {"regionmac-trace": "objmac-trace"}


def heading_of(piece: Piece, cfg: StudyConfig = STUDY, design: Sequence[str] | None = None) -> str:
    """The cap a piece's hours count under: the first of :attr:`StudyConfig.headings` that claims it
    (its ``groups`` hold the piece's group, or it is ``design`` and the piece is one only
    :attr:`StudyConfig.design` adds: ``design``, :func:`~orchestration.study.settings.pieces.design_only`'s,
    when the caller holds it), else ``"reruns"`` (issue 64's: a name of
    :attr:`StudyConfig.seed_pieces`), else ``"study"`` (:attr:`StudyConfig.budget_hours`)."""
    for name, h in cfg.headings.items():
        if piece.group in h.get("groups", ()):
            return name
        if h.get("design") and piece.name in (design_only(cfg) if design is None else design):
            return name
    return "reruns" if piece.name in cfg.seed_pieces else "study"


#: The steps of a piece that train its parsers (``piece.json``'s step names).
PARSER_STEPS = ("scene_parser", "question_parser")


def _step_kind(key: str, own_parser: bool) -> str | None:
    """A ``piece.json`` step name as :func:`budget` pools it: every test variant alike, the two
    parsers as one phase (:func:`_parser_phase`), a piece training its own scene parser apart from
    one loading an earlier piece's."""
    if key == "total":
        return None
    if key.startswith("test_"):
        return "test (own parser)" if own_parser else "test"
    if key == "parsers":  # :func:`budget` folds the two parser steps into it
        return "parsers" if own_parser else "parsers (shared scene parser)"
    return key


def _parser_phase(steps: Mapping[str, float]) -> float:
    """The wall time of an attempt's parser training. The question parser may train in a second
    process beside the scene parser (``jobs`` 2): both steps then record the same span, and the
    phase is what the attempt's ``total`` leaves after its other steps; trained one after the other
    (or without a ``total``), it is their sum."""
    own = [float(steps[k]) for k in PARSER_STEPS if k in steps]
    if "total" not in steps:
        return sum(own)
    rest = sum(float(v) for k, v in steps.items() if k not in (*PARSER_STEPS, "total"))
    return min(sum(own), max(float(steps["total"]) - rest, *own))


def _expected_steps(piece: Piece, cfg: StudyConfig, measured: Sequence[str]) -> list[str]:
    """The steps ``piece`` will run, as :func:`_step_kind` names them: the ``model_`` and ``tune_``
    steps of its models among those ``measured`` (executors train nothing), its parsers, a test per
    test variant."""
    own = trains_scene_parser(piece, cfg)
    models = {MODEL_ANALOG.get(m, m) if f"model_{m}" not in measured else m for m in piece.models}
    keys = [k for k in measured if k.split("_", 1)[0] in ("model", "tune") and k.split("_", 1)[1] in models]
    if uses_scene_parser(piece):
        keys.append(_step_kind("parsers", own))
    return keys + [_step_kind("test_", own)] * len(piece.tests)


def budget_group(piece: Piece) -> str:
    """The part of the study a piece's hours are counted under: ``parts`` (the extension),
    ``systematic`` (the splits), ``seeds`` (the default variant's further seeds), else its group
    (``modular``, ``film``, ``mdetr``: Tables 1-2)."""
    if piece.group == PART_GROUP:
        return PART_GROUP
    if piece.variant in FACTORS["systematic"]:
        return "systematic"
    return "seeds" if piece.seed != 0 else piece.group


def budget(results: str | os.PathLike, cfg: StudyConfig = STUDY) -> dict[str, Any]:
    """The study's compute: the hours its committed pieces took, and a projection of each pending
    piece in plan order against :attr:`StudyConfig.budget_hours`.

    Spent is the sum of the committed ``piece.json`` totals (every attempt, pauses included) and of
    the redundancy scale check's record (:func:`scale_seconds`, its row ``SCALE_BUDGET_GROUP``). A
    pending piece is projected as the sum of its steps (its models' training and tuning, its
    parsers' phase (:func:`_parser_phase`: the two parsers may train side by side), one
    parse-and-test per test variant), each the median of that step over the committed
    pieces of its group; a record with a ``note`` (attempts whose seconds were not recorded) or an
    attempt stopped in training (:func:`stopped_in_training`) is left out of the medians, unless a
    later attempt marked ``lost`` (entered by hand: its run folder was lost with its machine, so
    the next call trained every step anew) comes after it: only the attempts after the last lost
    one are read for the steps. Data
    generation is not counted. A parser or test step no committed piece of the group has run
    counts 0 and is named under ``unmeasured``; a group never run borrows the steps of its analog
    (:data:`BUDGET_ANALOG`), named under ``basis``, and its projection is a lower bound.

    The pieces of :attr:`StudyConfig.seed_pieces` are issue 64's (:func:`rerun_hours`): a committed
    one counts there, not in ``spent_hours`` nor ``done`` (its steps do enter the medians), and a
    pending one is projected the same way but listed under ``reruns.pending``, its cumulative hours
    from the reruns' spent ones against :data:`RERUN_CAP_HOURS`; ``pending`` holds the study's
    pieces alone (:func:`pending_rows`: both). ``reruns`` is there once a rerun or a check has spent
    hours or the config names seed pieces.

    A piece committed with fewer models or tests than the plan gives it (:func:`is_reduced`: a seed
    piece the config widens) is pending: projected whole, under ``reruns.pending`` when the config
    names it, while its committed hours stay the study's (``spent_hours``, ``done``: the study ran
    it). Its widened run staged under ``RESULTS/reruns/pieces/`` with the plan's models and tests
    is not pending (its hours count under the reruns). Promoted in its place, the study keeps the
    replaced piece's hours (``promoted.json``'s ``old_seconds``) as for every promoted rerun.

    Raises:
        StudyError: a committed ``piece.json`` without a readable ``seconds.total``, or a
            ``scale.json`` :func:`scale_seconds` cannot count (the file named).
    """
    plan = study_pieces(cfg)
    design = design_only(cfg)
    heading = {p.name: heading_of(p, cfg, design) for p in plan}
    seeded = set(cfg.seed_pieces)  # issue 64's: counted under the reruns' cap
    headed: dict[str, dict[str, float]] = {h: {} for h in cfg.headings}  # heading -> committed piece -> seconds
    promoted = {name: rec["old_seconds"] for name, rec in read_promoted(results).get("pieces", {}).items()}
    spent, done, counted, seen = 0.0, set(), 0, {}  # counted: the committed pieces whose hours the study keeps
    machines: dict[str, dict[str, Any]] = {}  # committed piece -> the machine its record names
    by_group: dict[str, float] = {}
    for piece in plan:
        path = piece_dir(results, piece) / "piece.json"
        if not path.exists():
            continue
        try:
            rec = read_json(path, allow_nan=True)
            total = float(rec["seconds"]["total"])
        except (ValueError, KeyError, TypeError) as e:
            raise StudyError(f"{path}: no readable field seconds.total ({type(e).__name__}: {e})") from e
        machines[piece.name] = rec.get("machine") or {}
        whole = record_holds(rec, piece)
        if whole or _staged_whole(results, piece):
            done.add(piece.name)  # a reduced piece is projected whole, unless its widened run is staged
        if not whole:
            study_total = total  # the study ran the reduced piece; the widened one is issue 64's
        elif heading[piece.name] in headed:
            headed[heading[piece.name]][piece.name] = promoted.get(piece.name, total)
            study_total = None
        else:
            # a promoted rerun's own hours count under the reruns; the study spent the piece it replaced
            study_total = promoted.get(piece.name, None if piece.name in seeded else total)
        if study_total is not None:
            counted += 1
            spent += study_total
            group = budget_group(piece)
            by_group[group] = by_group.get(group, 0.0) + study_total
        for kind, sec in _step_samples(rec, piece):
            seen.setdefault(piece.group, {}).setdefault(kind, []).append(sec)
    scale = scale_seconds(read_scale_record(results), str(scale_record_path(results)))
    if scale:
        spent += scale
        by_group[SCALE_BUDGET_GROUP] = scale
    medians = {g: {k: statistics.median(v) for k, v in sorted(ks.items())} for g, ks in seen.items()}
    reruns = rerun_hours(results, cfg)
    projected = {"study": ([], spent, cfg.budget_hours), "reruns": ([], reruns["spent_hours"] * 3600, RERUN_CAP_HOURS),
                 **{h: ([], sum(headed[h].values()), float(cfg.headings[h]["cap_hours"])) for h in cfg.headings}}
    _project_pending([p for p in plan if p.name not in done], heading, medians, projected, results, cfg, machines)
    out = {"cap_hours": cfg.budget_hours, "done": counted, "spent_hours": round(spent / 3600, 2),
           "spent_hours_by_group": {g: round(v / 3600, 2) for g, v in sorted(by_group.items())},
           "step_minutes": {g: {k: round(v / 60, 1) for k, v in ks.items()} for g, ks in medians.items()},
           "pending": projected["study"][0]}
    if seeded:
        reruns["pending"] = projected["reruns"][0]
    if reruns["pieces"] or reruns.get("checks") or seeded:
        out["reruns"] = reruns
    if cfg.headings:
        out["headings"] = {h: {"cap_hours": float(cfg.headings[h]["cap_hours"]),
                               "spent_hours": round(sum(headed[h].values()) / 3600, 2),
                               "pieces": {n: round(v / 3600, 2) for n, v in headed[h].items()},
                               "pending": projected[h][0]} for h in cfg.headings}
    return out


def _step_samples(rec: Mapping[str, Any], piece: Piece) -> list[tuple[str, float]]:
    """(step kind, seconds) of each step a committed piece's record ``rec`` measured, over its
    attempts after the last ``lost`` one (each test variant one sample of its kind); none where the
    record has a ``note`` or an attempt stopped in training."""
    attempts = rec["seconds"].get("attempts", [])
    lost = [i for i, a in enumerate(attempts) if a.get("lost")]
    attempts = attempts[lost[-1] + 1:] if lost else attempts  # its run folder gone: the next call began anew
    if rec.get("note") or any(stopped_in_training(a) for a in attempts):
        return []  # a stopped attempt's steps are not known, and the step the next one resumed is partial
    own = uses_scene_parser(piece) and rec.get("scene_parser_of", piece.variant) == piece.variant
    totals: dict[str, float] = {}  # step -> seconds over every attempt
    for attempt in attempts:
        steps = attempt.get("steps", {})
        if any(k in steps for k in PARSER_STEPS):
            totals["parsers"] = totals.get("parsers", 0.0) + _parser_phase(steps)
        for key, sec in steps.items():
            if key not in PARSER_STEPS:
                totals[key] = totals.get(key, 0.0) + float(sec)
    return [(kind, sec) for kind, sec in ((_step_kind(key, own), sec) for key, sec in totals.items())
            if kind is not None]


def _project_pending(pending: Sequence[Piece], heading: Mapping[str, str], medians: Mapping[str, Mapping[str, float]],
                     projected: dict[str, tuple[list[dict[str, Any]], float, float]], results: str | os.PathLike,
                     cfg: StudyConfig, machines: Mapping[str, Mapping[str, Any]]) -> None:
    """Each pending piece, in plan order, projected from its group's step ``medians`` (its analog's
    where its group never ran) and appended to the rows of its heading in ``projected`` (heading ->
    (rows, cumulative seconds, cap hours)), with the machines its scene parser was trained on."""
    trainers = scene_parser_trainers(cfg)
    for piece in pending:
        rows, cumulative, cap = projected[heading[piece.name]]
        basis = piece.group if piece.group in medians else BUDGET_ANALOG.get(piece.group)
        steps = medians.get(basis, {}) if basis else {}
        keys = _expected_steps(piece, cfg, list(steps))
        seconds = sum(steps.get(k, 0.0) for k in keys) if steps else None
        if seconds is not None:
            cumulative += seconds
        trained = sorted({machine_label(m) for _, _, m in sharer_machines(piece, results, cfg, trainers=trainers,
                                                                          machines=machines)})
        rows.append({"piece": piece.name, "minutes": None if seconds is None else round(seconds / 60, 1),
                     "scene_parser_from": trained,
                     "basis": basis if steps else None, "lower_bound": bool(steps) and basis != piece.group,
                     "unmeasured": sorted({k for k in keys if k not in steps}) if steps else None,
                     "cumulative_hours": round(cumulative / 3600, 2) if seconds is not None else None,
                     "within_cap": None if seconds is None else cumulative <= cap * 3600})
        projected[heading[piece.name]] = (rows, cumulative, cap)


def _staged_whole(results: str | os.PathLike, piece: Piece) -> bool:
    """Whether ``RESULTS/reruns/pieces/<piece>/piece.json`` is there with ``piece``'s models and tests."""
    path = Path(results, RERUNS, "pieces", piece.name, "piece.json")
    try:
        return path.is_file() and record_holds(read_json(path, allow_nan=True), piece)
    except ValueError as e:
        raise StudyError(f"{path}: not JSON ({e})") from e


def pending_rows(b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every pending piece's projection in :func:`budget`'s ``b``: the study's (``pending``), then
    the seed pieces' (``reruns.pending``), then each heading's (``headings.<h>.pending``)."""
    return [*b["pending"], *(b.get("reruns") or {}).get("pending", []),
            *(r for h in (b.get("headings") or {}).values() for r in h["pending"])]


#: The reruns (issue 64): staged under ``RESULTS/reruns/pieces/``, then promoted into
#: ``RESULTS/pieces/`` (listed in ``RESULTS/reruns/promoted.json``), and the compute the issue allows
#: them, apart from the study's cap.
RERUNS, RERUN_CAP_HOURS = "reruns", 24.0
PROMOTED = "promoted.json"
#: Work of issue 64 outside the study's pieces and checks, counted under its cap: name -> its record
#: (relative to RESULTS; counted from ``seconds.total`` where the record is there).
RERUN_PILOTS = {"regionmac-trace pilot on mid (point 3)": "../seeing_models/regionmac-trace/mid.json"}


def read_promoted(results: str | os.PathLike) -> dict[str, Any]:
    """``RESULTS/reruns/promoted.json``: the reruns that replaced their namesakes under
    ``RESULTS/pieces/`` (``{"commit": the last commit holding the replaced pieces, "pieces": {piece:
    {"old_seconds": the replaced piece's seconds.total}}}``); empty when none was promoted.

    Raises:
        StudyError: a record that does not read so (the file named).
    """
    path = Path(results, RERUNS, PROMOTED)
    if not path.is_file():
        return {}
    try:
        rec = read_json(path, allow_nan=True)
        for name, p in rec["pieces"].items():
            float(p["old_seconds"])
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise StudyError(f"{path}: not a record of promoted reruns, pieces.<piece>.old_seconds "
                         f"({type(e).__name__}: {e})") from e
    return rec


def rerun_hours(results: str | os.PathLike, cfg: StudyConfig = STUDY) -> dict[str, Any]:
    """The hours each rerun piece took (its ``piece.json`` total: staged, or promoted into
    ``RESULTS/pieces/``) and each committed piece of ``cfg``'s :attr:`StudyConfig.seed_pieces` (a
    further training seed, under ``RESULTS/pieces/``; one the config widens counts once its widened
    run is staged or promoted, never the reduced piece committed before it, whose hours are the
    study's: :func:`~orchestration.study.settings.pieces.is_reduced`), one row each, and the perception schedule
    check's (its record,
    :func:`~orchestration.study.settings.perception_record.perception_seconds`), against
    :data:`RERUN_CAP_HOURS`: ``{"cap_hours", "spent_hours", "pieces": {piece: hours}}``, and
    ``"checks": {PERCEPTION_BUDGET_GROUP: hours, pilot: hours}`` once the check has spent any, and
    each of :data:`RERUN_PILOTS` whose record is there.

    Raises:
        StudyError: a rerun's ``piece.json`` without a readable ``seconds.total``, or a check's record
            whose seconds do not count (named).
    """
    pieces = {}
    seeds = [p for p in study_pieces(cfg) if p.name in cfg.seed_pieces] if cfg.seed_pieces else []
    paths = [*(Path(results, "pieces", name, "piece.json") for name in read_promoted(results).get("pieces", {})),
             *Path(results, RERUNS, "pieces").glob("*/piece.json"),
             *(piece_dir(results, p) / "piece.json" for p in seeds
               if (piece_dir(results, p) / "piece.json").is_file() and not is_reduced(results, p))]
    for path in sorted(paths, key=lambda p: p.parent.name):
        try:
            pieces[path.parent.name] = round(float(read_json(path, allow_nan=True)["seconds"]["total"]) / 3600, 2)
        except (ValueError, KeyError, TypeError) as e:
            raise StudyError(f"{path}: no readable field seconds.total ({type(e).__name__}: {e})") from e
    check = perception_seconds(read_perception_record(results), str(perception_record_path(results)))
    checks = {PERCEPTION_BUDGET_GROUP: round(check / 3600, 2)} if check else {}
    for name, rel in RERUN_PILOTS.items():
        path = Path(results, rel)
        if path.is_file():
            try:
                checks[name] = round(float(read_json(path, allow_nan=True)["seconds"]["total"]) / 3600, 2)
            except (ValueError, KeyError, TypeError) as e:
                raise StudyError(f"{path}: no readable field seconds.total ({type(e).__name__}: {e})") from e
    return {"cap_hours": RERUN_CAP_HOURS, "spent_hours": round(sum(pieces.values()) + sum(checks.values()), 2),
            "pieces": pieces, **({"checks": checks} if checks else {})}


#: The checkpoints of a trained scene parser, under its run folder's ``scene_parser/``.
SCENE_PARSER_FILES = ("detector.pt", "attributes.pt")


def borrowed_and_missing(piece: Piece, runs: str | os.PathLike, cfg: StudyConfig = STUDY) -> Path | None:
    """The run folder of the scene parser ``piece`` borrows (:func:`~orchestration.study.settings.pieces.lenders`)
    where ``runs`` lacks it (:data:`SCENE_PARSER_FILES`), so that the piece trains it again first;
    None where it holds it, or the piece trains its own or uses none."""
    if not lenders(piece, cfg):
        return None
    folder = scene_parser_folder(piece, runs, cfg)
    return folder if lacks_scene_parser(folder) else None


def lacks_scene_parser(folder: Path) -> bool:
    """Whether the run folder ``folder`` lacks a trained scene parser (:data:`SCENE_PARSER_FILES`)."""
    return not all((folder / "scene_parser" / f).is_file() for f in SCENE_PARSER_FILES)


def sharer_machines(piece: Piece, results: str | os.PathLike, cfg: StudyConfig = STUDY, *,
                    trainers: Mapping[Path, Sequence[Piece]] | None = None,
                    machines: Mapping[str, Mapping[str, Any]] | None = None) -> list[tuple[Piece, Path, dict[str, Any]]]:
    """The committed pieces that train into the run folder ``piece`` reads its scene parser from
    (:func:`~orchestration.study.settings.pieces.sharers`), each with its ``piece.json`` and the ``machine`` it
    records (empty where it records none): where that folder's scene parser was trained, in plan
    order. Empty where no such piece is committed. A caller that asks of many pieces passes what it
    holds already: ``trainers`` (:func:`~orchestration.study.settings.pieces.scene_parser_trainers`) and
    ``machines`` (committed piece -> its ``machine``, read from its ``piece.json``).

    Raises:
        StudyError: a sharer's ``piece.json`` that is not JSON (named).
    """
    out = []
    for other in sharers(piece, cfg, trainers):
        path = piece_dir(results, other) / "piece.json"
        if machines is not None:
            if other.name in machines:
                out.append((other, path, dict(machines[other.name])))
        elif path.is_file():
            try:
                out.append((other, path, read_json(path, allow_nan=True).get("machine") or {}))
            except ValueError as e:
                raise StudyError(f"{path}: not JSON ({e})") from e
    return out


def machine_label(m: Mapping[str, Any]) -> str:
    """A ``machine`` record's CPU, torch thread count and native bf16 (where recorded), as the
    tables print them: what :func:`orchestration.study.running.piece.alike` compares."""
    n, bf16 = m.get("torch_threads"), m.get("native_bf16")
    said = ([] if n is None else [f"{n} torch thread{'' if n == 1 else 's'}"]) + \
        ([] if bf16 is None else ["native bf16" if bf16 else "no native bf16"])
    return f"{m.get('cpu') or 'an unrecorded CPU'}" + (f" ({', '.join(said)})" if said else "")


def lender_minutes(results: str | os.PathLike, piece: Piece, runs: str | os.PathLike, cfg: StudyConfig = STUDY,
                   b: Mapping[str, Any] | None = None) -> tuple[float, str] | None:
    """What ``piece`` adds to its projection on this machine when ``runs`` lacks the scene parser
    it borrows (:func:`borrowed_and_missing`), so that it trains that scene parser again first:
    the minutes and the lender's run folder, None where nothing trains again. The minutes are what the
    lender's committed piece recorded for that scene parser (its ``seconds.checkpoints``), else the
    group's parser phase less its shared one (:func:`budget`'s ``step_minutes``)."""
    folder = borrowed_and_missing(piece, runs, cfg)
    if folder is None:
        return None
    recorded = []
    for p in lenders(piece, cfg):
        path = piece_dir(results, p) / "piece.json"
        if not path.is_file():
            continue
        marks = read_json(path, allow_nan=True).get("seconds", {}).get("checkpoints", {})
        sec = [marks.get(f"scene_parser/{f}", {}).get("seconds") for f in SCENE_PARSER_FILES]
        if all(isinstance(x, (int, float)) for x in sec):
            recorded.append(sum(sec) / 60)
    if recorded:
        return max(recorded), str(folder)
    steps = (budget(results, cfg) if b is None else b)["step_minutes"].get(piece.group, {})
    if "parsers" in steps:
        return max(steps["parsers"] - steps.get("parsers (shared scene parser)", 0.0), 0.0), str(folder)
    return None


def _here(results: str | os.PathLike, piece: Piece, cfg: StudyConfig, b: Mapping[str, Any],
          runs: str | os.PathLike | None) -> tuple[float | None, str]:
    """``piece``'s projected minutes (:func:`budget`) with :func:`lender_minutes` on ``runs``
    (where given), and the words that say so."""
    minutes = _projected_minutes(b, piece)
    extra = None if runs is None or minutes is None else lender_minutes(results, piece, runs, cfg, b)
    if extra is None:
        return minutes, ""
    return minutes + extra[0], f" ({extra[0]:.0f} of them to train again the scene parser it borrows: {extra[1]} lacks it)"


def over_cap(results: str | os.PathLike, piece: Piece, cfg: StudyConfig = STUDY,
             b: Mapping[str, Any] | None = None, runs: str | os.PathLike | None = None) -> str | None:
    """Why running ``piece`` now would take the study past :attr:`StudyConfig.budget_hours`
    (None when it would not): the committed pieces' hours already reach the cap, or they and the
    piece's own projection (:func:`budget`; pieces before it left pending do not count; with
    ``runs``, this machine's run folders, :func:`lender_minutes` too) pass it.
    A piece a heading of :attr:`StudyConfig.headings` claims (:func:`heading_of`) is held to that
    heading's cap; a piece of :attr:`StudyConfig.seed_pieces` to the reruns' cap
    (:data:`RERUN_CAP_HOURS`, on :func:`rerun_hours`' spent hours), never to the study's.
    A piece no committed piece of its kind projects is let through until the cap is spent."""
    b = budget(results, cfg) if b is None else b  # ``b``: :func:`budget`'s, when the caller has it
    h = next((n for n, x in (b.get("headings") or {}).items()  # the heading the budget put it under
              if piece.name in x["pieces"] or any(r["piece"] == piece.name for r in x["pending"])), None)
    if h is not None:
        spent, cap, whose = b["headings"][h]["spent_hours"], b["headings"][h]["cap_hours"], f"{h}'s"
        if spent >= cap:
            return f"{h}'s pieces took {spent:.1f} h, its {cap:g}-hour cap"
    elif piece.name in cfg.seed_pieces:
        spent, cap, whose = b["reruns"]["spent_hours"], b["reruns"]["cap_hours"], "the reruns' (issue 64)"
        if spent >= cap:
            return f"issue 64's reruns and seed pieces took {spent:.1f} h, {whose} {cap:g}-hour cap"
    else:
        spent, cap, whose = b["spent_hours"], cfg.budget_hours, "the study's"
        if spent >= cap:
            return f"the committed pieces took {spent:.1f} h, the study's {cap:g}-hour cap"
    minutes, why = _here(results, piece, cfg, b, runs)
    if minutes is not None and spent + minutes / 60 > cap:
        return (f"{piece.name} is projected at {minutes:.0f} min{why}: {spent:.1f} h spent + {minutes / 60:.1f} h "
                f"passes {whose} {cap:g}-hour cap")
    return None


def _projected_minutes(b: Mapping[str, Any], piece: Piece) -> float | None:
    return next((p["minutes"] for p in pending_rows(b) if p["piece"] == piece.name), None)


def out_of_time(results: str | os.PathLike, piece: Piece, seconds_left: float, cfg: StudyConfig = STUDY,
                b: Mapping[str, Any] | None = None, runs: str | os.PathLike | None = None) -> str | None:
    """Why ``piece`` should not start with ``seconds_left`` of wall time to go (a session's or a
    batch job's end), None when its projection (:func:`budget`; data generation not counted; with
    ``runs``, this machine's run folders, :func:`lender_minutes` too) fits or there is none. A
    piece cut short resumes from its run folder, but a machine that goes with the session takes
    that folder with it."""
    minutes, why = _here(results, piece, cfg, budget(results, cfg) if b is None else b, runs)
    if minutes is not None and minutes * 60 > seconds_left:
        return f"{piece.name} is projected at {minutes:.0f} min{why} and {max(seconds_left, 0) / 60:.0f} min are left"
    return None


def budget_markdown(b: Mapping[str, Any]) -> str:
    """:func:`budget` as a Markdown table (what ``run_study.py --budget`` prints)."""
    extra = " and the redundancy scale check" if SCALE_BUDGET_GROUP in b.get("spent_hours_by_group", {}) else ""
    lines = [f"{b['done']} pieces committed{extra}: {b['spent_hours']:.1f} hours of the {b['cap_hours']:g}-hour cap.",
             ""]
    if b.get("spent_hours_by_group"):
        lines += ["| spent on | hours |", "|---|---|"]
        lines += [f"| {g} | {h:.1f} |" for g, h in b["spent_hours_by_group"].items()]
        lines += [f"| **total** | **{b['spent_hours']:.1f}** of {b['cap_hours']:g} |", ""]
    if b.get("reruns"):
        r = b["reruns"]
        lines += [f"Reruns (issue 64; staged under `{RERUNS}/` until their borrowers ran again, then in place of "
                  f"the pieces they replaced, whose hours the study's total keeps), their own cap of "
                  f"{r['cap_hours']:g} hours:", "", "| rerun piece | hours |", "|---|---|"]
        lines += [f"| {p} | {h:.1f} |" for p, h in (*r["pieces"].items(), *r.get("checks", {}).items())]
        lines += [f"| **total** | **{r['spent_hours']:.1f}** of {r['cap_hours']:g} |", ""]
        if "pending" in r:
            lines += ["The further training seeds the study config names (`seed_pieces`) count here too" +
                      ("; those pending, projected from the reruns' hours on (a piece whose scene parser a "
                       "committed piece trained runs only on that CPU with that thread count, unless its run "
                       "folder comes along: `run_study.py` refuses it elsewhere, exit status 5):"
                       if r["pending"] else "; every one is committed."), ""]
            lines += _pending_table(r["pending"], "pending seed piece", "within the reruns' cap") + [""] \
                if r["pending"] else []
    for name, h in (b.get("headings") or {}).items():
        lines += [f"{name}: its own cap of {h['cap_hours']:g} hours, {h['spent_hours']:.1f} spent"
                  + (":" if h["pieces"] else "; nothing committed yet."), ""]
        if h["pieces"]:
            lines += ["| piece | hours |", "|---|---|", *(f"| {p} | {v:.1f} |" for p, v in h["pieces"].items()), ""]
        if h["pending"]:
            lines += _pending_table(h["pending"], f"pending piece ({name})", "within its cap") + [""]
    lines += _pending_table(b["pending"], "pending piece", "within cap")
    return "\n".join(lines) + "\n"


def _pending_table(rows: Sequence[Mapping[str, Any]], piece: str, cap: str) -> list[str]:
    """Pending rows of :func:`budget` as a Markdown table (lines); ``piece``, ``cap``: two headers."""
    lines = [f"| {piece} | projected min | cumulative hours | {cap} | projected from | its scene parser trained on |",
             "|---|---|---|---|---|---|"]
    for p in rows:
        where = "; ".join(p.get("scene_parser_from") or []) or "—"
        if p["minutes"] is None:
            lines.append(f"| {p['piece']} | — | — | — | no committed piece of its group | {where} |")
            continue
        basis = p["basis"] + (", a lower bound" if p["lower_bound"] else "") + (
            f" (no {', '.join(p['unmeasured'])})" if p["unmeasured"] else "")
        lines.append(f"| {p['piece']} | {p['minutes']:.0f} | {p['cumulative_hours']:.1f} | "
                     f"{'yes' if p['within_cap'] else 'no'} | {basis} | {where} |")
    return lines


__all__ = ["PARSER_STEPS", "PROMOTED", "RERUNS", "RERUN_CAP_HOURS", "SCENE_PARSER_FILES", "borrowed_and_missing",
           "budget", "budget_group", "budget_markdown", "heading_of", "lacks_scene_parser", "lender_minutes",
           "machine_label", "over_cap", "out_of_time", "pending_rows", "read_promoted", "rerun_hours", "sharer_machines"]
