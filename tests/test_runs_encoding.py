"""Tests for run-line encoding: orjson and the stdlib path give the same JSON, deterministically."""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import enum
import itertools
import json
import math
import uuid
from collections.abc import Iterator
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.runs import encoding
from spanchor_core.runs.encoding import encode_line
from spanchor_core.runs.write import (
    ResultEntries,
    provenance_payload,
    record_line,
    record_payload,
    result_entry,
)

pytestmark = pytest.mark.skipif(encoding._orjson is None, reason="orjson is not installed")


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Box:
    width: int


@pytest.fixture
def stdlib() -> Iterator[None]:
    saved = encoding._orjson
    encoding._orjson = None
    try:
        yield
    finally:
        encoding._orjson = saved


def _both(value: Any) -> tuple[bytes, bytes]:
    fast = encode_line(value)
    saved = encoding._orjson
    encoding._orjson = None
    try:
        slow = encode_line(value)
    finally:
        encoding._orjson = saved
    return fast, slow


ODD_VALUES: list[Any] = [
    {"nan": math.nan, "inf": -math.inf, "nested": [1.5, {"x": math.nan}]},
    {"when": dt.datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC), "day": dt.date(2025, 1, 2)},
    {"at": dt.time(1, 2), "naive": dt.datetime(2025, 1, 2)},
    {"enum": Colour.RED, "int_enum": Level.HIGH, "point": Point(1, 2), "box": Box(3)},
    {"set": {3, 1, 2}, "mixed": frozenset({"b", 1}), "bytes": b"caf\xc3\xa9\xff"},
    {"path": PurePosixPath("a/b"), "uuid": uuid.UUID(int=7), "proxy": MappingProxyType({"k": 1})},
    {1: "int key", None: "null key", False: "bool key", 2.5: "float key"},
    {"big": 2**70, "small": -(2**64)},
    {"lone": "a\ud800b", "pair": "🙂"},
    {"deep": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]},
    {"tuple": (1, (2, 3)), "text": 'quote " backslash \\ newline \n tab \t nul \x00 del \x7f'},
    {"order": {"z": 1, "a": 2, "m": 3}},
]


@pytest.mark.parametrize("value", ODD_VALUES)
def test_orjson_and_stdlib_lines_hold_the_same_json(value: Any) -> None:
    fast, slow = _both(value)
    assert fast.endswith(b"\n")
    assert slow.endswith(b"\n")
    fast.decode("utf-8")  # both always valid UTF-8, lone surrogates escaped
    assert json.loads(fast) == json.loads(slow)
    assert list(json.loads(fast)) == list(json.loads(slow))  # key order kept
    assert encode_line(value) == fast  # deterministic


def test_conversions_are_the_documented_ones() -> None:
    line = json.loads(encode_line(ODD_VALUES[3] | ODD_VALUES[4] | {"nan": math.nan}))
    assert line == {
        "enum": "red",
        "int_enum": 3,
        "point": [1, 2],
        "box": "Box(width=3)",
        "set": [1, 2, 3],
        "mixed": ["b", 1],  # not comparable: sorted by repr
        "bytes": "café\ufffd",
        "nan": None,
    }
    assert json.loads(encode_line(ODD_VALUES[8])) == {"lone": "a\ud800b", "pair": "🙂"}


def test_a_cycle_ends_as_text_instead_of_failing() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    fast, slow = _both({"m": cyclic})
    assert json.loads(fast) == json.loads(slow)


def test_numpy_values_become_numbers_and_lists() -> None:
    numpy = pytest.importorskip("numpy")
    value = {"f": numpy.float32(0.5), "i": numpy.int64(3), "a": numpy.arange(3), "n": numpy.nan}
    fast, slow = _both(value)
    assert json.loads(fast) == json.loads(slow) == {"f": 0.5, "i": 3, "a": [0, 1, 2], "n": None}


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=_json)
def test_any_json_value_encodes_alike_on_both_paths(value: Any) -> None:
    fast, slow = _both({"v": value})
    assert json.loads(fast) == json.loads(slow)


@pytest.mark.parametrize(
    "run_id", [uuid.UUID(int=0), uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e"), uuid.uuid4()]
)
@pytest.mark.parametrize("text", ["plain", "lone \ud800 surrogate", "nan in metadata"])
def test_run_ids_given_as_uuids_write_the_bytes_of_their_text(run_id: uuid.UUID, text: str) -> None:
    # orjson formats UUIDs itself; the stdlib paths (lone surrogates, NaN) go through str().
    metadata = {"x": math.nan} if text.startswith("nan") else {"k": 1}
    for use_orjson in (True, False):
        saved = encoding._orjson
        if not use_orjson:
            encoding._orjson = None
        try:
            as_uuid = record_line(
                "q1", text, [], 1.5, None, "s", "retrieval", run_id, run_id, run_id, 2, metadata
            )
            as_text = record_line(
                "q1", text, [], 1.5, None, "s", "retrieval",
                str(run_id), str(run_id), str(run_id), 2, metadata,
            )  # fmt: skip
        finally:
            encoding._orjson = saved
        assert as_uuid == as_text
        assert json.loads(as_uuid)["run_id"] == str(run_id)


def test_run_ids_of_other_types_are_refused() -> None:
    with pytest.raises(TypeError, match="run_id must be a string"):
        record_line("q1", "q", [], None, None, run_id=7)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="trace_id must be a string"):
        record_line("q1", "q", [], None, None, trace_id=b"x")  # type: ignore[arg-type]


def test_the_dict_literal_shapes_of_record_line_write_what_the_general_path_writes() -> None:
    # record_line builds its usual shapes (the handler's, the wrappers' source-and-stage) as
    # one dict literal; every combination of present and absent provenance must give the
    # bytes of the general path: the base object, then provenance_payload's keys in order.
    entries = ResultEntries([result_entry(1, 'text "quoted"\n', 0.5, None, 3, 17, {"k": 1})])
    entries.characters = 16
    run_id = uuid.UUID(int=7)
    options: dict[str, list[Any]] = {
        "source": [None, "Retriever"],
        "stage": [None, "retrieval", "context"],
        "trace_id": [None, run_id, "t"],
        "run_id": [None, run_id],
        "parent_run_id": [None, run_id, "p"],
        "sequence": [None, 0, 4],
        "metadata": [None, {}, {"tags": ["a"]}],
    }
    names = list(options)
    checked = 0
    for values in itertools.product(*options.values()):
        provenance = dict(zip(names, values, strict=True))
        for results in (entries, ResultEntries(entries)):  # counted and uncounted characters
            line = record_line(None, "q", results, 1.25, None, **provenance)
            expected = encode_line(
                record_payload(
                    None, "q", list(entries), 1.25, None, provenance_payload(**provenance)
                )
            )
            assert line == expected, provenance
            checked += 1
    assert checked == 2 * 2 * 3 * 3 * 2 * 3 * 3 * 3
