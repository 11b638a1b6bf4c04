"""Question engine: instantiates question templates on a scene, answers with the deterministic executor.

Templates (``nsvqa/generation/data/question_templates/*.json``, written for this project) give the
program structures of the 90 CLEVR question families (zero/one/two/three hop, single and/or,
same-relate, comparison, compare-integer) and the 9 Super-CLEVR part families, over the Super-CLEVR
ontology. A question record follows the release schema (docs/formats.md) and adds ``question_hash``, ``obj_map`` and
``redundancy``.

Modules (everything public is re-exported here; import it from ``nsvqa.generation.questions``):

* :mod:`.templates`: the template language: template files (format and checks,
  :func:`load_templates`), :class:`RefSpec`, :class:`Template`, the text syntax (:func:`parse_text`)
  and the expansion of macros into executor programs;
* :mod:`.text`: words for attribute values, nouns and relations, and text realisation (a template's
  text and the bindings into the question sentence and its ``obj_map``);
* :mod:`.scene_index`: what objects, parts and descriptions a scene offers to the search;
* :mod:`.bindings`: an instantiated template (grounded references, relations, answer);
* :mod:`.generator`: :class:`QuestionGenerator` (instantiation rules, answer balancing, redundancy
  levels, ``question_hash``, the records);
* :mod:`.synthetic`: :func:`synthetic_scene`, scene records without rendering for tests and
  benchmarks;
* :mod:`.more`: :func:`more_questions`, further questions of scene records already generated
  (no rendering), at a variant's redundancy level (:func:`variant_redundancy`).

Imports point one way: ``templates`` <- ``bindings``, ``scene_index``, ``text`` <- ``generator`` <- ``more``.
"""
from __future__ import annotations

from .generator import LEVELS, QuestionGenerator
from .more import MORE_STREAM, more_questions, variant_redundancy
from .synthetic import CLEVR_DIRECTIONS, synthetic_scene
from .templates import (DEFAULT_TEMPLATE_DIR, OBJECT_ATTRS, PART_ATTRS, MacroNode, RefSpec, Template, TemplateError,
                        load_templates, parse_text, template_dir)
from .text import (CATEGORY_NOUNS, GENERIC_NOUNS, MATERIAL_WORDS, PART_NOUNS, RELATION_PHRASES, SIZE_WORDS,
                   TEXTURE_WORDS, attribute_words, plural)

__all__ = [
    # templates
    "DEFAULT_TEMPLATE_DIR", "OBJECT_ATTRS", "PART_ATTRS", "MacroNode", "RefSpec", "Template", "TemplateError",
    "load_templates", "parse_text", "template_dir",
    # text
    "CATEGORY_NOUNS", "GENERIC_NOUNS", "MATERIAL_WORDS", "PART_NOUNS", "RELATION_PHRASES", "SIZE_WORDS",
    "TEXTURE_WORDS", "attribute_words", "plural",
    # generator
    "LEVELS", "QuestionGenerator",
    # synthetic scenes
    "CLEVR_DIRECTIONS", "synthetic_scene",
    # more questions of generated scenes
    "MORE_STREAM", "more_questions", "variant_redundancy",
]
