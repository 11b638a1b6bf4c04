"""Rendering an explanation (the dict of :func:`orchestration.explain.trace.explain`): its answers and
program steps as text lines, a PNG (matplotlib, Agg: the image with the parsed objects outlined,
the question, the answers and one row per program step), a self-contained HTML page embedding that
PNG, and the default paths of both files.
"""
from __future__ import annotations

import base64
import html
import io
import math
import os
import textwrap
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from nsvqa.evaluation.report import pyplot
from orchestration.explain.trace import ATTR_ORDER, TOP
from nsvqa.fileio import write_atomic
from nsvqa.generation.annotations import rle_to_mask


# ---------------------------------------------------------------------------- text
def answer_lines(ex: Mapping[str, Any]) -> list[str]:
    """The answers as text lines: ground truth, P-NSVQA (with probability), NS-VQA."""
    a = ex["answers"]
    p, d = a["pnsvqa"], a["nsvqa"]

    def verdict(r):
        return "" if r["correct"] is None else ("  [right]" if r["correct"] else "  [wrong]")

    lines = [f"ground truth: {a['ground_truth']}"]
    if ex.get("program_error"):
        return lines + [f"P-NSVQA ({p['model']}): no answer (no valid program)", "NS-VQA: no answer (no valid program)"]
    if p["error"]:
        lines.append(f"P-NSVQA ({p['model']}): error: {p['error']}")
    else:
        prob = "" if p["probability"] is None else f" (p={p['probability']:.3f})"
        lines.append(f"P-NSVQA ({p['model']}): {p['answer']}{prob}{verdict(p)}")
    lines.append(f"NS-VQA: error: {d['error']}" if d["error"] else f"NS-VQA: {d['answer']}{verdict(d)}")
    return lines


def step_line(s: Mapping[str, Any]) -> str:
    """``"3 filter_color[red] <- 2"``."""
    ins = ", ".join(map(str, s["inputs"]))
    return f"{s['index']:>2} {s['token']}" + (f" <- {ins}" if ins else "")


def _top_text(p: Mapping[str, Any] | None) -> str:
    if p is None:
        return "(not reached)"
    if p["kind"] == "error":
        return p["error"]
    txt = "  ".join(f"{lab} {v:.2f}" for lab, v in p["top"]) or "(all 0)"
    if p["confidence"] is not None:
        txt += f"  [P(exactly one)={p['confidence']:.2f}]"
    return txt


def _title(ex: Mapping[str, Any]) -> str:
    return (f"{ex['variant']}/{ex['split']} image {ex['image_index']}, question {ex['question_index']} "
            f"- program: {ex['program_source']}")


# ---------------------------------------------------------------------------- PNG
def render_png(explanation: Mapping[str, Any], image_path: str | os.PathLike | None,
               out_path: str | os.PathLike) -> Path:
    """Draw ``explanation`` (:func:`explain`) to a PNG at ``out_path`` (written atomically): the
    figure of :func:`draw_explanation`."""
    fig = draw_explanation(explanation, image_path)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    pyplot().close(fig)
    out_path = Path(out_path)
    write_atomic(out_path, buf.getvalue())
    return out_path


#: resolution of the PNG (the figure is sized in inches; labels are placed at this resolution)
DPI = 100


