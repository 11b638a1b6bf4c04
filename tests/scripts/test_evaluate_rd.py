"""scripts/evaluate_rd.py on hand-made predictions files: matrices, RD, ECE, head/tail, ID/OOD, files."""
from __future__ import annotations

import json

import pytest

from nsvqa.artifacts.predictions import Prediction, predictions_path, write_predictions

#: pnsvqa on visual complexity: right answers out of 4 per (train, test); hard -> easy is missing.
VISUAL = {("easy", "easy"): 4, ("easy", "mid"): 3, ("easy", "hard"): 2,
          ("mid", "easy"): 2, ("mid", "mid"): 4, ("mid", "hard"): 3,
          ("hard", "mid"): 2, ("hard", "hard"): 4}
#: nsvqa on concept distribution: right answers out of 10 on (head, tail, long, oppo, bal).
DIST = {"bal": (9, 7, 8, 6, 8), "slt": (8, 7, 8, 7, 8), "long": (9, 5, 8, 4, 8)}


def _write(run, model, train, test, n, right, **kw):
    preds = []
    for i in range(n):
        extra = {k: (v(i) if callable(v) else v) for k, v in kw.items()}
        preds.append(Prediction(question_index=i, question_type="count" if i % 2 else "exist", answer="yes",
                                prediction="yes" if i < right else "no", **extra))
    write_predictions(predictions_path(run, model, train, test), preds)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for (t, s), right in VISUAL.items():
        _write(root / "p1", "pnsvqa", t, s, 4, right, probability=0.9)
    for t, counts in DIST.items():
        for s, right in zip(("head", "tail", "long", "oppo", "bal"), counts):
            extra = {}
            if (t, s) == ("long", "long"):  # questions 0-4 about a head color, 5-9 about a tail color
                extra["concepts"] = lambda i: ("color=gray",) if i < 5 else ("color=cyan",)
            if (t, s) == ("bal", "bal"):  # the 8th right answer (index 7) is a guess after an error
                extra.update(guessed=lambda i: i == 7, execution_error=lambda i: i == 7)
            _write(root / "p2", "nsvqa", t, s, 10, right, **extra)
    _write(root / "p3", "film", "sys-composition", "sys-composition", 4, 3,
           ood=lambda i: i >= 2)  # id: questions 0, 1 (right); ood: 2 (right), 3 (wrong)
    return root


def _cell(rep, model, train, test):
    (c,) = [c for c in rep["cells"] if (c["model"], c["train"], c["test"]) == (model, train, test)]
    return c


