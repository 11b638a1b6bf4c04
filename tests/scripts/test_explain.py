"""scripts/explain.py and orchestration.explain on a fake variant run (ground-truth scenes as the parse)."""
from __future__ import annotations

import base64
import html
import json

import numpy as np
import pytest

from executors import (DeterministicExecutor, ExecutionError, ProbabilisticExecutor, Program, SceneLikelihoods,
                       SymbolicScene, load_ontology)
from executors.scene import argmax_scene
from orchestration.explain import draw_explanation, explain, render_html, render_png
from nsvqa.evaluation.scene_parser import load_parsed

ONTO = load_ontology("superclevr")
DROPPED = 0  # object of image 0 whose existence is set to 0.3 (NS-VQA leaves it out)


def _question_with_color_filter(questions, scenes):
    """(question position, object j >= 1 of image 0 that its first filter_color[c] keeps, c)."""
    for qi, q in enumerate(questions):
        p = q["program"]
        if q["image_index"] != 0 or len(p) < 2 or p[1]["type"] != "filter_color" or p[1]["inputs"] != [0]:
            continue
        c = p[1]["value_inputs"][0]
        js = [j for j, o in enumerate(scenes[0]["objects"]) if o["color"] == c and j != DROPPED]
        if js:
            return qi, js[0], c
    raise AssertionError("the generated split has no question of image 0 starting with filter_color")


@pytest.fixture(scope="module")
def fake(tmp_path_factory, require_renderer):
    """A generated 3-image split and a variant run whose parse is the ground truth, edited: image 0's
    object DROPPED has exist 0.3, one object has its color at 0.6 / 0.4; image 1's first question
    has a parsed program whose unique fails, its second no parsed program."""
    from nsvqa.generation.annotations import categories
    from nsvqa.generation.dataset import generate_split, job_for

    root = tmp_path_factory.mktemp("data")
    job = job_for(root, "mid", "test", 3, 5, 64, 48)
    generate_split(job, progress=False)
    data = job.folder
    scenes = json.loads((data / "scenes" / "test_scenes.json").read_text())["scenes"]
    questions = json.loads((data / "questions" / "test_questions.json").read_text())["questions"]
    qi, j, color = _question_with_color_filter(questions, scenes)
    other = next(c for c in ONTO.values("color") if c != color)

    records = []
    for s in scenes:
        lik = SceneLikelihoods.from_scene(SymbolicScene.from_json(s, ONTO))
        if s["image_index"] == 0:
            lik.exist[DROPPED] = 0.3
            col = np.zeros(len(ONTO.values("color")))
            col[ONTO.values("color").index(color)] = 0.6
            col[ONTO.values("color").index(other)] = 0.4
            lik.attributes["color"][j] = col
        dets, parts = [], []
        for k, o in enumerate(s["objects"]):
            x, y, w, h = o["bbox"]
            dets.append({"box": [x, y, x + w, y + h], "score": float(lik.exist[k]),
                         "label": ONTO.values("shape").index(o["shape"]) + 1, "mask": o["mask"]})
            for name in o.get("parts", {}):
                pm = o["part_masks"][name]
                px, py, pw, ph = pm["bbox"]
                parts.append({"object": k, "box": [px, py, px + pw, py + ph], "score": 0.9,
                              "label": len(ONTO.values("shape")) + 1 + ONTO.part_names.index(name),
                              "mask": pm["mask"]})
        records.append({"image_index": s["image_index"], "image_filename": s["image_filename"],
                        "likelihoods": lik.to_json(), "detections": dets, "parts": parts})
    run = tmp_path_factory.mktemp("runs") / "mid"
    parsed = run / "parsed" / "mid"
    parsed.mkdir(parents=True)
    classes = {c["id"]: c["name"] for c in categories(ONTO.values("shape"), ONTO.part_names)}
    (parsed / "likelihoods.json").write_text(json.dumps(
        {"version": 1, "data": str(data), "split": "test", "detector_classes": classes, "scenes": records}))

    programs = [{"program": q["program"], "valid": True, "error": None} for q in questions]
    of_image_1 = [i for i, q in enumerate(questions) if q["image_index"] == 1]
    absent = next(c for c in ONTO.values("color") if c not in {o["color"] for o in scenes[1]["objects"]})
    broken = [{"type": "scene", "inputs": [], "value_inputs": []},
              {"type": "filter_color", "inputs": [0], "value_inputs": [absent]},
              {"type": "unique", "inputs": [1], "value_inputs": []},
              {"type": "query_shape", "inputs": [2], "value_inputs": []}]
    programs[of_image_1[0]] = {"program": broken, "valid": True, "error": None}
    programs[of_image_1[1]] = {"program": None, "valid": False, "error": "no end token"}
    (parsed / "programs.json").write_text(json.dumps({"programs": programs}))
    return {"data": data, "run": run, "questions": questions, "qi": qi, "j": j, "color": color,
            "failing": of_image_1[0], "no_program": of_image_1[1], "scenes": scenes}