def draw_explanation(explanation: Mapping[str, Any], image_path: str | os.PathLike | None = None):
    """The matplotlib figure of ``explanation``; no two of its texts overlap.

    Top left: the image with every parsed object outlined (mask contour, else box; dashed when
    NS-VQA drops it) and labelled ``#index`` (labels moved apart where objects crowd), parts
    thinner. Top right: question, answers and one row per program step: the step, P-NSVQA's top
    objects/values as bars, NS-VQA's output. Below both, across the figure: one line per object
    (its most likely attributes) and part."""
    from matplotlib.patches import Rectangle  # heavy: matplotlib, only to draw
    from PIL import Image  # heavy ([full]): only to draw

    plt = pyplot()
    ex = explanation
    image_path = Path(image_path or ex["image_path"])
    img = np.asarray(Image.open(image_path).convert("RGB"))
    h, w = img.shape[:2]
    steps = ex["steps"]
    objects, parts = ex["objects"], ex["parts"]
    n_rows = max(len(steps), 1) + 1
    head = [_title(ex), *textwrap.wrap("Q: " + ex["question"], 120)]
    if ex["program_error"]:
        head.append(f"program: {ex['program_error']}")
    head += answer_lines(ex)
    head = [part for line in head for part in textwrap.wrap(line, 125) or [""]]
    head_h = 0.3 + 0.19 * len(head)
    row_h = 0.3
    right_h = head_h + 0.2 + row_h * n_rows + 0.2
    obj_lines = [_clip(_object_line(o), 250) for o in objects] + [p["label"] for p in parts[:12]]
    if len(parts) > 12:
        obj_lines.append(f"... and {len(parts) - 12} more parts")
    img_w_in = 6.0
    img_h_in = img_w_in * h / max(w, 1)
    top_h = max(right_h, img_h_in + 0.5)
    fig_h = max(top_h + 0.2 + 0.17 * (len(obj_lines) + 1), 4.0)
    fig_w = 17.0
    fig = plt.figure(figsize=(fig_w, fig_h), dpi=DPI)
    cmap = plt.get_cmap("tab10")

    # image with outlines
    ax = fig.add_axes([0.2 / fig_w, 1 - (0.3 + img_h_in) / fig_h, img_w_in / fig_w, img_h_in / fig_h])
    ax.imshow(img, interpolation="nearest")
    ax.set_xlim(-0.5, w - 0.5)
    ax.set_ylim(h - 0.5, -0.5)
    ax.set_axis_off()
    fs = 7
    labels = []
    for o in objects:
        color = cmap(o["index"] % 10)
        ls = "-" if o["kept"] else "--"
        anchor = _outline(ax, o.get("mask"), o.get("box"), color, ls, 1.4, Rectangle, (h, w))
        if anchor is not None:
            labels.append(ax.text(anchor[0], anchor[2], f"#{o['index']}", fontsize=fs, color="black",
                                  va="bottom", ha="left", clip_on=True,
                                  bbox=dict(boxstyle="round,pad=0.15", facecolor=color, alpha=0.6, linewidth=0)))
    for p in parts:
        color = cmap(p["object"] % 10) if p["object"] >= 0 else "white"
        anchor = _outline(ax, p.get("mask"), p.get("box"), color, ":", 0.8, Rectangle, (h, w))
        if anchor is not None and len(parts) <= 12:
            labels.append(ax.text(anchor[0], anchor[2] + 1.0, p["label"].split(":")[0], fontsize=fs - 2,
                                  color="black", va="top", ha="left", clip_on=True,
                                  bbox=dict(boxstyle="round,pad=0.1", facecolor="white", alpha=0.5, linewidth=0)))
    ax.set_title(f"{ex['image_filename']}: {len(objects)} parsed objects, {len(parts)} parts "
                 f"(dashed: exist < {ex['settings']['min_exist']}, not in NS-VQA's scene)", fontsize=8)
    _spread_labels(fig, ax, labels)
    # object list, across the figure below the image and the steps
    fig.text(0.2 / fig_w, 1 - (top_h + 0.2) / fig_h, "\n".join(obj_lines), fontsize=7, va="top", ha="left",
             family="monospace")

    # question, answers
    x0 = 6.6 / fig_w
    fig.text(x0, 1 - 0.2 / fig_h, "\n".join(head), fontsize=9, va="top", ha="left")

    # steps: one row of row_h inches each, below the header
    steps_h = row_h * n_rows
    axs = fig.add_axes([x0, 1 - (head_h + 0.2 + steps_h) / fig_h, 1 - x0 - 0.15 / fig_w, steps_h / fig_h])
    axs.set_xlim(0, 1)
    axs.set_ylim(-(n_rows - 0.5), 0.6)
    axs.set_axis_off()
    mode = ex["answers"]["pnsvqa"]["mode"]
    cols = (0.0, 0.27, 0.8)
    for x, t in zip(cols, ("step (inputs)", f"P-NSVQA ({mode}): top objects / values", "NS-VQA (argmax scene)")):
        axs.text(x, 0, t, fontsize=8, fontweight="bold", va="center")
    if not steps:
        axs.text(0, -1, "no program to execute", fontsize=8, va="center", color="firebrick")
    for r, s in enumerate(steps, start=1):
        _draw_step(axs, -r, s, cols, Rectangle, shade=r % 2 == 0)
    return fig


