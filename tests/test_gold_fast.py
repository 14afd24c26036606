"""The gold reader's plain-shape path gives the queries the line model gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.gold import file as gold_file
from spanchor_core.gold import model as gold_model
from spanchor_core.gold import read_gold

HASH = "ab" * 32
LINES: list[dict[str, Any]] = [
    {
        "query_id": "q1",
        "question": "What?",
        "anchors": [{"document_id": "d", "start": 0, "end": 5, "hash": HASH}],
    },
    {
        "query_id": "q2",
        "question": "",
        "anchors": [],
        "tags": ["a", "b"],
        "metadata": {"x": [1, {"y": None}]},
    },
    {
        "query_id": "q1",
        "question": "dup",
        "anchors": [
            {"document_id": "d", "start": 9, "end": 3, "hash": HASH},
            {"document_id": "e", "start": -1, "end": 2**70, "hash": HASH},
        ],
    },
    {
        "query_id": "q3",
        "question": "odd order",
        "anchors": [{"hash": HASH, "end": 5, "start": 0, "document_id": "d"}],
        "metadata": {},
    },
]


def test_plain_path_equals_the_model_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "gold.jsonl"
    header = {"kind": "spanchor.gold", "schema_version": 1}
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, *LINES]), encoding="utf-8")
    fast = read_gold(path)
    assert all(gold_file._plain_query(line, 1) is not None for line in LINES)
    monkeypatch.setattr(gold_file, "_plain_query", lambda data, line: None)
    slow = read_gold(path)
    assert fast.entries == slow.entries
    assert [q.line for q in fast.entries] == [q.line for q in slow.entries]
    assert [dict(q.metadata) for q in fast.entries] == [dict(q.metadata) for q in slow.entries]


@pytest.mark.parametrize(
    "line",
    [
        {"query_id": 1, "question": "q", "anchors": []},
        {"query_id": "q", "question": "q", "anchors": [], "extra": 1},
        {
            "query_id": "q",
            "question": "q",
            "anchors": [{"document_id": "d", "start": True, "end": 2, "hash": HASH}],
        },
        {
            "query_id": "q",
            "question": "q",
            "anchors": [{"document_id": "d", "start": 0, "end": 2, "hash": HASH.upper()}],
        },
        {
            "query_id": "q",
            "question": "q",
            "anchors": [{"document_id": "d", "start": 0, "end": 2, "hash": HASH + "\n"}],
        },
        {"query_id": "q", "question": "q", "anchors": [], "tags": [1]},
        {"query_id": "q", "question": "q"},
    ],
)
def test_anything_unusual_is_left_to_the_model(line: dict[str, Any]) -> None:
    assert gold_file._plain_query(line, 2) is None


_texts = st.text(st.characters(codec="utf-8") | st.sampled_from('"\\\x00\x1f\x7f\u2028é€😀'))
_anchors = st.builds(
    gold_model.Anchor,
    _texts,
    st.integers(0, 10**12),
    st.integers(-5, 10**18),
    st.sampled_from([HASH, "cd" * 32, "not hex é"]),
)
_queries = st.builds(
    gold_model.GoldQuery,
    _texts,
    _texts,
    st.lists(_anchors, max_size=4).map(tuple),
    st.lists(_texts, max_size=2).map(tuple),
    st.dictionaries(_texts, st.integers() | _texts | st.none(), max_size=2),
)


@given(_queries)
@settings(max_examples=300, deadline=None)
def test_the_hashed_line_is_the_canonical_json_of_the_query(query: gold_model.GoldQuery) -> None:
    # the gold-set hash must not change: its line is json.dumps's canonical text, byte for byte
    expected = json.dumps(
        gold_model.query_to_json(query), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    assert gold_model._canonical_line(query) == expected
