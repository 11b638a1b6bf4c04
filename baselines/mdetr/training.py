"""mDETR's training: grounding pretraining then QA fine-tuning, with checkpoints (:func:`train_mdetr`)."""
from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import torch

from executors.ontology import load_ontology

from baselines.common import CHECKPOINT, answer_vocabulary, checkpoint_kind, image_cache, read_qa
from baselines.mdetr.config import MDETRConfig
from baselines.mdetr.data import answer_groups, collate_grounded, encode_split
from baselines.mdetr.inference import grounding_eval, qa_accuracy
from baselines.mdetr.losses import grounding_losses, qa_loss
from baselines.mdetr.network import MDETRNet, MiniLMTextEncoder
from baselines.runs import resume_state, run_training
from nsvqa.training import RunDir, warmup_cosine
from nsvqa.training.checkpoint import save_checkpoint
from nsvqa.training.data import StepLoader
from nsvqa.training.engine import Progress, record_seconds, train_steps
from nsvqa.training.sampling import BucketedBatches


# ---------------------------------------------------------------------------- checkpoints
def _weights(model: MDETRNet) -> dict[str, torch.Tensor]:
    """The state dict to save: without a frozen MiniLM (rebuilt from its package)."""
    frozen = isinstance(model.text, MiniLMTextEncoder) and model.text.frozen
    return {k: v for k, v in model.state_dict().items() if not (frozen and k.startswith("text.bert."))}


def _load_weights(model: MDETRNet, state: dict, where: str) -> None:
    missing, unexpected = model.load_state_dict(state, strict=False)
    frozen = isinstance(model.text, MiniLMTextEncoder) and model.text.frozen
    missing = [k for k in missing if not (frozen and k.startswith("text.bert."))]
    if missing or unexpected:
        raise ValueError(f"{where}, field 'state_dict': missing {missing[:5]}, unexpected {list(unexpected)[:5]}")


def _save(path: Path, cfg: MDETRConfig, model: MDETRNet, answers: list[str], train_state: dict, extra: dict,
          finished: bool = False) -> None:
    """Write the checkpoint (a module function, so tests can interrupt a run after it); ``finished``:
    the run's last step (no optimizer state kept, :func:`nsvqa.training.checkpoint.save_checkpoint`)."""
    save_checkpoint(path, kind=checkpoint_kind("mdetr"), config=asdict(cfg), state_dict=_weights(model),
                    vocabularies={"answer": list(answers)},
                    train_state=train_state | {"rng": torch.get_rng_state()}, extra=extra, finished=finished)


def _phase_schedule(cfg: MDETRConfig):
    """LambdaLR factor of global step s: warm-up + cosine over each phase."""
    pre, fine = warmup_cosine(cfg.pretrain_steps, cfg.warmup), warmup_cosine(cfg.steps, cfg.warmup)
    return lambda s: pre(s) if s < cfg.pretrain_steps else fine(s - cfg.pretrain_steps)


# ---------------------------------------------------------------------------- training
def train_mdetr(cfg: MDETRConfig, out: str | Path, *, resume: bool = False, progress: bool = True) -> Path:
    """Train mDETR on ``cfg.data``'s train split into the run directory ``out`` (see the module
    docstring); with ``resume`` continue from its checkpoint (a finished run returns at once).

    Raises:
        ValueError: ``cfg.model`` is not ``mdetr``, a resume with a config differing in a field of
            ``MUST_MATCH``, or no training questions;
        executors.errors.FormatError / FileNotFoundError: bad or missing data (file and field named);
        nsvqa.training.NonFiniteLoss: a NaN or infinite loss.
    """
    return run_training("mdetr", cfg, out, resume=resume, total_steps=cfg.total_steps,
                        train=lambda run, ck: _train(cfg, run, ck, progress))