def _draw_step(axs, y: float, s: Mapping[str, Any], cols: Sequence[float], Rectangle, shade: bool) -> None:
    """Row ``y`` of the steps axes for step ``s``: the step at ``cols[0]``; at ``cols[1]`` P-NSVQA's
    top objects/values as bars (at most :data:`TOP`, then how many more are non-zero and the
    confidence), its error, or that it was not reached; at ``cols[2]`` NS-VQA's output. ``shade``
    puts a grey band behind the row; ``Rectangle`` is matplotlib's patch class."""
    cell = 0.11
    if shade:
        axs.add_patch(Rectangle((0, y - 0.5), 1, 1, facecolor="0.95", edgecolor="none", zorder=0))
    axs.text(0, y, _clip(step_line(s), 38), fontsize=7.5, va="center", family="monospace")
    p = s["pnsvqa"]
    if p is None:
        axs.text(cols[1], y, "(not reached)" if s["type"] else "-", fontsize=7, va="center", color="grey")
    elif p["kind"] == "error":
        axs.text(cols[1], y, _clip(p["error"], 85), fontsize=7, va="center", color="firebrick")
    else:
        for c, (lab, v) in enumerate(p["top"]):
            bx = cols[1] + c * cell
            axs.add_patch(Rectangle((bx, y - 0.38), (cell - 0.006) * min(max(v, 0.0), 1.0), 0.76,
                                    facecolor="tab:blue", alpha=0.3, edgecolor="none"))
            axs.add_patch(Rectangle((bx, y - 0.38), cell - 0.006, 0.76, facecolor="none",
                                    edgecolor="0.7", linewidth=0.4))
            axs.text(bx + 0.003, y, f"{_clip(lab, 13)} {v:.2f}", fontsize=6.5, va="center")
        if not p["top"]:
            axs.text(cols[1], y, "(all 0)", fontsize=7, va="center", color="grey")
        more = _nonzero(p) - len(p["top"])
        note = (f"+{more} " if more > 0 else "") + (f"Z={p['confidence']:.2f}" if p["confidence"] is not None
                                                    else "")
        if note:
            axs.text(cols[1] + TOP * cell, y, note, fontsize=6.5, va="center", color="dimgrey")
    d = s["nsvqa"]
    if d is None:
        axs.text(cols[2], y, "(not reached)" if s["type"] else "-", fontsize=7, va="center", color="grey")
    else:
        axs.text(cols[2], y, _clip(d["text"], 36), fontsize=7, va="center",
                 color="firebrick" if d["kind"] == "error" else "black")


def _extent(text, renderer):
    """The display box a label covers: its text and 2 pixels around (its background box's pad)."""
    return text.get_window_extent(renderer).padded(2)


def _spread_labels(fig, ax, labels) -> None:
    """Move each of ``labels`` (texts in ``ax``, in drawing order) to the nearest place, in steps
    of its own height and width, where it overlaps no label placed before it and stays inside the
    image; a label with no such place stays where it was drawn."""
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    to_data = ax.transData.inverted()
    placed = []
    for t in labels:
        box = _extent(t, renderer)
        bw, bh = box.width + 1, box.height + 1
        moves = sorted(((dx, dy) for dx in range(-6, 7) for dy in range(-12, 13)),
                       key=lambda m: (abs(m[0]) * bw) ** 2 + (abs(m[1]) * bh) ** 2)
        for dx, dy in moves:
            moved = box.translated(dx * bw, dy * bh)
            inside = (moved.x0 >= frame.x0 and moved.x1 <= frame.x1 and moved.y0 >= frame.y0
                      and moved.y1 <= frame.y1)
            if inside and not any(moved.overlaps(b) for b in placed):
                if dx or dy:
                    x, y = ax.transData.transform(t.get_position())
                    t.set_position(to_data.transform((x + dx * bw, y + dy * bh)))
                box = moved
                break
        placed.append(box)


def _nonzero(p: Mapping[str, Any]) -> int:
    """Number of entries with probability > 0 of a P-NSVQA step."""
    probs = p["probabilities"] or []
    if p["kind"] == "objects":
        return sum(1 for v in probs if v > 0)
    return sum(1 for e in probs if e[-1] > 0)


