"""Learning curves of scene-parser runs, read from their tensorboard logs.

A scene-parser run logs, with the training minutes of its own clock (validation time left out):

- ``detector_val/*`` every ``det_eval_every`` detector iterations: class-agnostic COCO AP50 of
  objects (``box_AP50``, ``mask_AP50``) and of the parts the scenes list (``parts_box_AP50``,
  ``parts_mask_AP50``), and ``train_minutes``;
- ``attributes_val/*`` after each attribute-head epoch: the head's accuracy on ground-truth crops;
- ``end_to_end_val/*`` after each head epoch: NS-VQA / P-NSVQA accuracy with the parsed scenes
  and ground-truth programs (``nsvqa.all``, ``pnsvqa.parts``, ...), and ``train_minutes``.

:func:`learning_curves` turns them into one record per run, its x axis the wall-clock minutes of
training since the run began (the head's minutes follow the detector's). The tensorboard files are
read with tensorboard's own ``EventAccumulator``: the logs are the one record of the run.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from nsvqa.fileio import atomic_open

def read_scalars(run_dir: str | Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of a run's tensorboard logs (``RUN/tb``): tag -> [(step, value)] by step; a
    step logged twice (a resumed run) keeps its last value."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # heavy: tensorboard, only to read logs

    tb = Path(run_dir) / "tb"
    if not tb.is_dir():
        raise FileNotFoundError(f"{tb}: no tensorboard logs (is {run_dir} a run directory?)")
    out: dict[str, dict[int, float]] = {}
    for events in sorted(tb.rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags().get("scalars", []):
            for e in acc.Scalars(tag):
                out.setdefault(tag, {})[int(e.step)] = float(e.value)
    return {tag: sorted(v.items()) for tag, v in sorted(out.items())}


def _series(scalars: Mapping[str, list[tuple[int, float]]], prefix: str) -> list[dict[str, float]]:
    """The rows of one prefix: ``{"step": s, key: value, ...}`` per logged step."""
    rows: dict[int, dict[str, float]] = {}
    for tag, points in scalars.items():
        if tag.startswith(prefix + "/"):
            key = tag[len(prefix) + 1:]
            for step, v in points:
                rows.setdefault(step, {"step": step})[key] = v
    return [rows[s] for s in sorted(rows)]


def learning_curves(run_dir: str | Path, label: str | None = None) -> dict[str, Any]:
    """One run's curves: ``{"run", "label", "detector": rows, "attributes": rows, "end_to_end":
    rows}``, each row a logged step with its values and ``minutes`` (training minutes since the
    run began: the detector's clock, then the head's after the detector's last logged minutes)."""
    scalars = read_scalars(run_dir)
    det = _series(scalars, "detector_val")
    for r in det:
        r["minutes"] = r.get("train_minutes", float("nan"))
    det_minutes = max((r["minutes"] for r in det), default=0.0)
    e2e = _series(scalars, "end_to_end_val")
    for r in e2e:
        r["minutes"] = det_minutes + r.get("train_minutes", float("nan"))
    attrs = _series(scalars, "attributes_val")
    epoch_minutes = {r["step"]: r["minutes"] for r in e2e}  # the head logs both at the end of an epoch
    for r in attrs:
        r["minutes"] = epoch_minutes.get(r["step"], float("nan"))
    return {"run": str(run_dir), "label": label or Path(run_dir).name, "detector": det, "attributes": attrs,
            "end_to_end": e2e}


def plot_curves(curves: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """One PNG, three panels against training minutes: detector AP50 (objects solid, listed parts
    dashed), the head's val accuracy on ground-truth crops (material, part name), and end-to-end
    val accuracy (NS-VQA, P-NSVQA) of every run in ``curves``. Written atomically."""
    import matplotlib  # heavy: matplotlib, only to draw

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: as above

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    panels = ((axes[0], "detector", (("box_AP50", "-", "objects box"), ("mask_AP50", ":", "objects mask"),
                                     ("parts_box_AP50", "--", "listed parts box"))),
              (axes[1], "attributes", (("object.material", "-", "material"), ("object.shape", ":", "shape"),
                                       ("part.partname", "--", "part name"))),
              (axes[2], "end_to_end", (("nsvqa.all", "-", "NS-VQA"), ("pnsvqa.all", "--", "P-NSVQA"),
                                       ("nsvqa.parts", ":", "NS-VQA, part questions"))))
    for k, c in enumerate(curves):
        color = colors[k % len(colors)]
        for ax, key, lines in panels:
            for value, style, name in lines:
                pts = [(r["minutes"], r[value]) for r in c[key] if value in r and r["minutes"] == r["minutes"]]
                if pts:
                    ax.plot(*zip(*pts), style, color=color, marker=".", label=f"{c['label']}: {name}")
    titles = ("detector, val AP50 (class-agnostic)", "attribute head, val accuracy (ground-truth crops)",
              "end to end, val accuracy (ground-truth programs)")
    for ax, title in zip(axes, titles):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("training minutes (2 CPU threads)")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    with atomic_open(path, "wb") as f:
        fig.savefig(f, dpi=110, format="png")
    plt.close(fig)
    return path


__all__ = ["read_scalars", "learning_curves", "plot_curves"]
