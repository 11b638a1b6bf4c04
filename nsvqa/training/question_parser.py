"""Training of the question parser: supervised seq2seq on ground-truth programs, then optionally
REINFORCE with the executor's answer on the ground-truth scene as the reward (NS-VQA's recipe).

The vocabularies are built from the training questions and programs and saved in the checkpoint
(``RUN_DIR/question_parser.pt``, kind ``question_parser``), which is written atomically after every
validation and at the end of each stage, and holds the optimizer, scheduler, RNG and step for
``--resume``. The batch of step ``s`` is a function of ``(seed, s)`` only (per-epoch permutations,
bucketed by question length: :class:`nsvqa.training.sampling.BucketedBatches`), so a resumed run sees
the same data as an uninterrupted one. Both stages run on :func:`nsvqa.training.engine.train_steps`.

Launched by ``torchrun`` (``WORLD_SIZE`` > 1) both stages train data-parallel
(:mod:`nsvqa.training.distributed`): ``batch`` and ``reinforce_batch`` stay the global batch of a step, each
rank takes its slice of it, the loss is weighted so that the averaged gradient is the one of the
whole batch (mean over its target tokens, resp. questions), and rank 0 alone validates and writes.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

from executors.deterministic import DeterministicExecutor
from executors.errors import ExecutionError
from executors.io import load_scenes, normalize_answer, question_scene, scene_lookup
from executors.ontology import Ontology, load_ontology
from nsvqa.training.checkpoint import load_checkpoint, save_checkpoint
from nsvqa.training.distributed import DistInfo, Dispatch, all_sum, shard, wrap
from nsvqa.training.loading import QUESTION_CHECKPOINT, QUESTION_KIND
from nsvqa.training.more_questions import EXTRA_QUESTIONS, extra_questions
from nsvqa.training.question_config import QuestionParserConfig
from nsvqa.evaluation.question_parser import QuestionItem, read_question_items, score_parses
from nsvqa.training import RunDir, warmup_cosine
from nsvqa.training.data import StepLoader
from nsvqa.training.engine import (Progress, StepResult, record_seconds, restore_train_state, train_steps,
                                   training_run)
from nsvqa.training.sampling import BucketedBatches
from parsers.question.decode import ids_to_program
from parsers.question.question_parser import QuestionParser
from parsers.question.seq2seq import Seq2Seq, pad_sequences
from parsers.question.vocab import NULL_ID, Vocabulary, build_vocabularies, tokenize



# ------------------------------------------------------------------------------------- data

def split_paths(root: str | Path, split: str) -> tuple[Path, Path]:
    """(questions file, scenes file) of a split of ``ROOT/VARIANT``."""
    root = Path(root)
    return root / "questions" / f"{split}_questions.json", root / "scenes" / f"{split}_scenes.json"


@dataclass
class EncodedQuestions(Dataset):
    """A split ready for the network: a Dataset of questions (collated by :func:`collate_questions`).

    ``words[i]`` question word ids, ``targets[i]`` ``<START> program ids <END>`` (unknown program
    tokens -> ``<UNK>``), ``lengths`` (N,) int64 numbers of words; ``items`` the source records.
    Item ``i``: ``{"words": (L_i,) int64, "targets": (T_i + 2,) int64}``.
    """

    items: list[QuestionItem]
    words: list[list[int]]
    targets: list[list[int]]
    lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.items)

    @staticmethod
    def build(items: Sequence[QuestionItem], qv: Vocabulary, pv: Vocabulary) -> "EncodedQuestions":
        words = [qv.encode(tokenize(it.question)) for it in items]
        targets = [pv.encode(it.gold_tokens or (), add_start_end=True) for it in items]
        return EncodedQuestions(list(items), words, targets, np.array([max(1, len(w)) for w in words], dtype=np.int64))

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"words": torch.tensor(self.words[i], dtype=torch.int64),
                "targets": torch.tensor(self.targets[i], dtype=torch.int64)}


def collate_questions(items: Sequence[dict[str, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Items of :class:`EncodedQuestions` -> words (B, L) int64, lengths (B,) int64, targets
    (B, T+2) int64 (:func:`parsers.question.seq2seq.pad_sequences`)."""
    w, n = pad_sequences([it["words"].tolist() for it in items])
    t, _ = pad_sequences([it["targets"].tolist() for it in items])
    return w, n, t


# ------------------------------------------------------------------------------- checkpoints

def evaluate(parser: QuestionParser, items: Sequence[QuestionItem], scenes=None, beam_size: int = 1) -> dict:
    """Exact / valid (/ answer accuracy with scenes) of ``parser`` on ``items``."""
    parsed = parser.parse([it.question for it in items], beam_size=beam_size)
    scores, _ = score_parses(items, parsed, parser.ontology, scenes)
    return scores.summary()


