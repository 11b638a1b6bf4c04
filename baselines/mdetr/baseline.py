"""The registered mDETR baseline (:class:`MDETRBaseline`): config, train, predict."""
from __future__ import annotations

from pathlib import Path

import torch
from tqdm import tqdm

from executors.ontology import load_ontology

from baselines.base import Baseline
from baselines.common import checkpoint_kind, checkpoint_path, config_from_dict
from baselines.mdetr.config import MDETRConfig
from baselines.mdetr.data import answer_groups, collate_grounded, encode_split
from baselines.mdetr.inference import decode_answers
from baselines.mdetr.network import MDETRNet
from baselines.mdetr.training import _load_weights, train_mdetr
from nsvqa.artifacts.predictions import Prediction, load_question_meta
from nsvqa.artifacts.questions import questions_path, read_questions
from nsvqa.models import ModelSpec, PredictInputs
from nsvqa.training.checkpoint import load_checkpoint
from nsvqa.training.data import StepLoader
from nsvqa.training.sampling import SequentialBatches


class MDETRBaseline(Baseline):
    """mDETR: a text-conditioned DETR pretrained on the questions' grounding, fine-tuned for QA."""

    family = "holistic"

    config_class = MDETRConfig

    def train(self, cfg: MDETRConfig, out: str | Path, *, resume: bool = False, progress: bool = True) -> Path:
        return train_mdetr(cfg, out, resume=resume, progress=progress)

    def load(self, run_dir: str | Path, device: str = "cpu") -> tuple[MDETRNet, MDETRConfig, list[str]]:
        """(network in eval mode, config, answers) from ``RUN_DIR/baseline.pt`` (or that file).

        Raises:
            nsvqa.training.checkpoint.CheckpointError: no checkpoint, or one of another baseline.
        """
        path = checkpoint_path(run_dir)
        ck = load_checkpoint(path, kind=checkpoint_kind(self.name))
        cfg = config_from_dict(MDETRConfig, ck["config"], str(path))
        answers = list(ck["vocabularies"]["answer"])
        model = MDETRNet([len(g) for g in answer_groups(answers)], cfg)
        _load_weights(model, ck["state_dict"], str(path))
        return model.to(device).eval(), cfg, answers

    def predict(self, run_dir: str | Path, root: str | Path, variant: str, split: str = "test", *,
                spec: ModelSpec | None = None, inputs: PredictInputs = PredictInputs(), device: str = "cpu",
                progress: bool = False, batch: int = 128) -> list[Prediction]:
        """The decoded answer of each question, with p(type) * p(answer | type)."""
        model, cfg, answers = self.load(run_dir, device)
        groups = answer_groups(answers)
        onto = load_ontology(cfg.ontology)
        folder = Path(root) / variant
        questions = read_questions(questions_path(folder, split), onto, require_text=True, require_program=True,
                                   require_answer=True, require_image=True)  # read once
        metas = load_question_meta(root, variant, split, ontology=onto, questions=questions)
        records = list(questions)
        data = encode_split(folder, split, records, answers, cfg, onto, targets=False, progress=progress)
        out: list[Prediction] = []
        with torch.no_grad():
            for b in tqdm(StepLoader(data, collate_grounded, SequentialBatches(len(data), batch), device=device),
                          desc=f"mdetr {variant}", disable=not progress):
                x = b.data
                ids, probs = decode_answers(model(x["ids"], x["text_mask"], x["images"]), groups)
                for i, a, p in zip(b.indices, ids, probs):
                    out.append(metas[i].prediction(answers[a], p))
        return out
