"""The learned baselines' classifier over the answer vocabulary (:class:`NeuralBaseline`), its training
loop and its prediction. Its network takes ``words`` (B, L) int64 question word ids (``<NULL>`` = 0
pads), ``lengths`` (B,) int64 and ``images`` (B, 3, H, W) float32 normalised images, or None for
question-only models, and returns logits (B, A) over the A answers. The training loop
(:func:`train_classifier`) is the project's: the run directory (:class:`nsvqa.training.RunDir`:
``config.json``, ``train.log``, ``tb/``), Adam with warm-up + cosine, gradient clipping, a stop on a
non-finite loss, validation accuracy on the first ``val_questions`` val questions every
``eval_every`` steps, and an atomic checkpoint ``baseline.pt`` (kind ``baseline_<name>``) holding
the config, the weights, the word and answer vocabularies and the training state. The batch of step
``s`` is a function of ``(seed, s)`` only (:class:`nsvqa.training.sampling.BucketedBatches`), so
``--resume`` continues exactly; the loop is :func:`nsvqa.training.engine.train_steps`.
"""
from __future__ import annotations

import inspect
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, ClassVar

import torch
from torch import nn
from torch.nn import functional as F
from tqdm import tqdm

from executors.ontology import load_ontology
from nsvqa.artifacts.questions import questions_path, read_questions
from nsvqa.training.checkpoint import load_checkpoint, save_checkpoint
from nsvqa.models import ModelSpec, PredictInputs
from nsvqa.artifacts.predictions import Prediction, load_question_meta
from nsvqa.training import RunDir, warmup_cosine
from nsvqa.training.engine import Progress, evaluating, record_seconds, train_steps
from nsvqa.training.data import StepBatch, StepLoader
from nsvqa.training.sampling import BucketedBatches, SequentialBatches
from parsers.question.vocab import Vocabulary, tokenize

from .base import Baseline
from .images import image_inputs
from .qa_encoding import EncodedQA, QARecord, answer_vocabulary, collate_qa, read_qa
from .runs import CHECKPOINT, checkpoint_kind, checkpoint_path, config_from_dict, resume_state, run_training


def network_from_config(network: type[nn.Module], cfg: Any, *args: Any) -> nn.Module:
    """``network(*args, **kw)`` where ``kw`` holds, for every keyword-only parameter of its
    constructor, the field of ``cfg`` of the same name (a parameter with a default and no such field
    keeps its default).

    Raises:
        TypeError: a keyword-only parameter without a default that ``cfg`` has no field for (named).
    """
    kw = {}
    for p in inspect.signature(network).parameters.values():
        if p.kind is not p.KEYWORD_ONLY:
            continue
        if hasattr(cfg, p.name):
            kw[p.name] = getattr(cfg, p.name)
        elif p.default is p.empty:
            raise TypeError(f"{network.__name__}: parameter {p.name!r} is no field of {type(cfg).__name__}")
    return network(*args, **kw)


