"""NSCL's training: the question loss and the curriculum training loop, with checkpoints (:func:`train_nscl`)."""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping

import torch

from executors.ontology import load_ontology

from baselines.common import CHECKPOINT, checkpoint_kind, image_cache
from baselines.nscl.config import NSCLConfig
from baselines.nscl.data import CurriculumSampler, NSCLSplit, collate_nscl, load_split
from baselines.nscl.executor import SoftExecutor
from baselines.nscl.inference import accuracy
from baselines.nscl.network import NSCLNet, build_net
from baselines.runs import resume_state, run_training
from nsvqa.training import RunDir, warmup_cosine
from nsvqa.training.checkpoint import save_checkpoint
from nsvqa.training.data import StepLoader
from nsvqa.training.engine import Progress, StepResult, record_seconds, train_steps


# ---------------------------------------------------------------------------- forward passes
def question_losses(net: NSCLNet, executor: SoftExecutor, data: NSCLSplit, batch: Mapping[str, Any]) -> torch.Tensor:
    """(B,) negative log-probabilities of the answers of the questions of ``batch`` (a
    :func:`collate_nscl` batch of ``data``'s questions: each image through the network once)."""
    scenes = net(batch["images"], batch["boxes"])
    qs = [data.questions[i] for i in batch["index"].tolist()]
    return torch.stack([-executor.log_prob(q.program, q.types, scenes[k], q.answer)
                        for q, k in zip(qs, batch["image_of"].tolist())])


def _save(path: Path, cfg: NSCLConfig, net: NSCLNet, majority: str, train_state: dict, extra: dict,
          finished: bool = False) -> None:
    """Write the checkpoint (a module function, so tests can interrupt a run after it); ``finished``:
    the run's last step (no optimizer state kept, :func:`nsvqa.training.checkpoint.save_checkpoint`)."""
    save_checkpoint(path, kind=checkpoint_kind("nscl"), config=asdict(cfg), state_dict=net.state_dict(),
                    vocabularies={"majority_answer": majority},
                    train_state=train_state | {"rng": torch.get_rng_state()}, extra=extra, finished=finished)


def train_nscl(cfg: NSCLConfig, out: str | Path, *, name: str = "nscl", resume: bool = False,
               progress: bool = True) -> Path:
    """Train the model registered as ``name`` on ``cfg.data``'s train split (ground-truth boxes and programs) into ``out``;
    resumable exactly. Raises like :func:`baselines.common.train_classifier`."""
    return run_training(name, cfg, out, resume=resume, total_steps=cfg.steps,
                        train=lambda run, ck: _train(cfg, run, ck, name, progress))


def _train(cfg: NSCLConfig, run: RunDir, ck: dict | None, name: str, progress: bool) -> None:
    """:func:`train_nscl` in the open run ``run``, from the checkpoint ``ck`` (None: from step 0)."""
    dev = torch.device(cfg.device)
    onto = load_ontology(cfg.ontology)
    folder = Path(cfg.data)
    path = run.path / CHECKPOINT
    t0 = time.time()

    train = load_split(folder, "train", onto, cfg, require_answer=True, limit=cfg.max_train_questions,
                       cache=image_cache(run.path, cfg, "train"), progress=progress)
    if not train.questions:
        raise ValueError(f"{folder / 'questions' / 'train_questions.json'}: no training questions")
    val_path = folder / "questions" / "val_questions.json"
    val = (load_split(folder, "val", onto, cfg, require_answer=True, limit=cfg.val_questions,
                      cache=image_cache(run.path, cfg, "val"), progress=progress)
           if cfg.val_questions and val_path.is_file() else None)
    majority = Counter(q.answer for q in train.questions).most_common(1)[0][0]
    run.log(f"data: {len(train.questions)} train questions on {len(train.files)} images, "
            f"{len(val.questions) if val else 0} val questions from {folder} ({time.time() - t0:.1f} s)")
    net = build_net(cfg, onto).to(dev)
    executor = SoftExecutor(onto, cfg.count_sigma)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(cfg.steps, cfg.warmup))
    start, extra = resume_state(run, ck, opt, sched, net.load_state_dict)
    sampler = CurriculumSampler(train, cfg)
    run.log("curriculum: " + ", ".join(
        f"stage {k} until step {int(end)}: {sum(len(v) for v in qs.values())} questions"
        for k, (end, qs) in enumerate(sampler.stages)))
    batches = StepLoader(train, collate_nscl, sampler, start=start, total=cfg.steps, device=dev)
    net.train()

    def step_fn(step: int) -> StepResult:
        loss = question_losses(net, executor, train, batches(step).data).mean()
        return StepResult(loss, {"loss": loss}, info={"stage": sampler.stage(step)})

    def checkpoint(p: Progress) -> None:
        if not p.trained:  # zero steps: an untrained model, still loadable
            _save(path, cfg, net, majority, {"step": p.step}, extra)
            return
        msg = f"step {p.step} (stage {p.info['stage']}) loss={p.values['loss']:.5f} " \
              f"smoothed={p.smoothed['loss']:.5f}"
        if val is not None and val.questions:
            acc = accuracy(net, executor, val, dev)
            extra["val_accuracy"] = acc
            run.scalars("val", {"accuracy": acc}, p.step)
            msg += f" val accuracy={acc:.4f} ({len(val.questions)} questions)"
        run.log(msg)
        record_seconds(extra, p)
        _save(path, cfg, net, majority, {"step": p.step, "optimizer": opt.state_dict(),
                                         "scheduler": sched.state_dict()}, extra, finished=p.final)

    train_steps(step_fn, opt, run, start=start, total=cfg.steps, scheduler=sched,
                clip_params=net.parameters(), clip_norm=cfg.grad_clip, phase="train", log_every=20,
                eval_every=cfg.eval_every, on_checkpoint=checkpoint, checkpoint_path=path,
                seconds_before=float(extra.get("train_seconds", 0.0)), progress=progress, desc=name,
                postfix=lambda p: {"loss": f"{p.smoothed['loss']:.4f}", "stage": p.info["stage"]})