# ----------------------------------------------------------------------------------- training

class _Trainer:
    """State shared by the two stages of one run."""

    def __init__(self, cfg: QuestionParserConfig, run: RunDir, resume: bool, progress: bool,
                 dist: DistInfo | None = None):
        self.dist = DistInfo(device=cfg.device) if dist is None else dist
        self.cfg, self.run, self.progress = cfg, run, progress and self.dist.is_main
        self.dev = torch.device(self.dist.device)
        self.onto: Ontology = load_ontology(cfg.ontology)
        self.path = run.path / QUESTION_CHECKPOINT
        qpath, _ = split_paths(cfg.data, "train")
        t0 = time.time()
        train_items = read_question_items(qpath, self.onto, require_program=True, limit=cfg.max_train_questions)
        if not train_items:
            raise ValueError(f"{qpath}: no training questions")
        n_file, extra = len(train_items), ""
        if cfg.extra_questions_per_image > 0:
            more = extra_questions(cfg.data, "train", cfg.extra_questions_per_image, run.path / EXTRA_QUESTIONS,
                                   seed=cfg.seed, ontology=self.onto)
            train_items += [q for q in more if q.question is not None and q.program is not None]
            extra = (f" ({n_file} of the file, {len(train_items) - n_file} more of its scenes in "
                     f"{run.path / EXTRA_QUESTIONS})")
        vqpath, _ = split_paths(cfg.data, "val")
        self.val_items = (read_question_items(vqpath, self.onto, require_program=True, limit=cfg.val_questions)
                          if cfg.val_questions and vqpath.is_file() else [])
        self.ck = load_checkpoint(self.path, kind=QUESTION_KIND) if resume and self.path.exists() else None
        if self.ck is not None:
            self.qv = Vocabulary.from_dict(self.ck["vocabularies"]["question"], f"{self.path}, vocabularies.question")
            self.pv = Vocabulary.from_dict(self.ck["vocabularies"]["program"], f"{self.path}, vocabularies.program")
        else:
            self.qv, self.pv = build_vocabularies((it.question for it in train_items),
                                                  (it.gold_tokens for it in train_items), cfg.min_word_count)
        self.train = EncodedQuestions.build(train_items, self.qv, self.pv)
        run.log(f"data: {len(train_items)} train questions from {qpath}{extra}, {len(self.val_items)} val questions; "
                f"vocabularies: {len(self.qv)} words, {len(self.pv)} program tokens ({time.time() - t0:.1f} s)")
        self.model = Seq2Seq.from_config(asdict(cfg), len(self.qv), len(self.pv)).to(self.dev)
        if self.ck is not None:
            self.model.load_state_dict(self.ck["state_dict"])
        self.parser = QuestionParser(self.model, self.qv, self.pv, self.onto, self.dev)
        # DDP synchronises what runs through its forward: the model's loss and sample methods
        self.net = wrap(Dispatch(self.model), self.dist)
        self.extra: dict[str, Any] = dict(self.ck["extra"]) if self.ck is not None else {}

    def vocab(self) -> dict:
        return {"question": self.qv.to_dict(), "program": self.pv.to_dict()}

    def save(self, train_state: dict, finished: bool = False) -> None:
        """Write the checkpoint (called on rank 0 only); ``finished``: the last stage's last step."""
        save_checkpoint(self.path, kind=QUESTION_KIND, config=asdict(self.cfg), state_dict=self.model.state_dict(),
                        vocabularies=self.vocab(), train_state=train_state | {"rng": torch.get_rng_state()},
                        extra=self.extra, finished=finished)

    def validate(self, stage: str, step: int) -> dict:
        """Exact/valid on the val questions (called on rank 0 only)."""
        if not self.val_items:
            return {}
        m = evaluate(self.parser, self.val_items)
        self.model.train()
        vals = {"exact": m["exact"], "valid": m["valid"]}
        self.run.scalars(f"{stage}_val", vals, step)
        self.run.log(f"{stage} step {step} val ({m['n']} questions) exact={m['exact']:.4f} valid={m['valid']:.4f}")
        return vals

    # ------------------------------------------------------------------ supervised
    def supervised(self) -> None:
        """Seq2seq cross-entropy on the ground-truth programs (resumed from a supervised-stage
        checkpoint; skipped when the checkpoint is already past this stage)."""
        cfg = self.cfg
        opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(cfg.steps, min(200, max(1, cfg.steps // 20))))
        start = 0
        ts = self.ck["train_state"] if self.ck is not None else {}
        if ts.get("stage") == "supervised":
            start = restore_train_state(ts, opt, sched)
            self.run.log(f"supervised: resumed at step {start} from {self.path}")
        elif ts.get("stage") == "reinforce":
            return  # supervised stage already complete
        schedule = BucketedBatches(self.train.lengths, cfg.batch, cfg.seed)
        batches = self._loader(schedule, start, cfg.steps)
        dist = self.dist
        self.model.train()

        def step_fn(step: int) -> StepResult:
            b = batches(step)
            words, lengths, targets = b.data
            if not dist.enabled:
                loss = self.net("loss", words, lengths, targets)
                return StepResult(loss, {"loss": loss})
            loss, v = self._shard_loss(words, lengths, targets, has_share=not b.stand_in)
            return StepResult(loss, {"loss": v}, reduced=True)  # the whole batch's loss: every rank stops together

        def checkpoint(p: Progress) -> None:
            state = {"stage": "reinforce", "step": 0}  # at the end (or zero steps): the next stage starts fresh
            if p.trained:
                self.run.log(f"supervised step {p.step} loss={p.values['loss']:.5f} smoothed={p.smoothed['loss']:.5f}")
                val = self.validate("supervised", p.step)
                record_seconds(self.extra, p, "supervised_seconds", per_step=False)
                self.extra["supervised_val"] = val
                if not p.final:
                    state = {"stage": "supervised", "step": p.step, "optimizer": opt.state_dict(),
                             "scheduler": sched.state_dict()}
            self.save(state)

        train_steps(step_fn, opt, self.run, start=start, total=cfg.steps, scheduler=sched,
                    clip_params=self.model.parameters(), clip_norm=cfg.grad_clip, phase="supervised", log_every=20,
                    eval_every=cfg.eval_every, on_checkpoint=checkpoint, checkpoint_path=self.path, dist=dist,
                    rank_seed=cfg.seed, seconds_before=float(self.extra.get("supervised_seconds", 0.0)),
                    progress=self.progress, desc="question parser")

    def _loader(self, schedule: BucketedBatches, start: int, total: int) -> StepLoader:
        """The batches of steps ``start .. total - 1`` of ``schedule``, on the model's device; in a
        data-parallel job this rank's slice of each (:func:`nsvqa.training.distributed.shard`; a
        rank left without a question gets the batch's first one as a stand-in)."""
        dist = self.dist
        select = (lambda idx: shard(idx, dist.rank, dist.world_size)) if dist.enabled else None
        return StepLoader(self.train, collate_questions, schedule, start=start, total=total, device=self.dev,
                          select=select)

    def _shard_loss(self, words: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor, *,
                    has_share: bool) -> tuple[torch.Tensor, float]:
        """This rank's part of the loss of a global batch (data-parallel only), from the batch of
        its slice (:meth:`_loader`).

        The rank's summed token cross-entropy over the batch's target tokens, times the world size
        (DDP averages gradients over the ranks): the averaged gradient is the one of the model's
        mean-per-token loss on the whole batch. A rank whose slice is empty (``has_share`` False: a
        last batch shorter than the world size) runs its stand-in question with weight 0, so that it
        joins the reduction. Returns (loss to backpropagate, the whole batch's mean loss).
        """
        dist = self.dist
        tokens = float((targets[:, 1:] != NULL_ID).sum()) if has_share else 0.0
        mean = self.net("loss", words, lengths, targets)
        total_tokens, total_loss = all_sum(dist, [tokens, float(mean.detach()) * tokens])
        return mean * (tokens * dist.world_size / total_tokens), total_loss / total_tokens

    # ------------------------------------------------------------------ REINFORCE
    def reinforce(self) -> None:
        """Policy gradient with reward 1 when the sampled program answers correctly on the ground-
        truth train scene (0 otherwise, invalid decodes included), minus a moving-average baseline."""
        cfg = self.cfg
        _, spath = split_paths(cfg.data, "train")
        scenes, _ = load_scenes(spath, self.onto)
        lookup = scene_lookup(scenes)
        scene_of = [question_scene(it.record, lookup, f"{cfg.data} train question {it.index}")
                    for it in self.train.items]
        executor = DeterministicExecutor(self.onto)
        opt = torch.optim.Adam(self.model.parameters(), lr=cfg.reinforce_lr)
        ck = load_checkpoint(self.path, kind=QUESTION_KIND) if self.path.exists() else None
        ts = ck["train_state"] if ck is not None else {}
        start, baseline = 0, None
        if ts.get("stage") == "reinforce" and int(ts.get("step", 0)) > 0:
            start, baseline = restore_train_state(ts, opt), ts.get("baseline")
            self.run.log(f"reinforce: resumed at step {start} from {self.path}")
        else:
            torch.manual_seed(cfg.seed + 1)  # dropout draws of this stage do not depend on the first one
        schedule = BucketedBatches(self.train.lengths, cfg.reinforce_batch, cfg.seed + 1)
        # in a data-parallel job this rank's slice (one question with weight 0 when it is empty)
        batches = self._loader(schedule, start, cfg.reinforce_steps)
        dist = self.dist
        self.model.train()

        def step_fn(step: int) -> StepResult:
            nonlocal baseline
            b = batches(step)
            idx = b.indices
            words, lengths, _ = b.data
            # sampling draws from (seed, step) (and the rank), on the model's device
            gen = torch.Generator(device=self.dev).manual_seed(cfg.seed * 1_000_003 + step + (dist.rank << 40))
            ids, logp = self.net("sample", words, lengths, generator=gen)
            rewards = torch.zeros(len(idx), device=self.dev)
            for r, (i, row) in enumerate(zip(idx, ids.tolist())):
                p = ids_to_program(row, self.pv, self.onto)
                if p.program is None:
                    continue
                try:
                    ans = executor.run(p.program, scenes[scene_of[i]], trace=False).answer
                except ExecutionError:
                    continue
                rewards[r] = float(normalize_answer(ans) == normalize_answer(self.train.items[i].record.get("answer")))
            if not dist.enabled:
                mean_r = float(rewards.mean())
                baseline = mean_r if baseline is None else 0.9 * baseline + 0.1 * mean_r
                loss = -((rewards - baseline) * logp).mean()
                return StepResult(loss, {"loss": loss, "reward": mean_r}, info={"baseline": baseline})
            # the whole batch's mean reward, baseline and loss on every rank
            n_mine = 0 if b.stand_in else len(idx)
            weight = torch.full((len(idx),), float(n_mine > 0), device=self.dev)
            lp = (logp * weight).detach()
            reward_sum, n, lp_sum, rlp_sum = all_sum(dist, [float((rewards * weight).sum()), float(n_mine),
                                                            float(lp.sum()), float((rewards * lp).sum())])
            mean_r = reward_sum / n
            baseline = mean_r if baseline is None else 0.9 * baseline + 0.1 * mean_r
            # DDP averages over the ranks: the gradient is the one of the whole batch's mean loss
            loss = -((rewards - baseline) * logp * weight).sum() * (dist.world_size / n)
            global_loss = -(rlp_sum - baseline * lp_sum) / n
            return StepResult(loss, {"loss": global_loss, "reward": mean_r}, info={"baseline": baseline}, reduced=True)

        def checkpoint(p: Progress) -> None:
            if not p.trained:
                return  # nothing trained: the supervised stage's checkpoint stands
            self.run.log(f"reinforce step {p.step} reward={p.values['reward']:.4f} baseline={p.info['baseline']:.4f}")
            self.extra["reinforce_val"] = self.validate("reinforce", p.step)
            record_seconds(self.extra, p, "reinforce_seconds", per_step=False)
            self.save({"stage": "reinforce", "step": p.step, "optimizer": opt.state_dict(),
                       "baseline": p.info["baseline"]}, finished=p.final)

        train_steps(step_fn, opt, self.run, start=start, total=cfg.reinforce_steps, clip_params=self.model.parameters(),
                    clip_norm=cfg.grad_clip, phase="reinforce", log_every=10, eval_every=cfg.eval_every,
                    on_checkpoint=checkpoint, checkpoint_path=self.path, dist=dist, rank_seed=cfg.seed + 1,
                    seconds_before=float(self.extra.get("reinforce_seconds", 0.0)), progress=self.progress,
                    desc="reinforce", postfix=lambda p: {"reward": f"{p.info['baseline']:.3f}"})


def train_question_parser(cfg: QuestionParserConfig, out: str | Path, *, resume: bool = False,
                          progress: bool = True) -> RunDir:
    """Supervised training (and REINFORCE when ``cfg.reinforce``) into the run directory ``out``.

    Launched by torchrun (``WORLD_SIZE`` > 1) both stages train data-parallel; rank 0 writes ``out``
    and returns its RunDir, the other ranks a :class:`nsvqa.training.distributed.QuietRun` on the same path.
    """
    reinforce = cfg.reinforce and cfg.reinforce_steps > 0
    batches = {"batch": cfg.batch} | ({"reinforce_batch": cfg.reinforce_batch} if reinforce else {})
    with training_run(cfg, out, resume=resume, **batches) as (run, dist):
        tr = _Trainer(cfg, run, resume, progress, dist)
        tr.supervised()
        if reinforce:
            tr.reinforce()
    return run


__all__ = ["EncodedQuestions", "collate_questions", "train_question_parser", "evaluate", "split_paths"]
