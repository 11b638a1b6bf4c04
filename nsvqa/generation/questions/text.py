"""Text realisation: this project's words for attribute values, nouns and relations, and
turning an instantiated template (its text variants and bindings) into the question sentence
and its ``obj_map`` (:class:`_TextMixin`, the text methods of
:class:`~nsvqa.generation.questions.generator.QuestionGenerator`).

``obj_map``: for each grounded object (``"<index>"``) and part (``"<object>_<part index>"``, the
executor's part id) the character spans ``[start, end)`` of the words of the question that
describe it (its attribute words and its noun; for a counted or tested set, every member).
"""
from __future__ import annotations

import re
import zlib
from collections import defaultdict
from typing import TYPE_CHECKING, Sequence

from executors import Ontology
from executors.deterministic import mask_bits
from executors.scene import PART_BITS

if TYPE_CHECKING:
    from .bindings import _Core
    from .scene_index import _SceneIndex

# ---------------------------------------------------------------------- words (this project's)
SIZE_WORDS = {"large": ("large", "big"), "small": ("small", "tiny")}
MATERIAL_WORDS = {"metal": ("metal", "metallic", "shiny"), "rubber": ("rubber", "matte")}
TEXTURE_WORDS = {"checkered": ("checkered",), "dotted": ("dotted",), "stripped": ("striped",),
                 "vstripped": ("vertically striped",)}
CATEGORY_NOUNS = {"car": ("car",), "bus": ("bus",), "motorbike": ("motorbike", "motorcycle"),
                  "aeroplane": ("aeroplane", "airplane", "plane"), "bicycle": ("bicycle",)}
GENERIC_NOUNS = ("thing", "object", "vehicle")
PART_NOUNS = ("part",)
RELATION_PHRASES = {"left": ("left of", "to the left of", "on the left side of"),
                    "right": ("right of", "to the right of", "on the right side of"),
                    "front": ("in front of",), "behind": ("behind",)}

# word order in a noun phrase (the noun itself comes last)
_OBJ_WORD_ORDER = {"size": 0, "texture": 1, "color": 2, "material": 3, "shape": 9}
_PART_WORD_ORDER = {"texture": 0, "color": 1, "material": 2, "partname": 9}


# ====================================================================== words
def plural(noun: str) -> str:
    """English plural of a noun phrase's last word (``bus`` -> ``buses``)."""
    return noun + "es" if noun.endswith(("bus", "s", "x", "ch", "sh")) else noun + "s"


def attribute_words(onto: Ontology, attr: str, value: str) -> tuple[str, ...]:
    """The words that may say ``attr = value`` (a filter value: shape categories and generic part
    names included); for ``shape`` and ``partname`` these are nouns."""
    if attr == "size":
        return SIZE_WORDS.get(value, (value,))
    if attr == "material":
        return MATERIAL_WORDS.get(value, (value,))
    if attr == "texture":
        return TEXTURE_WORDS.get(value, (value,))
    if attr == "shape":
        if value in onto.categories:
            return CATEGORY_NOUNS.get(value, (value,))
        return (onto.spoken_value("shape", value),)
    if attr == "partname":
        return (onto.spoken_value("partname", value),)
    return (value,)


def _name_words(spoken: str) -> frozenset[str]:
    s = spoken.replace("head light", "headlight").replace("tail light", "taillight")
    return frozenset(s.split())


# ====================================================================== text realisation
class _TextMixin:
    """The question text of an instantiated template: :class:`QuestionGenerator` inherits these
    methods (they read ``self.ontology``)."""

    @staticmethod
    def _pick(options: Sequence, seed: int, k: int, slot: str):
        if len(options) == 1:
            return options[0]
        return options[zlib.crc32(f"{seed}:{k}:{slot}".encode()) % len(options)]

    def _text(self, core: _Core, idx: _SceneIndex, descs, anchors, seed: int, k: int) -> tuple[str, dict]:
        tpl, pick = core.tpl, self._pick
        items = pick(tpl.parsed, seed, k, "variant")
        toks: list[tuple[str, tuple | None]] = []  # (text, keys): keys None = literal, () = a word
        slot = [0]

        def phrase(name: str, form: str) -> None:
            r = core.refs[name]
            if r.spec.kind == "part":
                keys = (f"{r.target // PART_BITS}_{r.target % PART_BITS}",)
            elif r.unique:
                keys = (str(r.target),)
            else:
                keys = tuple(str(j) for j in mask_bits(r.out))
            words = self._np_words(name, descs[name], r.spec.kind, form, keys, seed, k)
            if form == "a":
                words.insert(0, ("an" if words[0][0][:1] in "aeio" else "a", ()))
            toks.extend(words)
            if name in anchors:
                rel, jd, j = anchors[name]
                toks.append(("that is", ()))
                toks.append((pick(RELATION_PHRASES[rel], seed, k, f"{name}.anchor"), ()))
                toks.append(("the", ()))
                toks.extend(self._np_words(f"{name}.anchor", jd, "object", "sg", (str(j),), seed, k))

        def walk(seq) -> None:
            for it in seq:
                if it[0] == "lit":
                    toks.append((it[1], None))
                elif it[0] == "opt":
                    slot[0] += 1
                    if pick((True, False), seed, k, f"opt{slot[0]}"):
                        walk(it[1])
                elif it[0] == "alt":
                    slot[0] += 1
                    walk(pick(it[1], seed, k, f"alt{slot[0]}"))
                elif it[1] in core.refs:
                    phrase(it[1], it[2])
                else:
                    toks.append((pick(RELATION_PHRASES[core.relations[it[1]]], seed, k, it[1]), ()))

        walk(items)
        buf = ""
        spans: dict[str, list[list[int]]] = defaultdict(list)
        for s, keys in toks:
            if keys is None:
                s = re.sub(r"\s+", " ", s)
                if not buf or buf.endswith(" "):
                    s = s.lstrip(" ")
                if buf.endswith(" ") and s[:1] in "?.,;:!":
                    buf = buf[:-1]
                buf += s
            else:
                if buf and not buf.endswith(" "):
                    buf += " "
                start = len(buf)
                buf += s
                for key in keys:
                    spans[key].append([start, len(buf)])
        buf = buf.rstrip()
        if buf:
            buf = buf[0].upper() + buf[1:]
        return buf, {key: sorted(v) for key, v in spans.items()}

    def _np_words(self, name: str, desc: tuple, kind: str, form: str, keys: tuple, seed: int, k: int) -> list:
        """Words of a noun phrase: attribute words then the noun, each tagged with ``keys``."""
        pick, onto = self._pick, self.ontology
        order = _OBJ_WORD_ORDER if kind == "object" else _PART_WORD_ORDER
        words = []
        noun = None
        for a, v in sorted(desc, key=lambda av: order[av[0]]):
            w = pick(attribute_words(onto, a, v), seed, k, f"{name}.{a}")
            if a in ("shape", "partname"):
                noun = w
            else:
                words.append((w, keys))
        if noun is None:
            noun = pick(GENERIC_NOUNS if kind == "object" else PART_NOUNS, seed, k, f"{name}.noun")
        words.append((plural(noun) if form == "pl" else noun, keys))
        return words
