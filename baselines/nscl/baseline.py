"""The registered NSCL baseline (:class:`NSCLBaseline`): config, train, tune, predict."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Sequence

import torch

from executors.errors import FormatError
from executors.ontology import Ontology, load_ontology

from baselines.base import Baseline
from baselines.common import checkpoint_kind, checkpoint_path, config_from_dict
from baselines.nscl.config import MIN_SCORE_CANDIDATES, NSCLConfig
from baselines.nscl.data import load_split, parsed_programs
from baselines.nscl.executor import SoftExecutor
from baselines.nscl.inference import answer_all, concept_accuracy
from baselines.nscl.network import NSCLNet, build_net
from baselines.nscl.training import train_nscl
from nsvqa.artifacts.likelihoods import read_likelihoods
from nsvqa.artifacts.predictions import Prediction, load_question_meta
from nsvqa.artifacts.questions import questions_path, read_questions
from nsvqa.artifacts.scenes import read_scenes, scenes_path
from nsvqa.evaluation import accuracy as score
from nsvqa.fileio import sha256_file, write_json_atomic
from nsvqa.models import ModelSpec, PredictInputs, TUNED, read_tuned
from nsvqa.training.checkpoint import load_checkpoint


class NSCLBaseline(Baseline):
    """NSCL: concepts learned from QA through a quasi-symbolic executor over RoI object features."""

    family = "modular"

    config_class = NSCLConfig
    uses_parses = True  # detections and parsed programs at test time
    supports_gt_programs = True  # detections with the ground-truth programs (nscl+gtprog)

    def build_model(self, cfg: NSCLConfig, onto: Ontology) -> NSCLNet:
        return build_net(cfg, onto)

    def load(self, run_dir: str | Path, device: str = "cpu") -> tuple[NSCLNet, NSCLConfig, str]:
        """(network in eval mode, config, majority answer) of ``RUN_DIR/baseline.pt``."""
        path = checkpoint_path(run_dir)
        ck = load_checkpoint(path, kind=checkpoint_kind(self.name))
        cfg = config_from_dict(NSCLConfig, ck["config"], str(path))
        net = self.build_model(cfg, load_ontology(cfg.ontology))
        net.load_state_dict(ck["state_dict"])
        return net.to(device).eval(), cfg, str(ck["vocabularies"]["majority_answer"])

    def train(self, cfg: NSCLConfig, out: str | Path, *, resume: bool = False, progress: bool = True) -> Path:
        """:func:`baselines.nscl.training.train_nscl` under this model's name."""
        return train_nscl(cfg, out, name=self.name, resume=resume, progress=progress)

    def concept_accuracy(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "val", *,
                         device: str = "cpu") -> dict[str, float]:
        """:func:`concept_accuracy` of the trained run on the objects of ``ROOT/VARIANT``'s split
        (those of images with questions), with the ground-truth boxes."""
        net, cfg, _ = self.load(run_dir, device)
        onto = load_ontology(cfg.ontology)
        folder = Path(root) / variant
        data = load_split(folder, split, onto, cfg, require_answer=False)
        scenes = {s.image_filename: s.symbolic(onto) for s in read_scenes(scenes_path(folder, split))}
        return concept_accuracy(net, data, scenes, onto, torch.device(device))

    def tune(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "val", *,
             spec: ModelSpec | None = None, inputs: PredictInputs = PredictInputs(), device: str = "cpu",
             candidates: Sequence[float] = MIN_SCORE_CANDIDATES) -> dict:
        """Choose the detections' score cut on ``ROOT/VARIANT``'s ``split`` (the val split; never a
        test split) with ``inputs`` (the run's parses of it): the cut of ``candidates`` with the best
        accuracy (the higher cut on a tie), saved in ``RUN_DIR/tuned.json`` with every cut's
        accuracy, for :meth:`predict`. Reused while the checkpoint and inputs are the same.
        Without detections (ground-truth boxes) there is nothing to choose: returns ``{}``."""
        if inputs.likelihoods is None:
            return {}
        out = Path(run_dir) / TUNED
        key = {"checkpoint": sha256_file(checkpoint_path(run_dir)), "likelihoods": sha256_file(inputs.likelihoods),
               "programs": sha256_file(inputs.programs) if inputs.programs is not None else None,
               "variant": variant, "split": split, "candidates": [float(c) for c in candidates]}
        old = read_tuned(run_dir)
        if old is not None and old.get("key") == key:
            return old
        runs = self._predict_at(run_dir, root, variant, split, inputs, [float(c) for c in candidates], device=device)
        acc = {float(c): score(preds).accuracy for c, preds in zip(candidates, runs)}
        best = max(acc, key=lambda c: (acc[c], c))
        result = {"min_score": best, "accuracy_by_min_score": {str(c): a for c, a in acc.items()}, "key": key}
        write_json_atomic(out, result, indent=1)
        return result

    def predict(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "test", *,
                spec: ModelSpec | None = None, inputs: PredictInputs = PredictInputs(), device: str = "cpu",
                progress: bool = False, min_score: float | None = None) -> list[Prediction]:
        """One prediction per question of ``ROOT/VARIANT``'s split; ``inputs.likelihoods`` (a scene
        parser's detections, kept from ``min_score``: default the cut :meth:`tune` chose on val
        (``RUN_DIR/tuned.json``), else the config's) and ``inputs.programs`` (a question parser's)
        replace the ground-truth boxes and programs where given."""
        tuned = read_tuned(run_dir) if min_score is None else None
        if tuned is not None:
            min_score = tuned["min_score"]
        return self._predict_at(run_dir, root, variant, split, inputs, [min_score], device=device,
                                progress=progress)[0]

    def _predict_at(self, run_dir: str | Path, root: str | Path, variant: str, split: str, inputs: PredictInputs,
                    cuts: Sequence[float | None], *, device: str = "cpu", progress: bool = False) -> list[list[Prediction]]:
        """The predictions of :meth:`predict` at each detection cut of ``cuts`` (None: the
        config's), the checkpoint, questions, detections and programs read once for all."""
        net, cfg, majority = self.load(run_dir, device)
        onto = load_ontology(cfg.ontology)
        folder = Path(root) / variant
        likelihoods, programs = inputs.likelihoods, inputs.programs
        questions = read_questions(questions_path(folder, split), onto, require_program=True, require_answer=True,
                                   require_image=True, require_valid=programs is None)  # read once
        metas = load_question_meta(root, variant, split, ontology=onto, questions=questions)
        detections = read_likelihoods(likelihoods, onto) if likelihoods is not None else None
        progs = parsed_programs(programs, questions) if programs is not None else None
        executor = SoftExecutor(onto, cfg.count_sigma)
        runs = []
        for cut in cuts:
            if cut is not None:
                cfg = NSCLConfig(**(asdict(cfg) | {"min_score": float(cut)}))
                cfg.check()
            boxes = detections.boxes(cfg.min_score) if detections is not None else None
            data = load_split(folder, split, onto, cfg, require_answer=False, boxes=boxes, programs=progs,
                              progress=progress, questions=questions)
            if len(data.questions) != len(metas):
                raise FormatError(f"{folder}: {len(data.questions)} questions but {len(metas)} labels for split "
                                  f"{split!r}")
            got = answer_all(net, executor, data, torch.device(device), progress=progress, desc=f"nscl {variant}")
            out = []
            for meta, q, g in zip(metas, data.questions, got):
                if g is not None:
                    out.append(meta.prediction(g[0], g[1]))
                else:  # no usable program, or no box in the image: the training set's most frequent answer
                    out.append(meta.prediction(majority, None, invalid_program=q.program is None,
                                               execution_error=q.program is not None, guessed=True))
            runs.append(out)
        return runs
