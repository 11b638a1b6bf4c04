"""Training of the question parser: supervised seq2seq on ground-truth programs, then optionally
REINFORCE with the executor's answer on the ground-truth scene as the reward (NS-VQA's recipe).

The vocabularies are built from the training questions and programs and saved in the checkpoint
(``RUN_DIR/question_parser.pt``, kind ``question_parser``), which is written atomically after every
validation and at the end of each stage, and holds the optimizer, scheduler, RNG and step for
``--resume``. The batch of step ``s`` is a function of ``(seed, s)`` only (per-epoch permutations,
bucketed by question length), so a resumed run sees the same data as an uninterrupted one.

Launched by ``torchrun`` (``WORLD_SIZE`` > 1) both stages train data-parallel
(:mod:`nsvqa.distributed`): ``batch`` and ``reinforce_batch`` stay the global batch of a step, each
rank takes its slice of it, the loss is weighted so that the averaged gradient is the one of the
whole batch (mean over its target tokens, resp. questions), and rank 0 alone validates and writes.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from executors.deterministic import DeterministicExecutor
from executors.errors import ExecutionError
from executors.io import load_scenes, normalize_answer, question_scene, scene_lookup
from executors.ontology import Ontology, load_ontology
from nsvqa.checkpoint import load_checkpoint, save_checkpoint
from nsvqa.distributed import (DistInfo, Dispatch, all_sum, barrier, check_global_batch, cleanup, init_from_env,
                               open_run, seed_rank, shard, wrap)
from nsvqa.loading import QUESTION_CHECKPOINT as CHECKPOINT, QUESTION_KIND as KIND
from nsvqa.loading import load_question_parser as parser_from_checkpoint  # its former name and home
from nsvqa.question_config import PROFILES, QuestionParserConfig, QuestionTrainProfile  # re-exported
from nsvqa.question_eval import QuestionItem, read_question_items, score_parses
from nsvqa.training import RunDir, check_finite, seed_everything, warmup_cosine
from parsers.question.decode import ids_to_program
from parsers.question.question_parser import QuestionParser
from parsers.question.seq2seq import Seq2Seq, pad_sequences
from parsers.question.vocab import NULL_ID, Vocabulary, build_vocabularies, tokenize

BUCKET = 50  # batches per length-sorted chunk of an epoch's permutation


# ------------------------------------------------------------------------------------- data

def split_paths(root: str | Path, split: str) -> tuple[Path, Path]:
    """(questions file, scenes file) of a split of ``ROOT/VARIANT``."""
    root = Path(root)
    return root / "questions" / f"{split}_questions.json", root / "scenes" / f"{split}_scenes.json"


@dataclass
class EncodedQuestions:
    """A split ready for the network.

    ``words[i]`` question word ids, ``targets[i]`` ``<START> program ids <END>`` (unknown program
    tokens -> ``<UNK>``), ``lengths`` (N,) int64 numbers of words; ``items`` the source records.
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

    def batch(self, idx: Sequence[int], device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """words (B, L), lengths (B,), targets (B, T+2) of the questions ``idx``."""
        w, n = pad_sequences([self.words[i] for i in idx])
        t, _ = pad_sequences([self.targets[i] for i in idx])
        return w.to(device), n.to(device), t.to(device)


class BatchSchedule:
    """Index batches as a function of (seed, step).

    Each epoch is a permutation drawn from ``(seed, epoch)``, cut into chunks of ``BUCKET`` batches
    that are sorted by question length (less padding), and the batches are then shuffled. Every
    epoch has ``ceil(n / batch)`` steps.
    """

    def __init__(self, lengths: np.ndarray, batch: int, seed: int):
        self.lengths, self.batch, self.seed = lengths, batch, seed
        self.n = len(lengths)
        if self.n == 0:
            raise ValueError("no questions to train on")
        self.steps_per_epoch = math.ceil(self.n / batch)
        self._epoch, self._batches = -1, []

    def epoch_batches(self, epoch: int) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, epoch])
        perm = rng.permutation(self.n)
        chunk = self.batch * BUCKET
        batches = []
        for s in range(0, self.n, chunk):
            part = perm[s:s + chunk]
            part = part[np.argsort(self.lengths[part], kind="stable")]
            batches += [part[k:k + self.batch] for k in range(0, len(part), self.batch)]
        order = rng.permutation(len(batches))
        return [batches[i] for i in order]

    def __call__(self, step: int) -> np.ndarray:
        epoch, k = divmod(step, self.steps_per_epoch)
        if epoch != self._epoch:
            self._epoch, self._batches = epoch, self.epoch_batches(epoch)
        return self._batches[k]


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
        self.path = run.path / CHECKPOINT
        qpath, _ = split_paths(cfg.data, "train")
        t0 = time.time()
        train_items = read_question_items(qpath, self.onto, require_program=True, limit=cfg.max_train_questions)
        if not train_items:
            raise ValueError(f"{qpath}: no training questions")
        vqpath, _ = split_paths(cfg.data, "val")
        self.val_items = (read_question_items(vqpath, self.onto, require_program=True, limit=cfg.val_questions)
                          if cfg.val_questions and vqpath.is_file() else [])
        self.ck = load_checkpoint(self.path, kind=KIND) if resume and self.path.exists() else None
        if self.ck is not None:
            self.qv = Vocabulary.from_dict(self.ck["vocabularies"]["question"], f"{self.path}, vocabularies.question")
            self.pv = Vocabulary.from_dict(self.ck["vocabularies"]["program"], f"{self.path}, vocabularies.program")
        else:
            self.qv, self.pv = build_vocabularies((it.question for it in train_items),
                                                  (it.gold_tokens for it in train_items), cfg.min_word_count)
        self.train = EncodedQuestions.build(train_items, self.qv, self.pv)
        run.log(f"data: {len(train_items)} train questions from {qpath}, {len(self.val_items)} val questions; "
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

    def save(self, train_state: dict) -> None:
        """Write the checkpoint (called on rank 0 only)."""
        save_checkpoint(self.path, kind=KIND, config=asdict(self.cfg), state_dict=self.model.state_dict(),
                        vocabularies=self.vocab(), train_state=train_state | {"rng": torch.get_rng_state()},
                        extra=self.extra)

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
        from tqdm import tqdm

        cfg = self.cfg
        opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(cfg.steps, min(200, max(1, cfg.steps // 20))))
        start = 0
        ts = self.ck["train_state"] if self.ck is not None else {}
        if ts.get("stage") == "supervised":
            opt.load_state_dict(ts["optimizer"])
            sched.load_state_dict(ts["scheduler"])
            torch.set_rng_state(ts["rng"])
            start = int(ts["step"])
            self.run.log(f"supervised: resumed at step {start} from {self.path}")
        elif ts.get("stage") == "reinforce":
            return  # supervised stage already complete
        schedule = BatchSchedule(self.train.lengths, cfg.batch, cfg.seed)
        dist = self.dist
        seed_rank(dist, cfg.seed, start)
        self.model.train()
        t0 = time.time() - float(self.extra.get("supervised_seconds", 0.0))
        smooth = None
        bar = tqdm(range(start, cfg.steps), desc="question parser", disable=not self.progress, initial=start,
                   total=cfg.steps)
        for step in bar:
            if not dist.enabled:
                words, lengths, targets = self.train.batch(schedule(step), self.dev)
                loss = self.net("loss", words, lengths, targets)
                check_finite({"loss": loss.detach()}, step)
                v = float(loss.detach())
            else:
                loss, v = self._shard_loss(schedule(step))
                check_finite({"loss": v}, step)  # the whole batch's loss: every rank stops together
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
            opt.step()
            sched.step()
            smooth = v if smooth is None else 0.95 * smooth + 0.05 * v
            bar.set_postfix(loss=f"{smooth:.4f}")
            if step % 20 == 0 or step + 1 == cfg.steps:
                self.run.scalars("supervised", {"loss": v, "lr": sched.get_last_lr()[0]}, step)
            if dist.is_main and ((step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps):
                self.run.log(f"supervised step {step + 1} loss={v:.5f} smoothed={smooth:.5f}")
                val = self.validate("supervised", step + 1)
                self.extra["supervised_seconds"] = time.time() - t0
                self.extra["supervised_val"] = val
                state = {"stage": "supervised", "step": step + 1, "optimizer": opt.state_dict(),
                         "scheduler": sched.state_dict()}
                if step + 1 == cfg.steps:
                    state = {"stage": "reinforce", "step": 0}  # next stage starts fresh
                self.save(state)
        if dist.is_main and start >= cfg.steps and not self.path.exists():  # zero steps requested
            self.save({"stage": "reinforce", "step": 0})
        barrier(dist)  # the checkpoint is written before any rank reads it

    def _shard_loss(self, idx: np.ndarray) -> tuple[torch.Tensor, float]:
        """This rank's part of the loss of the global batch ``idx`` (data-parallel only).

        The rank's summed token cross-entropy over the batch's target tokens, times the world size
        (DDP averages gradients over the ranks): the averaged gradient is the one of the model's
        mean-per-token loss on the whole batch. A rank whose slice is empty (a last batch shorter
        than the world size) runs one question with weight 0, so that it joins the reduction.
        Returns (loss to backpropagate, the whole batch's mean loss).
        """
        dist = self.dist
        mine = shard(idx, dist.rank, dist.world_size)
        words, lengths, targets = self.train.batch(mine if len(mine) else idx[:1], self.dev)
        tokens = float((targets[:, 1:] != NULL_ID).sum()) if len(mine) else 0.0
        mean = self.net("loss", words, lengths, targets)
        total_tokens, total_loss = all_sum(dist, [tokens, float(mean.detach()) * tokens])
        return mean * (tokens * dist.world_size / total_tokens), total_loss / total_tokens

    # ------------------------------------------------------------------ REINFORCE
    def reinforce(self) -> None:
        """Policy gradient with reward 1 when the sampled program answers correctly on the ground-
        truth train scene (0 otherwise, invalid decodes included), minus a moving-average baseline."""
        from tqdm import tqdm

        cfg = self.cfg
        _, spath = split_paths(cfg.data, "train")
        scenes, _ = load_scenes(spath, self.onto)
        lookup = scene_lookup(scenes)
        scene_of = [question_scene(it.record, lookup, f"{cfg.data} train question {it.index}")
                    for it in self.train.items]
        executor = DeterministicExecutor(self.onto)
        opt = torch.optim.Adam(self.model.parameters(), lr=cfg.reinforce_lr)
        ck = load_checkpoint(self.path, kind=KIND) if self.path.exists() else None
        ts = ck["train_state"] if ck is not None else {}
        start, baseline = 0, None
        if ts.get("stage") == "reinforce" and int(ts.get("step", 0)) > 0:
            opt.load_state_dict(ts["optimizer"])
            torch.set_rng_state(ts["rng"])
            start, baseline = int(ts["step"]), ts.get("baseline")
            self.run.log(f"reinforce: resumed at step {start} from {self.path}")
        else:
            torch.manual_seed(cfg.seed + 1)  # dropout draws of this stage do not depend on the first one
        schedule = BatchSchedule(self.train.lengths, cfg.reinforce_batch, cfg.seed + 1)
        dist = self.dist
        seed_rank(dist, cfg.seed + 1, start)
        self.model.train()
        t0 = time.time() - float(self.extra.get("reinforce_seconds", 0.0))
        bar = tqdm(range(start, cfg.reinforce_steps), desc="reinforce", disable=not self.progress, initial=start,
                   total=cfg.reinforce_steps)
        for step in bar:
            idx = batch = schedule(step)
            if dist.enabled:  # this rank's slice (one question with weight 0 when it is empty)
                idx = shard(batch, dist.rank, dist.world_size)
                idx = idx if len(idx) else batch[:1]
            words, lengths, _ = self.train.batch(idx, self.dev)
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
            else:  # the whole batch's mean reward, baseline and loss on every rank
                n_mine = len(shard(batch, dist.rank, dist.world_size))
                weight = torch.full((len(idx),), float(n_mine > 0), device=self.dev)
                lp = (logp * weight).detach()
                reward_sum, n, lp_sum, rlp_sum = all_sum(dist, [float((rewards * weight).sum()), float(n_mine),
                                                                float(lp.sum()), float((rewards * lp).sum())])
                mean_r = reward_sum / n
                baseline = mean_r if baseline is None else 0.9 * baseline + 0.1 * mean_r
                # DDP averages over the ranks: the gradient is the one of the whole batch's mean loss
                loss = -((rewards - baseline) * logp * weight).sum() * (dist.world_size / n)
                global_loss = -(rlp_sum - baseline * lp_sum) / n
            check_finite({"loss": loss.detach() if not dist.enabled else global_loss, "reward": mean_r}, step)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
            opt.step()
            bar.set_postfix(reward=f"{baseline:.3f}")
            if step % 10 == 0 or step + 1 == cfg.reinforce_steps:
                self.run.scalars("reinforce", {"reward": mean_r, "baseline": baseline,
                                               "loss": float(loss.detach()) if not dist.enabled else global_loss}, step)
            if dist.is_main and ((step + 1) % cfg.eval_every == 0 or step + 1 == cfg.reinforce_steps):
                self.run.log(f"reinforce step {step + 1} reward={mean_r:.4f} baseline={baseline:.4f}")
                self.extra["reinforce_val"] = self.validate("reinforce", step + 1)
                self.extra["reinforce_seconds"] = time.time() - t0
                self.save({"stage": "reinforce", "step": step + 1, "optimizer": opt.state_dict(),
                           "baseline": baseline})
        barrier(dist)


def train_question_parser(cfg: QuestionParserConfig, out: str | Path, *, resume: bool = False,
                          progress: bool = True) -> RunDir:
    """Supervised training (and REINFORCE when ``cfg.reinforce``) into the run directory ``out``.

    Launched by torchrun (``WORLD_SIZE`` > 1) both stages train data-parallel; rank 0 writes ``out``
    and returns its RunDir, the other ranks a :class:`nsvqa.distributed.QuietRun` on the same path.
    """
    seed_everything(cfg.seed)
    dist = init_from_env(cfg.device)
    try:
        reinforce = cfg.reinforce and cfg.reinforce_steps > 0
        check_global_batch(dist.world_size, batch=cfg.batch,
                           **({"reinforce_batch": cfg.reinforce_batch} if reinforce else {}))
        run = open_run(dist, lambda: RunDir(
            out, cfg, resume=resume, must_match=cfg.MUST_MATCH), out, cfg)
        try:
            tr = _Trainer(cfg, run, resume, progress, dist)
            tr.supervised()
            if reinforce:
                tr.reinforce()
        finally:
            run.close()
    finally:
        if dist.owns_group:
            cleanup()
    return run


__all__ = ["PROFILES", "QuestionTrainProfile", "QuestionParserConfig", "EncodedQuestions", "BatchSchedule",
           "train_question_parser", "parser_from_checkpoint", "evaluate", "split_paths", "CHECKPOINT", "KIND"]