def _train(cfg: MDETRConfig, run: RunDir, ck: dict | None, progress: bool) -> None:
    """:func:`train_mdetr` in the open run ``run``, from the checkpoint ``ck`` (None: from step 0)."""
    total = cfg.total_steps
    dev = torch.device(cfg.device)
    onto = load_ontology(cfg.ontology)
    folder = Path(cfg.data)
    path = run.path / CHECKPOINT
    t0 = time.time()
    train = read_qa(folder, "train", onto, require_answer=True, require_image=True, limit=cfg.max_train_questions)
    if not train:
        raise ValueError(f"{folder / 'questions' / 'train_questions.json'}: no training questions")
    val_path = folder / "questions" / "val_questions.json"
    val = (read_qa(folder, "val", onto, require_answer=True, require_image=True, limit=cfg.val_questions)
           if cfg.val_questions and cfg.steps and val_path.is_file() else [])
    answers = (list(ck["vocabularies"]["answer"]) if ck is not None
               else answer_vocabulary(onto, [r.answer for r in train]))
    groups = answer_groups(answers)

    train_data = encode_split(folder, "train", train, answers, cfg, onto, targets=True,
                              cache=image_cache(run.path, cfg, "train"), progress=progress)
    val_data = encode_split(folder, "val", val, answers, cfg, onto, targets=False,
                            cache=image_cache(run.path, cfg, "val"), progress=progress)
    ground = (read_qa(folder, "val", onto, require_answer=True, require_image=True, limit=cfg.val_grounding)
              if cfg.val_grounding and val_path.is_file() else [])
    # not cached in RUN/cache: its images differ from the val questions' (a cache holds one set)
    ground_data = encode_split(folder, "val", ground, answers, cfg, onto, targets=True,
                               progress=progress) if ground else None
    n_boxes = sum(len(b) for b in train_data.boxes)
    run.log(f"data: {len(train_data)} train questions ({n_boxes} grounded boxes), {len(val_data)} val questions "
            f"from {folder}; {len(answers)} answers ({time.time() - t0:.1f} s)")

    model = MDETRNet([len(g) for g in groups], cfg).to(dev)
    text_params = ([p for p in model.text.bert.parameters() if p.requires_grad]
                   if isinstance(model.text, MiniLMTextEncoder) else [])
    tp = {id(p) for p in text_params}
    param_groups = [{"params": [p for p in model.parameters() if p.requires_grad and id(p) not in tp],
                     "lr": cfg.lr}]
    if text_params:
        param_groups.append({"params": text_params, "lr": cfg.lr_text})
    opt = torch.optim.AdamW(param_groups, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _phase_schedule(cfg))
    start, extra = resume_state(run, ck, opt, sched, lambda state: _load_weights(model, state, str(path)))
    batches = StepLoader(train_data, collate_grounded, BucketedBatches(train_data.lengths, cfg.batch, cfg.seed),
                         start=start, total=total, device=dev)

    def val_grounding(step: int) -> str:
        if ground_data is None:
            return ""
        g = grounding_eval(model, ground_data, cfg, dev)
        if not g:
            return ""
        extra.setdefault("val_grounding", []).append([step, g["l1"], g["giou"]])
        run.scalars("val", g, step)
        return f" val l1={g['l1']:.4f} giou={g['giou']:.4f} ({len(ground_data)} questions)"

    if start == 0 and total:  # where the grounding curve starts
        run.log("step 0 (untrained)" + val_grounding(0))
    model.train()

    def phase(step: int) -> str:
        return "pretrain" if step < cfg.pretrain_steps else "finetune"

    def step_fn(step: int) -> tuple[torch.Tensor, dict]:
        x = batches(step).data
        o = model(x["ids"], x["text_mask"], x["images"])
        parts = grounding_losses(o, x["targets"], x["text_mask"], cfg)
        grounding = (cfg.w_l1 * parts["l1"] + cfg.w_giou * parts["giou"] + cfg.w_token * parts["token"]
                     + cfg.w_contrastive * parts["contrastive"] + cfg.w_proposal * parts.get("proposal", 0.0))
        if phase(step) == "pretrain":
            loss = grounding
        else:
            parts["qa"] = qa_loss(o, x["answers"], groups)
            loss = cfg.finetune_grounding_weight * grounding + cfg.w_qa * parts["qa"]
        parts["loss"] = loss
        return loss, parts

    def checkpoint(p: Progress) -> None:
        state = {"step": p.step}
        if p.trained:
            msg = f"step {p.step} ({p.phase}) " + " ".join(f"{k}={v:.5f}" for k, v in p.smoothed.items())
            msg += val_grounding(p.step)
            if p.phase == "finetune" and len(val_data):
                acc = qa_accuracy(model, val_data, groups, dev)
                extra["val_accuracy"] = acc
                run.scalars("val", {"accuracy": acc}, p.step)
                msg += f" val accuracy={acc:.4f} ({len(val_data)} questions)"
            run.log(msg)
            state |= {"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}
        # zero steps asked: an untrained model, still loadable
        record_seconds(extra, p)
        _save(path, cfg, model, answers, state, extra, finished=p.final)

    train_steps(step_fn, opt, run, start=start, total=total, scheduler=sched, clip_params=model.parameters(),
                clip_norm=cfg.grad_clip, phase=phase, log_every=20, eval_every=cfg.eval_every,
                on_checkpoint=checkpoint, checkpoint_path=path,
                seconds_before=float(extra.get("train_seconds", 0.0)), progress=progress, desc="mdetr",
                postfix=lambda p: {"phase": p.phase, "loss": f"{p.smoothed['loss']:.4f}"})
