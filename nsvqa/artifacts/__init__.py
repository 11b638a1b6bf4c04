"""One owner per on-disk artifact: a typed record, a reader that validates once and names the
file, the item and the field in its errors (:class:`executors.errors.FormatError` or a subclass),
and an atomic writer.

=====================================  ==============================  ==========================
file                                   read                            write
=====================================  ==============================  ==========================
``questions/<split>_questions.json``   :func:`read_questions`          :func:`write_questions`
``scenes/<split>_scenes.json``         :func:`read_scenes`             :func:`write_scenes`
``parsed/<variant>/likelihoods.json``  :func:`read_likelihoods`        :func:`write_likelihoods`
``parsed/<variant>/programs.json``     :func:`read_programs`           :func:`write_programs`
``predictions/*.jsonl``                :func:`read_predictions`        :func:`write_predictions`
``images/<split>/*.png``               :func:`images.read_image`       :mod:`nsvqa.generation`
``<cache>/<split>_<backbone>_*.pt``    :func:`features.read_features`  :func:`features.write_features`
``RUN/summary.json``                    :func:`summary.read_summary`    :func:`summary.write_summary`
=====================================  ==============================  ==========================
"""
from __future__ import annotations

from nsvqa.artifacts.likelihoods import (FORMAT_VERSION, Detection, LikelihoodsDocument, LikelihoodsFormatError,
                                         LikelihoodsHeader, ParsedSceneRecord, read_likelihoods, write_likelihoods)
from nsvqa.artifacts.programs import ParsedPrograms, ProgramRecord, ProgramsFormatError, read_programs, write_programs
from nsvqa.artifacts.questions import Question, QuestionsFile, questions_path, read_questions, write_questions
from nsvqa.artifacts.scenes import SceneRecord, ScenesFile, read_scenes, scenes_path, write_scenes
from nsvqa.artifacts.predictions import (Prediction, PredictionFormatError, predictions_path, read_predictions,
                                         write_predictions)

__all__ = ["Question", "QuestionsFile", "read_questions", "write_questions", "questions_path",
           "SceneRecord", "ScenesFile", "read_scenes", "write_scenes", "scenes_path",
           "FORMAT_VERSION", "Detection", "ParsedSceneRecord", "LikelihoodsHeader", "LikelihoodsDocument",
           "LikelihoodsFormatError", "read_likelihoods", "write_likelihoods",
           "ProgramRecord", "ParsedPrograms", "ProgramsFormatError", "read_programs", "write_programs",
           "Prediction", "PredictionFormatError", "read_predictions", "write_predictions", "predictions_path"]