def test_report(runs, tmp_path, load_script):
    out = tmp_path / "report"
    assert load_script("evaluate_rd").main(["--runs", str(runs), "--out", str(out)]) == 0
    rep = json.loads((out / "report.json").read_text())

    vis = rep["factors"]["visual"]
    assert vis["train_variants"] == vis["test_variants"] == ["easy", "mid", "hard"]
    assert vis["models"]["pnsvqa"]["matrix"] == [[1.0, 0.75, 0.5], [0.5, 1.0, 0.75], [None, 0.5, 1.0]]
    rd = vis["models"]["pnsvqa"]["rd"]
    assert rd["value"] is None and "train hard / test easy" in rd["reason"]
    assert rd["per_train"]["easy"]["value"] == pytest.approx(((1 - 0.75) + (1 - 0.5)) / 2)
    assert rd["per_train"]["mid"]["value"] == pytest.approx(((1 - 0.5) / 1 + (1 - 0.75) / 1) / 2)
    assert "nsvqa" not in vis["models"]  # never run on this factor

    dist = rep["factors"]["distribution"]["models"]["nsvqa"]
    bal, slt, long_ = ((0.9 - 0.7) + (0.8 - 0.6)) / 2 / 0.8, ((0.8 - 0.7) + (0.8 - 0.7)) / 2 / 0.8, \
        ((0.9 - 0.5) + (0.8 - 0.4)) / 2 / 0.8
    assert dist["rd"]["value"] == pytest.approx((bal + slt + long_) / 3)
    assert dist["matrix"][2] == [0.8, None, 0.8, 0.9, 0.5, 0.4]  # long: bal slt long head tail oppo
    assert rep["factors"]["systematic"]["models"]["film"]["rd"]["value"] is None

    # guesses are kept apart; head/tail; ID/OOD; calibration only for the probabilistic model
    g = _cell(rep, "nsvqa", "bal", "bal")["overall"]
    assert (g["accuracy"], g["accuracy_no_guess"], g["n_guessed"], g["n_execution_error"]) == (0.8, 0.7, 1, 1)
    ht = _cell(rep, "nsvqa", "long", "long")["head_tail"]
    assert (ht["head"]["accuracy"], ht["tail"]["accuracy"], ht["head"]["n"]) == (1.0, 0.6, 5)
    assert _cell(rep, "pnsvqa", "easy", "easy")["head_tail"] is None  # not a distribution cell
    io = _cell(rep, "film", "sys-composition", "sys-composition")["id_ood"]
    assert (io["id"]["accuracy"], io["ood"]["accuracy"]) == (1.0, 0.5)
    by = _cell(rep, "pnsvqa", "easy", "mid")["by_type"]  # right: 0 1 2 (exist, count, exist)
    assert (by["exist"]["accuracy"], by["count"]["accuracy"]) == (1.0, 0.5)
    assert _cell(rep, "pnsvqa", "easy", "easy")["calibration"]["ece"] == pytest.approx(0.1)  # 4/4 right at 0.9
    assert _cell(rep, "pnsvqa", "easy", "hard")["calibration"]["ece"] == pytest.approx(0.4)  # 2/4 right at 0.9
    assert _cell(rep, "nsvqa", "bal", "bal")["calibration"] is None

    md = (out / "report.md").read_text()
    assert "| pnsvqa | hard | — | 50.0 | 100.0 |" in md
    # Table 2 and the sections hold the factors these predictions ran, the others named in one line
    assert "| model | visual complexity | concept distribution |" in md
    assert "No predictions for: question redundancy, concept compositionality." in md
    assert "## Question redundancy" not in md and "## Concept compositionality" not in md
    assert "| nsvqa | long | 80.0 | — | 80.0 | 90.0 | 50.0 | 40.0 |" in md
    assert f"{100 * (bal + slt + long_) / 3:.2f}" in md
    tex = (out / "report.tex").read_text()
    assert "\\begin{tabular}" in tex and "& hard & -- & 50.0 & 100.0" in tex

    png = b"\x89PNG\r\n\x1a\n"
    assert (out / "heatmaps" / "visual__pnsvqa.png").read_bytes().startswith(png)
    assert (out / "heatmaps" / "distribution__nsvqa.png").read_bytes().startswith(png)
    rel = sorted(p.name for p in (out / "reliability").iterdir())
    assert rel == sorted(f"pnsvqa__train-{t}__test-{s}.png" for t, s in VISUAL)
    assert "(reliability/pnsvqa__train-easy__test-easy.png)" in md
    # a picture only where its data exists: film has one cell (the table holds it); no partial RD, no footnote
    assert sorted(p.name for p in (out / "heatmaps").iterdir()) == ["distribution__nsvqa.png", "visual__pnsvqa.png"]
    assert "systematic__film" not in md
    assert "--allow-partial-rd" not in md and "averaged over the inputs that exist" not in tex