def _parsed_scene(fake, image: int) -> SceneLikelihoods:
    _, liks = load_parsed(fake["run"] / "parsed" / "mid" / "likelihoods.json", ONTO)
    return liks[image]


@pytest.mark.parametrize("model,mode", [("pnsvqa", "threshold"), ("pnsvqa-exact", "exact")])
def test_the_explanation_matches_both_executors(fake, model, mode):
    ex = explain(fake["run"], fake["data"], "test", 0, fake["qi"], model=model)
    q = fake["questions"][fake["qi"]]
    lik = _parsed_scene(fake, 0)
    program = Program.from_json(q["program"])
    assert ex["question"] == q["question"] and ex["program_source"] == "question parser"
    # P-NSVQA: the final answer and its probability are the executor's
    res = ProbabilisticExecutor(ONTO, mode=mode).run(program, lik, trace=True)
    p = ex["answers"]["pnsvqa"]
    assert p["error"] is None and p["mode"] == mode
    assert p["answer"] == res.answer
    assert p["probability"] == pytest.approx(res.distribution[res.answer])
    # the first filter step's distribution is exist * P(color), with the 0.6 set on object j
    step = ex["steps"][1]
    assert step["token"] == f"filter_color[{fake['color']}]" and step["pnsvqa"]["kind"] == "objects"
    probs = step["pnsvqa"]["probabilities"]
    assert len(probs) == len(lik)
    assert probs[fake["j"]] == pytest.approx(0.6)
    assert probs[DROPPED] == pytest.approx(0.3 * (fake["scenes"][0]["objects"][DROPPED]["color"] == fake["color"]))
    for k, s in enumerate(ex["steps"]):
        if s["pnsvqa"]["kind"] == "objects":
            np.testing.assert_allclose(s["pnsvqa"]["probabilities"], res.trace[k], rtol=1e-6, atol=1e-7)
    # NS-VQA: the deterministic executor on the argmax scene, indices mapped to the detections
    keep = [i for i in range(len(lik)) if i != DROPPED]
    assert ex["steps"][0]["nsvqa"]["output"] == keep
    assert [o["kept"] for o in ex["objects"]] == [i != DROPPED for i in range(len(lik))]
    scene = argmax_scene(lik, min_part=0.5, min_exist=0.5)
    d = ex["answers"]["nsvqa"]
    try:
        det = DeterministicExecutor(ONTO).run(program, scene, trace=True)
    except ExecutionError as e:
        assert d["answer"] is None and type(e).__name__ in d["error"]
    else:
        assert d["error"] is None and d["answer"] == det.answer
        for k, s in enumerate(ex["steps"]):
            if s["type"] == "ObjectSet":
                assert s["nsvqa"]["output"] == [keep[i] for i in det.trace[k]]
    # labels: most likely attributes and existence
    o = ex["objects"][fake["j"]]
    assert o["attributes"]["color"]["p"] == pytest.approx(0.6)
    assert o["label"].startswith(f"{fake['j']}: ") and fake["color"] in o["label"] and o["label"].endswith("(1.00)")
    assert ex["objects"][DROPPED]["label"].endswith("(0.30)")
    assert ex["parts"] and all(p["name"] in ONTO.part_names for p in ex["parts"])
    json.dumps(ex)  # plain data


def test_execution_errors_are_reported_not_raised(fake, tmp_path):
    ex = explain(fake["run"], fake["data"], "test", 1, fake["failing"])
    p, d = ex["answers"]["pnsvqa"], ex["answers"]["nsvqa"]
    assert p["answer"] is None and "UniquenessError" in p["error"] and p["error_node"] == 2
    assert d["answer"] is None and "UniquenessError" in d["error"] and d["error_node"] == 2
    steps = ex["steps"]
    assert steps[1]["pnsvqa"]["probabilities"] == [0.0] * len(_parsed_scene(fake, 1))
    assert steps[1]["nsvqa"]["output"] == []
    assert steps[2]["pnsvqa"]["kind"] == "error" and steps[2]["nsvqa"]["kind"] == "error"
    assert steps[3]["pnsvqa"] is None and steps[3]["nsvqa"] is None  # not reached
    # no parsed program: reported, no steps
    ex2 = explain(fake["run"], fake["data"], "test", 1, fake["no_program"])
    assert "no valid program" in ex2["program_error"] and "no end token" in ex2["program_error"]
    assert ex2["steps"] == [] and ex2["answers"]["nsvqa"]["answer"] is None
    # the same question with its ground-truth program is answered (one-hot scene: correctly)
    ex3 = explain(fake["run"], fake["data"], "test", 1, fake["failing"], gt_programs=True)
    assert ex3["program_source"] == "ground truth" and ex3["answers"]["pnsvqa"]["correct"] is True
    assert ex3["answers"]["nsvqa"]["correct"] is True
    # both figures render
    for e in (ex, ex2):
        png = render_png(e, e["image_path"], tmp_path / f"q{e['question_index']}.png")
        page = render_html(e, png, tmp_path / f"q{e['question_index']}.html").read_text()
        assert "UniquenessError" in page or "no valid program" in page