def _outline(ax, mask, box, color, ls, lw, Rectangle, shape) -> tuple[float, float, float] | None:
    """Draw a mask contour (else the box); returns (left, right, top) of what was drawn, or None."""
    if mask is not None:
        try:
            m = rle_to_mask(mask)
        except Exception:  # a malformed RLE: fall back to the box
            m = None
        if m is not None and m.shape == shape and m.any():
            ax.contour(m.astype(float), levels=[0.5], colors=[color], linewidths=lw, linestyles=ls)
            ys, xs = np.nonzero(m)
            return float(xs.min()) - 0.5, float(xs.max()) + 0.5, float(ys.min()) - 0.5
    if box is not None and len(box) == 4 and all(math.isfinite(float(v)) for v in box):
        x0, y0, x1, y1 = (float(v) for v in box)
        ax.add_patch(Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False, edgecolor=color, linestyle=ls,
                               linewidth=lw))
        return x0 - 0.5, x1 - 0.5, y0 - 0.5
    return None


def _object_line(o: Mapping[str, Any]) -> str:
    """``"#0 e=0.99: large 0.99 | red 0.60 / blue 0.40 | metal 0.99 | suv 0.93"`` (a plain texture
    is left out)."""
    cells = []
    for a in ATTR_ORDER:
        at = o["attributes"].get(a)
        if at is None or (a == "texture" and at["value"] == "none" and not at["alternatives"]):
            continue
        alt = "".join(f" / {v} {p:.2f}" for v, p in at["alternatives"])
        cells.append(f"{at['value']} {at['p']:.2f}{alt}")
    mark = "" if o["kept"] else "  [not in NS-VQA's scene]"
    return f"#{o['index']} e={o['exist']:.2f}: " + " | ".join(cells) + mark


def _clip(s: str, n: int) -> str:
    s = str(s)
    return s if len(s) <= n else s[:n - 1] + "~"


# ---------------------------------------------------------------------------- HTML
def render_html(explanation: Mapping[str, Any], png_path: str | os.PathLike, out_path: str | os.PathLike) -> Path:
    """One self-contained HTML page: the PNG of :func:`render_png` (embedded as base64) and the
    explanation as text (question, answers, objects, one table row per step)."""
    ex = explanation
    e = html.escape
    png = base64.b64encode(Path(png_path).read_bytes()).decode("ascii")
    rows = []
    for s in ex["steps"]:
        p, d = s["pnsvqa"], s["nsvqa"]
        rows.append(f"<tr><td>{s['index']}</td><td><code>{e(s['token'])}</code></td>"
                    f"<td>{e(', '.join(map(str, s['inputs'])))}</td><td>{e(_top_text(p))}</td>"
                    f"<td>{e(d['text']) if d else '(not reached)'}</td></tr>")
    objs = "".join(f"<li>{e(_object_line(o))}</li>" for o in ex["objects"])
    parts = "".join(f"<li>{e(p['label'])}</li>" for p in ex["parts"])
    program_error = f"<p class=err>program: {e(ex['program_error'])}</p>" if ex["program_error"] else ""
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{e(_title(ex))}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} table{{border-collapse:collapse;font-size:90%}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}} .err{{color:#b22}} img{{max-width:100%}}</style>
</head><body>
<h2>{e(_title(ex))}</h2>
<p class="question"><b>Question:</b> {e(ex['question'])}</p>
{program_error}<pre>{e(chr(10).join(answer_lines(ex)))}</pre>
<img alt="explanation of question {ex['question_index']}" src="data:image/png;base64,{png}">
<h3>Program and per-step results</h3>
<table><tr><th>#</th><th>step</th><th>inputs</th><th>P-NSVQA ({e(ex['answers']['pnsvqa']['model'])})</th>
<th>NS-VQA</th></tr>
{chr(10).join(rows)}
</table>
<h3>Parsed objects</h3><ul>{objs}</ul>
{f'<h3>Parsed parts</h3><ul>{parts}</ul>' if parts else ''}
</body></html>
"""
    out_path = Path(out_path)
    write_atomic(out_path, page)
    return out_path


def default_paths(run_dir: str | os.PathLike, explanation: Mapping[str, Any],
                  out_dir: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """``(<out>/<variant>_<split>_img<I>_q<Q>.png, ... .html)``; ``out`` defaults to ``RUN/explain``."""
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "explain"
    ex = explanation
    stem = f"{ex['variant']}_{ex['split']}_img{ex['image_index']}_q{ex['question_index']}"
    return out / f"{stem}.png", out / f"{stem}.html"
