"""The built-in ontologies: vocabularies, shape hierarchy, part lists and spoken names."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from executors import FormatError, Ontology, load_ontology
from executors.ontology import ontology_dir

REPO = Path(__file__).resolve().parents[2]

#: docs/executors.md, "Vocabularies and facts the code relies on".
SUPERCLEVR_RGB = {
    "gray": [87, 87, 87], "red": [173, 35, 35], "blue": [42, 75, 215], "green": [29, 105, 20],
    "brown": [129, 74, 25], "purple": [129, 38, 192], "cyan": [41, 208, 208], "yellow": [255, 238, 51],
}
CATEGORIES = {
    "car": ("suv", "wagon", "minivan", "sedan", "truck", "addi"),
    "bus": ("articulated", "regular", "double", "school"),
    "motorbike": ("chopper", "dirtbike", "scooter", "cruiser"),
    "aeroplane": ("jet", "fighter", "biplane", "airliner"),
    "bicycle": ("road", "utility", "mountain", "tandem"),
}


def test_clevr(clevr):
    assert clevr.name == "clevr"
    assert clevr.attribute_names == ("shape", "color", "material", "size")
    assert clevr.values("shape") == ("cube", "sphere", "cylinder")
    assert clevr.values("color") == tuple(SUPERCLEVR_RGB)
    assert clevr.values("material") == ("rubber", "metal")
    assert clevr.values("size") == ("large", "small")
    assert not clevr.has_parts and clevr.categories == {}
    assert clevr.relations == ("left", "right", "front", "behind")
    assert clevr.relation_margin == 0.2


def test_superclevr_attributes(superclevr):
    assert superclevr.name == "superclevr"
    assert superclevr.attribute_names == ("shape", "color", "material", "size", "texture")
    assert len(superclevr.values("shape")) == 22
    assert len(superclevr.scene_values("shape")) == 21
    assert superclevr.values("material") == ("rubber", "metal")
    assert superclevr.values("size") == ("large", "small")
    assert superclevr.values("texture") == ("none", "vstripped", "checkered", "stripped", "dotted")
    assert superclevr.canonical("texture", "None") == "none"
    assert superclevr.canonical("color", "pink") is None


def test_superclevr_shape_hierarchy(superclevr):
    assert dict(superclevr.categories) == CATEGORIES
    assert sorted(s for c in CATEGORIES.values() for s in c) == sorted(superclevr.values("shape"))
    assert superclevr.matching("shape", "car") == CATEGORIES["car"]
    assert superclevr.matching("shape", "truck") == ("truck",)
    assert superclevr.matching("shape", "boat") == ()
    assert superclevr.filter_values("shape")[-5:] == tuple(CATEGORIES)
    assert superclevr.category_of("tandem") == "bicycle"
    assert superclevr.category_of("cube") is None


def test_superclevr_22nd_shape_addi(superclevr, reference_fixtures):
    """The question generator's 22nd shape: ``addi`` ("regular car"), a car that the image
    generator never places (no entry in part_dict.json), kept last in the column order so that the
    21 placed shapes keep their columns."""
    assert superclevr.values("shape")[-1] == "addi"
    assert superclevr.scene_values("shape") == superclevr.values("shape")[:21]
    assert superclevr.unplaced == {"shape": ("addi",)}
    assert superclevr.category_of("addi") == "car"
    assert "addi" in superclevr.matching("shape", "car")
    assert superclevr.matching("shape", "addi") == ("addi",)
    assert "addi" in superclevr.filter_values("shape")
    assert superclevr.parts_of("addi") == () and "addi" not in superclevr.parts_per_shape
    assert superclevr.scene_values("color") == superclevr.values("color")
    meta = json.loads((reference_fixtures / "superclevr" / "metadata_part.json").read_text())["types"]
    assert {c: tuple(v) for c, v in meta["Shape"].items()} == dict(superclevr.categories)
    assert {s: superclevr.spoken_value("shape", s) for s in superclevr.values("shape")} == meta["Shapename"]


def test_unplaced_values_must_be_values():
    with pytest.raises(FormatError, match=r"unplaced shape values \['boat'\] are not values of 'shape'"):
        Ontology.from_dict({"name": "mini", "attributes": {"shape": {"values": ["a"], "unplaced": ["boat"]}}})
    o = Ontology.from_dict({"name": "mini", "attributes": {"shape": {"values": ["a", "b"], "unplaced": ["a"]}}})
    assert (o.values("shape"), o.scene_values("shape")) == (("a", "b"), ("b",))


def test_superclevr_colors_and_rgb(superclevr):
    assert superclevr.values("color") == tuple(SUPERCLEVR_RGB)
    data = json.loads((ontology_dir() / "superclevr.json").read_text())
    assert data["attributes"]["color"]["rgb"] == SUPERCLEVR_RGB


def test_superclevr_parts(superclevr):
    assert superclevr.has_parts
    assert len(superclevr.part_names) == 85
    assert list(superclevr.part_names) == sorted(superclevr.part_names)
    counts = {s: len(superclevr.parts_of(s)) for s in superclevr.scene_values("shape")}
    assert min(counts.values()) == counts["tandem"] == 6
    assert max(counts.values()) == counts["cruiser"] == 26
    assert [s for s, c in counts.items() if c in (6, 26)] == ["cruiser", "tandem"]
    assert superclevr.parts_of("tandem") == ("rearlight", "wheel_front", "wheel_back", "fork",
                                             "fender_front", "fender_back")
    assert superclevr.parts_of("cube") == ()
    assert superclevr.part_attributes == ("color", "material", "size", "texture")


@pytest.mark.parametrize("attr, key, spoken", [
    ("shape", "articulated", "articulated bus"),
    ("shape", "regular", "regular bus"),
    ("shape", "double", "double bus"),
    ("shape", "school", "school bus"),
    ("shape", "road", "road bike"),
    ("shape", "utility", "utility bike"),
    ("shape", "mountain", "mountain bike"),
    ("shape", "tandem", "tandem bike"),
    ("shape", "suv", "suv"),
    ("shape", "airliner", "airliner"),
    ("shape", "addi", "regular car"),
    ("color", "red", "red"),
    ("partname", "wheel_front_left", "front left wheel"),
    ("partname", "front_left_wheel", "front left wheel"),
    ("partname", "exhaust_left_s", "left exhaust"),
    ("partname", "headlight_center", "center headlight"),
    ("partname", "license_plate_back", "back license plate"),
    ("partname", "door_mid_right", "mid right door"),
    ("partname", "drive_chain", "drive chain"),
    ("partname", "roof", "roof"),
])
def test_spoken_names(superclevr, attr, key, spoken):
    assert superclevr.spoken_value(attr, key) == spoken


def test_every_spoken_part_name_drops_underscores_and_trailing_s(superclevr):
    for p in superclevr.part_names:
        s = superclevr.spoken_value("partname", p)
        assert "_" not in s and not s.endswith(" s"), (p, s)
        # the same words, reordered: only the trailing "_s" is dropped
        assert sorted(s.split()) == sorted(p.removesuffix("_s").split("_")), (p, s)


def test_answer_vocabulary(superclevr, clevr):
    v = superclevr.answer_vocabulary()
    assert "articulated bus" in v["shape"] and "articulated" not in v["shape"]
    # answers a query over a scene can give: no scene holds the unplaced "regular car"
    assert len(v["shape"]) == 21 and "regular car" not in v["shape"]
    assert "front left wheel" in v["partname"]
    assert v["bool"] == ["yes", "no"]
    assert v["integer"] == [str(i) for i in range(11)]
    assert "partname" not in clevr.answer_vocabulary()


def test_unknown_attribute_lists_valid(clevr):
    with pytest.raises(KeyError, match=r"attribute 'texture' not in ontology 'clevr'; valid: \['color', "):
        clevr.values("texture")


def test_unknown_name_lists_valid_names():
    with pytest.raises(FileNotFoundError) as exc:
        load_ontology("nope")
    assert "no ontology named 'nope'" in str(exc.value)
    assert "valid names: ['clevr', 'superclevr']" in str(exc.value)


def test_load_by_path_and_errors(tmp_path):
    p = tmp_path / "mini.json"
    p.write_text(json.dumps({"name": "mini", "attributes": {"shape": {"values": ["a", "b"]},
                                                             "color": {"values": ["x"]}}}))
    o = load_ontology(str(p))
    assert isinstance(o, Ontology)
    assert (o.name, o.values("shape"), o.attribute_names) == ("mini", ("a", "b"), ("shape", "color"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(FormatError, match="bad.json: not valid JSON"):
        load_ontology(str(bad))
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"attributes": {}}))
    with pytest.raises(FormatError, match=r"broken.json: malformed ontology, missing or bad field 'name'"):
        load_ontology(str(broken))


def test_checked_in_ontologies_equal_build_script_output(tmp_path, reference_fixtures):
    spec = importlib.util.spec_from_file_location("build_ontology", REPO / "scripts" / "build_ontology.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(["--out", str(tmp_path), "--superclevr", str(reference_fixtures / "superclevr")])
    for name in ("clevr", "superclevr"):
        built = json.loads((tmp_path / f"{name}.json").read_text())
        checked_in = json.loads((REPO / "executors" / "data" / "ontologies" / f"{name}.json").read_text())
        assert built == checked_in, f"executors/data/ontologies/{name}.json is out of date: rerun build_ontology.py"


def test_part_lists_equal_the_release_part_dict(superclevr, reference_fixtures):
    part_dict = json.loads((reference_fixtures / "superclevr" / "part_dict.json").read_text())
    assert {s: list(v) for s, v in superclevr.parts_per_shape.items()} == part_dict