def _overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of visible texts of ``fig`` whose glyph boxes overlap."""
    from matplotlib.text import Text

    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(r).padded(-0.5)) for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip()]
    return [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:] if ba.overlaps(bb)]


def test_no_two_texts_of_the_picture_overlap(fake):
    from nsvqa.evaluation.report import pyplot

    ex = explain(fake["run"], fake["data"], "test", 0, fake["qi"])
    # crowded: 24 objects and 12 parts outlined by one box, each line of the object list long
    crowded = dict(ex, objects=[dict(ex["objects"][0], index=k, mask=None, box=[20, 10, 30, 20]) for k in range(24)],
                   parts=[dict(ex["parts"][0], object=k, mask=None, box=[22, 12, 26, 16]) for k in range(12)])
    for e in (ex, crowded):
        fig = draw_explanation(e, e["image_path"])
        assert _overlaps(fig) == []
        labels = [t for t in fig.axes[0].texts]
        assert len(labels) == len(e["objects"]) + (len(e["parts"]) if len(e["parts"]) <= 12 else 0)
        frame = fig.axes[0].get_window_extent()
        assert all(frame.contains(*t.get_window_extent().p0) and frame.contains(*t.get_window_extent().p1)
                   for t in labels)  # every label inside the image, where it is drawn
        pyplot().close(fig)


def test_cli_writes_png_and_html(fake, load_script, capsys):
    rc = load_script("explain").main(["--run", str(fake["run"]), "--data", str(fake["data"]), "--index", "0"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    first = next(i for i, q in enumerate(fake["questions"]) if q["image_index"] == 0)
    png = fake["run"] / "explain" / f"mid_test_img0_q{first}.png"
    page = png.with_suffix(".html")
    assert out.split() == [str(png), str(page)]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    from PIL import Image

    with Image.open(png) as im:
        assert im.width > 1000 and im.height > 300
    text = page.read_text()
    assert f"data:image/png;base64,{base64.b64encode(data).decode()}" in text
    assert html.escape(fake["questions"][first]["question"]) in text


def test_bad_input_exits_2_naming_the_file_and_item(fake, load_script, capsys, tmp_path):
    main = load_script("explain").main
    base = ["--run", str(fake["run"]), "--data", str(fake["data"])]

    def err(*argv):
        rc = main([*base, *argv]) if argv[0] != "--run" else main(list(argv))
        out, e = capsys.readouterr()
        assert rc == 2 and out == ""
        assert e.startswith("nsvqa-explain: error: ")
        return e

    e = err("--index", "99")
    assert "likelihoods.json" in e and "image_index 99" in e
    n = len(fake["questions"])
    e = err("--index", "0", "--question-index", str(n + 5))
    assert "test_questions.json" in e and f"question index {n + 5} out of range" in e
    e = err("--index", "0", "--question-index", str(fake["failing"]))  # a question about image 1
    assert "test_questions.json" in e and f"question {fake['failing']}" in e and "image 1" in e
    empty = tmp_path / "empty_run"
    empty.mkdir()
    e = err("--run", str(empty), "--data", str(fake["data"]), "--index", "0")
    assert str(empty / "parsed" / "mid" / "likelihoods.json") in e and "train_variant.py" in e
    # programs.json missing: an error unless --gt-programs
    only_lik = tmp_path / "only_lik"
    (only_lik / "parsed" / "mid").mkdir(parents=True)
    (only_lik / "parsed" / "mid" / "likelihoods.json").write_bytes(
        (fake["run"] / "parsed" / "mid" / "likelihoods.json").read_bytes())
    e = err("--run", str(only_lik), "--data", str(fake["data"]), "--index", "0")
    assert "programs.json" in e and "--gt-programs" in e
    ex = explain(only_lik, fake["data"], "test", 0, gt_programs=True)
    assert ex["program_source"] == "ground truth" and ex["answers"]["pnsvqa"]["answer"] is not None