def test_partial_rd_metric_and_reproducible(runs, tmp_path, load_script):
    main = load_script("evaluate_rd").main
    a, b = tmp_path / "a", tmp_path / "b"
    args = ["--runs", str(runs / "p1"), str(runs / "p2"), "--allow-partial-rd", "--no-plots",
            "--metric", "accuracy_no_guess"]
    assert main(args + ["--out", str(a)]) == 0
    assert main(args + ["--out", str(b)]) == 0
    for name in ("report.json", "report.md", "report.tex"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert not (a / "heatmaps").exists()
    rep = json.loads((a / "report.json").read_text())
    rd = rep["factors"]["visual"]["models"]["pnsvqa"]["rd"]
    assert rd["partial"] and rd["value"] == pytest.approx((0.375 + 0.375 + (1 - 0.5)) / 3)
    assert "41.67*" in (a / "report.md").read_text()
    assert "\\* averaged over the inputs that exist (--allow-partial-rd)." in (a / "report.md").read_text()
    assert "$^*$ averaged over the inputs that exist" in (a / "report.tex").read_text()
    # without guesses the bal/bal cell is 7/10: the distribution RD's bal train term changes
    dist = rep["factors"]["distribution"]["models"]["nsvqa"]["rd"]["per_train"]["bal"]["value"]
    assert dist == pytest.approx(((0.9 - 0.7) + (0.8 - 0.6)) / 2 / 0.7)
    assert "film" not in {c["model"] for c in rep["cells"]}  # p3 was not asked for


def test_a_model_is_listed_under_the_factors_it_ran_not_for_the_cell_they_share(tmp_path, load_script):
    # pnsvqa ran the redundancy factor (mid / mid among its cells), nsvqa mid / mid alone
    for train in ("rd-", "mid", "rd+"):
        for test in ("rd-", "mid", "rd+"):
            _write(tmp_path / "p", "pnsvqa", train, test, 4, 3)
    _write(tmp_path / "p", "nsvqa", "mid", "mid", 4, 2)
    out = tmp_path / "rep"
    assert load_script("evaluate_rd").main(["--runs", str(tmp_path / "p"), "--out", str(out), "--no-plots",
                                            "--n-boot", "0"]) == 0
    rep = json.loads((out / "report.json").read_text())
    listed = {f: set(fac["models"]) for f, fac in rep["factors"].items()}
    assert listed["redundancy"] == {"pnsvqa", "nsvqa"}
    assert listed["visual"] == {"nsvqa"}  # pnsvqa's mid / mid cell does not list it here
    assert rep["factors"]["redundancy"]["models"]["pnsvqa"]["rd"]["value"] == pytest.approx(0.0)
    md = (out / "report.md").read_text()
    assert "| pnsvqa | — | 0.00 |" in md  # Table 2: no visual RD, the redundancy one


def test_a_heatmap_shows_the_measured_rows_and_columns_only():
    from nsvqa.evaluation.report import measured_part

    names = ["easy", "mid", "hard"]
    # the demo's shape: one training variant tested on three
    assert measured_part([[None] * 3, [0.9, 0.8, 0.7], [None] * 3], names, names) == \
        ([[0.9, 0.8, 0.7]], ["mid"], names)
    # a hole inside the measured part stays (hatched); an unmeasured column goes
    assert measured_part([[0.9, None, None], [None, 0.8, None], [None] * 3], names, names) == \
        ([[0.9, None], [None, 0.8]], ["easy", "mid"], ["easy", "mid"])
    assert measured_part([[None] * 3, [None, 0.8, None], [None] * 3], names, names) is None  # 8 of 9 missing


def test_errors(tmp_path, load_script, capsys):
    main = load_script("evaluate_rd").main
    assert main(["--runs", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "no predictions" in capsys.readouterr().err
    assert main(["--runs", str(tmp_path / "absent"), "--out", str(tmp_path / "r")]) == 2
    assert "absent" in capsys.readouterr().err
    bad = predictions_path(tmp_path, "m", "mid", "mid")
    bad.parent.mkdir(parents=True)
    bad.write_text('{"question_index": 0, "question_type": "count", "answer": "1", "prediction": "1"}\n'
                   '{"question_index": 1, "question_type": "count", "answer": "1", "prediction": 1, '
                   '"probability": "high"}\n')
    assert main(["--runs", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert f"{bad}, line 2, field 'probability'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
