"""The official Super-CLEVR release <-> one variant folder of this project.

**Import** (:func:`import_release`). The release (Li et al., CVPR 2023) is::

    superCLEVR_scenes.json             {"info", "scenes": [...]}: per scene ``obj_mask_box``
    superCLEVR_questions_30k.json      {"info", "questions": [...]}
    images/superCLEVR_new_<index:06d>.png     640x480 renders

and is laid out as a variant folder (docs/formats.md, section 1)::

    <folder>/images/<split>/<release file name>.png   resized to width x height, RGB
    <folder>/scenes/<split>_scenes.json               the release's scenes; per object ``bbox``,
                                                      ``mask`` (COCO RLE), ``part_masks``
    <folder>/questions/<split>_questions.json         the release's questions of those images
    <folder>/annotations/<split>_coco.json            :func:`nsvqa.generation.annotations.coco_from_scenes`
    <folder>/manifest.json                            what was imported, with sha256

A split is the range of ``image_index`` it takes (:data:`OFFICIAL_SPLITS`, the release's 20k /
5k / 5k, or the user's own). ``obj_mask_box`` is ``{str(object index): {"info": model name, "obj":
[box, mask], <part name>: [box, mask], ...}}`` at the render's resolution (the image's size):
``box`` is [x, y, w, h] in pixels (the mask's tight box, [0, 0, 0, 0] when nothing is visible) and
``mask`` a string of comma-separated run lengths over the row-major flattened H x W image,
alternating runs of 0 and 1 and starting with a 0-run (:func:`decode_runs`, :func:`encode_runs`).
Masks are resized by area (a pixel is set when at least half of it is covered; a visible mask
stays visible), boxes and ``pixel_coords`` are scaled with the image. Scenes without ``obj_mask_box`` (the
generator's sample scenes) are imported for evaluation only: scenes, questions and images, no
annotations file; the manifest says so (``evaluation_only``) and a note is printed.

**Export** (:func:`export_release`): splits of a variant folder -> the release's layout, with
``obj_mask_box`` decoded from the split's COCO annotations, so other codebases read this
project's variants. The exported scenes' ``info`` records each split's ``image_index`` range
(``nsvqa_splits``), which an import of that folder uses by default.

Errors are :class:`OfficialFormatError` (a :class:`~executors.errors.FormatError`, so a
``ValueError``) naming the file, the scene (its ``image_index``), the object and the fie"""
from __future__ import annotations

from nsvqa.generation.official.exporter import export_release
from nsvqa.generation.official.importer import ImportResult, import_release, index_scenes
from nsvqa.generation.official.masks import decode_runs, encode_runs, resize_mask, scale_box, tight_box
from nsvqa.generation.official.release import (EXPORT_QUESTIONS_FILE, IMPORT_GENERATOR, IMPORTER_VERSION,
                                               OFFICIAL_SPLITS, QUESTIONS_FILE, SCENES_FILE, SPLITS_KEY,
                                               UNKNOWN_PARTS, OfficialFormatError, OfficialRelease, add_release_args,
                                               check_split_ranges, parse_split_ranges)

__all__ = ["OfficialFormatError", "OfficialRelease", "ImportResult", "OFFICIAL_SPLITS", "SCENES_FILE",
           "QUESTIONS_FILE", "EXPORT_QUESTIONS_FILE", "SPLITS_KEY", "decode_runs", "encode_runs", "tight_box",
           "scale_box", "resize_mask", "parse_split_ranges", "check_split_ranges", "import_release", "export_release",
           "add_release_args"]
