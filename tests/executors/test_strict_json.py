"""executors.io.loads_json: the one strict JSON reader under every reader of the project (issue 80).
Each refusal is one FormatError line naming the source, the record (a JSON path) and the key."""
from __future__ import annotations

import math

import pytest

from executors.errors import FormatError
from executors.io import loads_json, read_json


@pytest.mark.parametrize("text, message", [
    ('{"questions": [{"a": 1}, {"answer": "2", "answer": "3"}]}',
     "f.json, at questions[1], key 'answer': given twice in one object"),
    ('{"a": 1, "a": 1}', "f.json, at the top level, key 'a': given twice"),  # even the same value
    ('[{"x": {"b": 1, "b": 2}, "x": 3}]', "f.json, at [0], key 'x': given twice"),  # the outer one named
    ('{"margin": 1e999}', "f.json, at margin: the number 1e999 does not fit a 64-bit float"),
    ('{"a": -1e400}', "f.json, at a: the number -1e400 does not fit"),
    ('{"a": 1e999, "a": 2}', "f.json, at the top level, key 'a': given twice"),
    ('[' + '9' * 400 + ']', "f.json, at [0]: the number 999999999999... (400 characters) does not fit"),
    ('[' + '9' * 5000 + ']', "f.json, at [0]: the number 999999999999... (5000 characters) does not fit"),  # past\n    # Python's own int limit (4300 digits): no ValueError traceback
    ('{"a": [1, {"b": NaN}]}', "f.json, at a[1].b: the number NaN is not a JSON number"),
    ('[Infinity]', "f.json, at [0]: the number Infinity is not a JSON number"),
    ('{"a": ', "f.json: not valid JSON (Expecting value: line 1 column 7)"),
    ('[' * 100_000, "f.json: not readable JSON (nested too deep)"),
    (b'{"q": "caf\xe9"}', "f.json: not UTF-8 text (byte 0xe9 at offset 10, line 1)"),
    (b'\n\n["\xff"]', "f.json: not UTF-8 text (byte 0xff at offset 4, line 3)"),
])
def test_ambiguous_or_unfit_json_is_one_line(text, message):
    with pytest.raises(FormatError) as e:
        loads_json(text, "f.json")
    assert type(e.value) is FormatError and "\n" not in str(e.value)
    assert str(e.value).startswith(message), str(e.value)


def test_plain_json_reads_as_json_does():
    text = '{"a": [1, 2.5, -0.0, 1e308, "\\u00e9", true, null], "b": {"c": {}}}'
    assert loads_json(text, "s") == loads_json(text.encode(), "s") == {
        "a": [1, 2.5, -0.0, 1e308, "é", True, None], "b": {"c": {}}}


def test_nan_only_where_allowed(tmp_path):
    doc = loads_json('{"loss": NaN, "x": -Infinity}', "s", allow_nan=True)
    assert math.isnan(doc["loss"]) and doc["x"] == -math.inf
    with pytest.raises(FormatError, match=r"^s, at a: the number 1e999"):  # a number past a float, always
        loads_json('{"a": 1e999}', "s", allow_nan=True)
    path = tmp_path / "r.json"
    path.write_text('{"a": NaN}')
    with pytest.raises(FormatError, match=rf"^{path}, at a: the number NaN"):
        read_json(path)
    assert math.isnan(read_json(path, allow_nan=True)["a"])