class NeuralBaseline(Baseline):
    """A classifier over the answer vocabulary, trained by :func:`train_classifier`.

    Subclasses set ``config_class``, ``uses_images`` and :attr:`network` (or override
    :meth:`build_model`).
    """

    uses_images: ClassVar[bool] = False
    #: the network class: ``network(num_words, num_answers, **sizes)``, its keyword-only sizes the
    #: config's fields of the same names (:func:`network_from_config`)
    network: ClassVar[type[nn.Module] | None] = None

    def build_model(self, cfg: Any, num_words: int, num_answers: int) -> nn.Module:
        """The network: ``forward(words (B, L), lengths (B,), images (B, 3, H, W) | None)
        -> logits (B, num_answers)``. Default: :attr:`network` built from ``cfg``
        (:func:`network_from_config`)."""
        if self.network is None:
            raise TypeError(f"{type(self).__name__}: set network or override build_model")
        return network_from_config(self.network, cfg, num_words, num_answers)

    def train(self, cfg: Any, out: str | Path, *, resume: bool = False, progress: bool = True) -> Path:
        return train_classifier(self, cfg, out, resume=resume, progress=progress)

    def bind_vocabularies(self, model: nn.Module, cfg: Any, vocab: Vocabulary, answers: list[str]) -> None:
        """Called once the network is built for training, with the word and answer vocabularies
        (default: nothing; a network that ties answers to words records the pairing here)."""

    def training_questions(self, cfg: Any, folder: Path, records: list[QARecord], run_path: Path,
                           onto: Any) -> list[QARecord]:
        """The questions :func:`train_classifier` trains on, given the train file's ``records``
        (default: those; a model may add more about the same images)."""
        return records

    def training_loss(self, cfg: Any, folder: Path, records: list[QARecord], data: EncodedQA, run: Any
                      ) -> Callable[[nn.Module, StepBatch], tuple[torch.Tensor, dict[str, torch.Tensor]]]:
        """The loss of a training step, given the training questions (``records``, encoded as
        ``data``: a batch's ``indices`` are rows of both) and the run (:class:`nsvqa.training.RunDir`,
        to log to): ``(model, batch) -> (loss, values to log, "loss" among them)``. Default: the
        cross entropy of the answers."""
        def answer_loss(model: nn.Module, batch: StepBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            words, lengths, imgs, ans = batch.data
            loss = F.cross_entropy(model(words, lengths, imgs), ans)
            return loss, {"loss": loss}

        return answer_loss

    def image_inputs(self, folder: str | Path, split: str, filenames: list[str], cfg: Any, run: Path | None = None,
                     progress: bool = False,
                     inputs: PredictInputs | None = None) -> tuple[torch.Tensor, dict[str, int]]:
        """What the network reads of the images ``filenames`` of ``FOLDER``'s split: a tensor whose
        row ``r`` is one image's input (collated as the ``images`` argument) and file name -> row.
        ``inputs``: the run's parses at prediction time (None while training). Default:
        :func:`baselines.images.image_inputs` (pixels or the frozen backbone's cached maps)."""
        return image_inputs(folder, split, filenames, cfg, run, progress)

    def load(self, run_dir: str | Path, device: str = "cpu") -> tuple[nn.Module, Any, Vocabulary, list[str]]:
        """(network in eval mode, config, word vocabulary, answers) from ``RUN_DIR/baseline.pt``
        (or that file itself).

        Raises:
            nsvqa.training.checkpoint.CheckpointError: no checkpoint, or one of another baseline.
        """
        path = checkpoint_path(run_dir)
        ck = load_checkpoint(path, kind=checkpoint_kind(self.name))
        cfg = config_from_dict(self.config_class, ck["config"], str(path))
        vocab = Vocabulary.from_dict(ck["vocabularies"]["question"], f"{path}, vocabularies.question")
        answers = list(ck["vocabularies"]["answer"])
        model = self.build_model(cfg, len(vocab), len(answers))
        model.load_state_dict(ck["state_dict"])
        return model.to(device).eval(), cfg, vocab, answers

    def predict(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "test", *,
                spec: ModelSpec | None = None, inputs: PredictInputs = PredictInputs(), device: str = "cpu",
                progress: bool = False, batch: int = 256) -> list[Prediction]:
        """The most probable answer of each question, with its softmax probability."""
        model, cfg, vocab, answers = self.load(run_dir, device)
        onto = load_ontology(cfg.ontology)
        folder = Path(root) / variant
        questions = read_questions(questions_path(folder, split), onto, require_text=True, require_program=True,
                                   require_answer=True, require_image=self.uses_images)  # read once
        metas = load_question_meta(root, variant, split, ontology=onto, questions=questions)
        records = list(questions)
        images = None
        if self.uses_images:
            images = self.image_inputs(folder, split, [r.image_filename for r in records], cfg, progress=progress,
                                       inputs=inputs)
        data = EncodedQA.build(records, vocab, answers, images)
        out: list[Prediction] = []
        with torch.no_grad():
            for b in tqdm(StepLoader(data, collate_qa, SequentialBatches(len(data), batch), device=device),
                          desc=f"{self.name} {variant}", disable=not progress):
                words, lengths, imgs, _ = b.data
                prob, arg = F.softmax(model(words, lengths, imgs).float(), dim=1).max(dim=1)
                for i, p, a in zip(b.indices, prob.tolist(), arg.tolist()):
                    out.append(metas[i].prediction(answers[a], min(1.0, max(0.0, p))))
        return out


def _save(path: Path, name: str, cfg: Any, model: nn.Module, vocab: Vocabulary, answers: list[str],
          train_state: dict, extra: dict, finished: bool = False) -> None:
    """Write the checkpoint (a module function, so tests can interrupt a run after it); ``finished``:
    the run's last step (no optimizer state kept, :func:`nsvqa.training.checkpoint.save_checkpoint`)."""
    save_checkpoint(path, kind=checkpoint_kind(name), config=asdict(cfg), state_dict=model.state_dict(),
                    vocabularies={"question": vocab.to_dict(), "answer": list(answers)},
                    train_state=train_state | {"rng": torch.get_rng_state()}, extra=extra, finished=finished)


def accuracy(model: nn.Module, data: EncodedQA, device: torch.device, batch: int = 256) -> float:
    """Share of questions whose argmax answer is the labelled one (unknown labels count wrong)."""
    if len(data) == 0:
        return float("nan")
    hits = 0
    with evaluating(model):
        for b in StepLoader(data, collate_qa, SequentialBatches(len(data), batch), device=device):
            words, lengths, imgs, ans = b.data
            hits += int((model(words, lengths, imgs).argmax(1) == ans).sum())
    return hits / len(data)


def train_classifier(baseline: NeuralBaseline, cfg: Any, out: str | Path, *, resume: bool = False,
                     progress: bool = True) -> Path:
    """Train ``baseline``'s network on ``cfg.data``'s train split into the run directory ``out``.

    With ``resume`` and a checkpoint in ``out``, training continues from its step (vocabularies,
    weights, optimizer, scheduler and RNG restored); a finished run returns at once. Without
    ``resume`` the run starts over.

    Raises:
        ValueError: ``cfg.model`` is not the baseline's name, a resume with a config that differs
            in a field of ``MUST_MATCH``, or no training questions;
        executors.errors.FormatError / FileNotFoundError: bad or missing data (file and field named);
        nsvqa.training.NonFiniteLoss: a NaN or infinite loss.
    """
    return run_training(baseline.name, cfg, out, resume=resume, total_steps=cfg.steps,
                        train=lambda run, ck: _train(baseline, cfg, run, ck, progress))


def _train(baseline: NeuralBaseline, cfg: Any, run: RunDir, ck: dict | None, progress: bool) -> None:
    """:func:`train_classifier` in the open run ``run``, from the checkpoint ``ck`` (None: from step 0)."""
    dev = torch.device(cfg.device)
    onto = load_ontology(cfg.ontology)
    folder = Path(cfg.data)
    path = run.path / CHECKPOINT
    t0 = time.time()
    train = read_qa(folder, "train", onto, require_answer=True, require_image=baseline.uses_images,
                    limit=cfg.max_train_questions)
    if not train:
        raise ValueError(f"{folder / 'questions' / 'train_questions.json'}: no training questions")
    train = baseline.training_questions(cfg, folder, train, run.path, onto)
    val_path = folder / "questions" / "val_questions.json"
    val = (read_qa(folder, "val", onto, require_answer=True, require_image=baseline.uses_images,
                   limit=cfg.val_questions) if cfg.val_questions and val_path.is_file() else [])
    if ck is not None:
        vocab = Vocabulary.from_dict(ck["vocabularies"]["question"], f"{path}, vocabularies.question")
        answers = list(ck["vocabularies"]["answer"])
    else:
        vocab = Vocabulary.build((tokenize(r.question) for r in train), cfg.min_word_count)
        answers = answer_vocabulary(onto, [r.answer for r in train])

    def images(records: list[QARecord], split: str):
        if not baseline.uses_images or not records:
            return None
        return baseline.image_inputs(folder, split, [r.image_filename for r in records], cfg, run.path, progress)

    train_data = EncodedQA.build(train, vocab, answers, images(train, "train"))
    val_data = EncodedQA.build(val, vocab, answers, images(val, "val"))
    run.log(f"data: {len(train_data)} train questions, {len(val_data)} val questions from {folder}; "
            f"{len(vocab)} words, {len(answers)} answers ({time.time() - t0:.1f} s)")

    model = baseline.build_model(cfg, len(vocab), len(answers)).to(dev)
    baseline.bind_vocabularies(model, cfg, vocab, list(answers))
    loss_fn = baseline.training_loss(cfg, folder, train, train_data, run)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(cfg.steps, cfg.warmup))
    start, extra = resume_state(run, ck, opt, sched, model.load_state_dict)
    batches = StepLoader(train_data, collate_qa, BucketedBatches(train_data.lengths, cfg.batch, cfg.seed),
                         start=start, total=cfg.steps, device=dev)
    model.train()

    def step_fn(step: int) -> tuple[torch.Tensor, dict]:
        return loss_fn(model, batches(step))

    def checkpoint(p: Progress) -> None:
        if not p.trained:  # zero steps asked: an untrained model, still loadable
            _save(path, baseline.name, cfg, model, vocab, answers, {"step": p.step}, extra)
            return
        msg = f"step {p.step} loss={p.values['loss']:.5f} smoothed={p.smoothed['loss']:.5f}"
        if len(val_data):
            acc = accuracy(model, val_data, dev)
            extra["val_accuracy"] = acc
            run.scalars("val", {"accuracy": acc}, p.step)
            msg += f" val accuracy={acc:.4f} ({len(val_data)} questions)"
        run.log(msg)
        record_seconds(extra, p)
        _save(path, baseline.name, cfg, model, vocab, answers,
              {"step": p.step, "optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, extra,
              finished=p.final)

    train_steps(step_fn, opt, run, start=start, total=cfg.steps, scheduler=sched,
                clip_params=model.parameters(), clip_norm=cfg.grad_clip, phase="train", log_every=20,
                eval_every=cfg.eval_every, on_checkpoint=checkpoint, checkpoint_path=path,
                seconds_before=float(extra.get("train_seconds", 0.0)), progress=progress, desc=baseline.name)


__all__ = ["NeuralBaseline", "network_from_config", "accuracy", "train_classifier"]
