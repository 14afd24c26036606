"""Tests for run files: format, round trips, spanchor 0.x shapes, query ids and the recorder."""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import json
import logging
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import unicodedata
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import canonicalize
from spanchor_core.errors import RecorderError, RunError
from spanchor_core.runs import (
    RetrievalRecord,
    RetrievedResult,
    RetrieverInfo,
    Run,
    RunHeader,
    RunRecorder,
    iter_run,
    read_run,
    resolve_query_ids,
    result_from_mapping,
    run_file_schemas,
    write_run,
)

FIXED_TIME = "2025-01-02T03:04:05.000Z"


def _header(**changes: Any) -> RunHeader:
    values: dict[str, Any] = {
        "spanchor_version": "0.5.0",
        "created_at": FIXED_TIME,
        "retriever": RetrieverInfo(description="bm25", parameters={"k": 5}),
    }
    values.update(changes)
    return RunHeader(**values)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@dataclass(frozen=True)
class _Query:
    query_id: str


class _FakeGold:
    """Stands in for GoldSet: exact lookup on canonical, stripped question text."""

    sha256 = "f" * 64

    def __init__(self, questions: Mapping[str, str]) -> None:
        self._by_text = {canonicalize(q).strip(): _Query(qid) for qid, q in questions.items()}
        self.asked: list[str] = []

    def by_question(self, text: str) -> _Query | None:
        self.asked.append(text)
        return self._by_text.get(text)


# ------------------------------------------------------------------------------------------
# Our format: round trip, exact bytes, determinism
# ------------------------------------------------------------------------------------------

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
_finite = st.floats(allow_nan=False, allow_infinity=False)
_offset = st.none() | st.integers(min_value=0, max_value=10**9)


@st.composite
def _results(draw: st.DrawFn) -> tuple[RetrievedResult, ...]:
    count = draw(st.integers(min_value=0, max_value=4))
    return tuple(
        RetrievedResult(
            rank=rank,
            text=draw(st.none() | st.text(max_size=40)),
            score=draw(st.none() | _finite),
            document_id=draw(st.none() | st.text(max_size=10)),
            start=draw(_offset),
            end=draw(_offset),
            metadata=draw(st.dictionaries(st.text(max_size=6), _json_values, max_size=3)),
        )
        for rank in range(1, count + 1)
    )


_records = st.builds(
    RetrievalRecord,
    query_id=st.none() | st.text(max_size=8),
    query=st.text(max_size=30),
    results=_results(),
    latency_ms=st.none() | st.floats(min_value=0, allow_nan=False, allow_infinity=False),
    error=st.none() | st.text(max_size=20),
)


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(_records, max_size=5), tags=st.dictionaries(st.text(max_size=5), _json_values)
)
def test_write_then_read_gives_the_same_run(
    records: list[RetrievalRecord], tags: dict[str, Any]
) -> None:
    header = _header(tags=tags)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "run.jsonl"
        write_run(Run(header, records), path)
        back = read_run(path)
    assert back.header == header
    assert back.records == records
    assert back.warnings == []
    assert back.source_format == "spanchor.run"
    assert [r.line for r in back.records] == list(range(2, len(records) + 2))


def test_a_run_file_has_exactly_the_documented_bytes(tmp_path: Path) -> None:
    record = RetrievalRecord(
        query_id="q1",
        query="Où?",
        results=(RetrievedResult(1, "été", 0.5, "doc", 0, 3, {"b": 1, "a": [True, None]}),),
        latency_ms=2.5,
    )
    path = tmp_path / "run.jsonl"
    write_run(Run(_header(), [record]), path)
    assert path.read_text("utf-8") == (
        '{"kind":"spanchor.run","schema_version":1,"spanchor_version":"0.5.0",'
        '"created_at":"2025-01-02T03:04:05.000Z",'
        '"retriever":{"description":"bm25","parameters":{"k":5}},'
        '"corpus_fingerprint":null,"gold_sha256":null,"tags":{}}\n'
        '{"query_id":"q1","query":"Où?","results":[{"rank":1,"text":"été","score":0.5,'
        '"document_id":"doc","start":0,"end":3,"metadata":{"b":1,"a":[true,null]}}],'
        '"latency_ms":2.5,"error":null}\n'
    )


def test_write_run_is_deterministic_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    run = Run(_header(), [RetrievalRecord("q1", "x", (RetrievedResult(1, "t"),))])
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_run(run, first)
    write_run(run, second)
    write_run(run, second)  # overwriting works too
    assert first.read_bytes() == second.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl"]


def test_two_recordings_of_the_same_retrievals_differ_only_in_created_at(tmp_path: Path) -> None:
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for path in paths:
        with RunRecorder(path, retriever="r", parameters={"k": 3}, tags={"t": "x"}) as recorder:
            recorder.record("q", [RetrievedResult(1, "a", 0.25)], query_id="q1", latency_ms=1.0)
            recorder.record("q2", [{"text": "b", "similarity": 0.5}], latency_ms=None)
    a, b = (p.read_text("utf-8").split("\n", 1) for p in paths)
    assert a[1] == b[1]
    header_a, header_b = json.loads(a[0]), json.loads(b[0])
    header_a.pop("created_at")
    header_b.pop("created_at")
    assert header_a == header_b


def test_created_at_is_utc_iso_8601(tmp_path: Path) -> None:
    with RunRecorder(tmp_path / "r.jsonl") as recorder:
        created = dt.datetime.fromisoformat(recorder.header.created_at)
    assert created.utcoffset() == dt.timedelta(0)
    with pytest.raises(ValueError, match="time zone"):
        RunHeader(created_at="2025-01-01T00:00:00")


def test_non_finite_numbers_are_written_as_null(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with RunRecorder(path, parameters={"temperature": math.nan}) as recorder:
        recorder.record(
            "q",
            [RetrievedResult(1, "a", math.nan, metadata={"x": math.inf, "ok": 1.5})],
            latency_ms=math.inf,
        )
    text = path.read_text("utf-8")
    assert "NaN" not in text
    assert "Infinity" not in text
    run = read_run(path)
    assert run.header.retriever.parameters == {"temperature": None}
    (record,) = run.records
    assert record.latency_ms is None
    assert record.results[0].score is None
    assert record.results[0].metadata == {"x": None, "ok": 1.5}


def test_metadata_json_cannot_hold_is_converted_not_lost(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    metadata: dict[Any, Any] = {
        "path": Path("a/b.md"),
        "when": dt.date(2025, 1, 2),
        "ids": {3, 1, 2},
        1: "int key",
        "tuple": (1, 2),
    }
    with RunRecorder(path) as recorder:
        recorder.record("q", [RetrievedResult(1, "a", metadata=metadata)])
    assert recorder.failures == 0
    (record,) = read_run(path).records
    assert record.results[0].metadata == {
        "path": "a/b.md",
        "when": "2025-01-02",
        "ids": [1, 2, 3],
        "1": "int key",
        "tuple": [1, 2],
    }


def test_text_with_a_lone_surrogate_reads_back_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    text = "bad \ud800 pair, é"
    write_run(Run(_header(), [RetrievalRecord(None, text, (RetrievedResult(1, text),))]), path)
    path.read_bytes().decode("utf-8")  # still valid UTF-8
    (record,) = read_run(path).records
    assert record.query == text
    assert record.results[0].text == text


def test_a_line_separator_inside_text_is_not_a_line_break(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    text = "one\u2028two\x85three\x0bfour"
    write_run(Run(_header(), [RetrievalRecord("q", text, ())]), path)
    assert read_run(path).records[0].query == text


def test_missing_rank_means_position_and_results_are_sorted_by_rank(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    header = json.dumps(_header().model_dump(mode="json"))
    record = {
        "query": "q",
        "results": [{"rank": 3, "text": "c"}, {"rank": 1, "text": "a"}, {"rank": 2, "text": "b"}],
    }
    unranked = {"query": "q", "results": [{"text": "x"}, {"text": "y"}]}
    path.write_text(f"{header}\n{json.dumps(record)}\n{json.dumps(unranked)}\n", "utf-8")
    first, second = read_run(path).records
    assert [(r.rank, r.text) for r in first.results] == [(1, "a"), (2, "b"), (3, "c")]
    assert [(r.rank, r.text) for r in second.results] == [(1, "x"), (2, "y")]
    assert first.query_id is None
    assert first.latency_ms is None


def test_json_schemas_describe_both_line_types() -> None:
    schemas = run_file_schemas()
    assert set(schemas) == {"spanchor.run.header", "spanchor.run.record"}
    assert schemas["spanchor.run.record"]["required"] == ["query", "results"]
    assert schemas["spanchor.run.header"]["properties"]["kind"]["const"] == "spanchor.run"
    assert schemas["spanchor.run.header"]["additionalProperties"] is False


# ------------------------------------------------------------------------------------------
# Reading: damage, wrong files
# ------------------------------------------------------------------------------------------


def _written(tmp_path: Path, count: int = 3) -> Path:
    path = tmp_path / "run.jsonl"
    records = [
        RetrievalRecord(f"q{i}", f"question {i}", (RetrievedResult(1, "x" * 50),))
        for i in range(count)
    ]
    write_run(Run(_header(), records), path)
    return path


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _written(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 30])  # cut the last record mid-line
    run = read_run(path)
    assert [r.query_id for r in run.records] == ["q0", "q1"]
    (warning,) = run.warnings
    assert warning.startswith(f"{path}:4: incomplete last line skipped")


def test_a_complete_last_line_without_newline_is_read(tmp_path: Path) -> None:
    path = _written(tmp_path)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    run = read_run(path)
    assert len(run.records) == 3
    assert run.warnings == []


def test_invalid_json_in_the_middle_is_an_error_with_its_line(tmp_path: Path) -> None:
    path = _written(tmp_path)
    lines = path.read_text("utf-8").splitlines(keepends=True)
    lines[2] = lines[2][:20] + "\n"
    path.write_text("".join(lines), "utf-8")
    with pytest.raises(RunError, match=r"^.*run\.jsonl:3: invalid JSON") as info:
        read_run(path)
    assert info.value.line == 3


def test_an_invalid_last_line_that_ends_in_a_newline_is_an_error(tmp_path: Path) -> None:
    path = _written(tmp_path)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"query": \n')
    with pytest.raises(RunError) as info:
        read_run(path)
    assert info.value.line == 5


def test_a_bad_record_names_the_field_and_line(tmp_path: Path) -> None:
    path = _written(tmp_path, 1)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"query": "q", "results": [{"rank": "1"}]}\n')
    with pytest.raises(RunError, match=r":3: bad record: field 'results\[0\]\.rank'"):
        read_run(path)


def test_nan_tokens_in_our_format_are_rejected(tmp_path: Path) -> None:
    path = _written(tmp_path, 1)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"query": "q", "results": [{"rank": 1, "score": NaN}]}\n')
    with pytest.raises(RunError, match=r":3: NaN is not valid JSON"):
        read_run(path)


def test_nan_in_our_header_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    header = json.dumps(_header().model_dump(mode="json") | {"tags": {"x": math.nan}})
    path.write_text(header + "\n", "utf-8")
    with pytest.raises(RunError, match=r":1: NaN is not valid JSON"):
        read_run(path)


def test_a_second_header_is_an_error(tmp_path: Path) -> None:
    path = _written(tmp_path, 1)
    path.write_text(path.read_text("utf-8") * 2, "utf-8")
    with pytest.raises(RunError, match=r":3: a second header line"):
        read_run(path)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"kind": "spanchor.gold"}, r":1: unknown kind 'spanchor.gold'.*this is a gold set"),
        ({"kind": "other"}, r":1: unknown kind 'other'"),
        ({"schema_version": 2}, r":1: schema_version 2 is newer.*upgrade spanchor"),
        ({"schema_version": "1"}, r":1: unsupported schema_version '1'"),
        ({"schema_version": True}, r":1: unsupported schema_version True"),
        ({"surprise": 1}, r":1: bad header: field 'surprise': is not a field of this format"),
    ],
)
def test_headers_we_do_not_read_are_errors(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    header = _header().model_dump(mode="json") | changes
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(header) + "\n", "utf-8")
    with pytest.raises(RunError, match=message):
        read_run(path)


def test_a_header_only_file_is_an_empty_run(tmp_path: Path) -> None:
    path = _written(tmp_path, 0)
    run = read_run(path)
    assert run.records == []
    assert run.path == path


def test_missing_file_directory_empty_and_not_utf8_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="run file does not exist"):
        read_run(tmp_path / "absent.jsonl")
    with pytest.raises(RunError, match="is a directory"):
        read_run(tmp_path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", "utf-8")
    with pytest.raises(RunError, match="empty file"):
        read_run(empty)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(f"{_header_text()}\n".encode() + b'{"query": "caf\xe9"}\n')
    with pytest.raises(RunError, match=r"latin\.jsonl:2: not UTF-8") as info:
        read_run(latin)
    assert info.value.line == 2


def test_a_byte_order_mark_and_crlf_are_tolerated(tmp_path: Path) -> None:
    path = _written(tmp_path, 2)
    text = path.read_text("utf-8").replace("\n", "\r\n")
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert [r.query_id for r in read_run(path).records] == ["q0", "q1"]


def test_a_torn_header_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"kind": "spanchor.run", "schema_ver', "utf-8")
    with pytest.raises(RunError, match=":1: the header line is incomplete"):
        read_run(path)


# ------------------------------------------------------------------------------------------
# spanchor 0.x results files
# ------------------------------------------------------------------------------------------

_OLD_RESULT = {"rank": 1, "score": 0.0, "document_id": "api", "text": "abc", "start": 0, "end": 3}


def test_0x_object_of_query_ids(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    data = {"q1": [_OLD_RESULT, {"text": "def", "score": 0.5}], "q2": []}
    path.write_text(json.dumps(data, indent=2), "utf-8")
    run = read_run(path)
    assert run.source_format == "spanchor-0.x-json"
    assert run.header.spanchor_version == "0.x"
    assert [r.query_id for r in run.records] == ["q1", "q2"]
    first = run.records[0]
    assert first.query == ""
    assert first.results == (
        RetrievedResult(1, "abc", 0.0, "api", 0, 3),
        RetrievedResult(2, "def", 0.5),
    )
    assert run.records[1].results == ()
    assert read_run(path).header == run.header  # the synthesised header is stable


def test_0x_object_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"q1": [_OLD_RESULT]}), "utf-8")
    (record,) = read_run(path).records
    assert record.results[0].start == 0


def test_0x_jsonl_records(tmp_path: Path) -> None:
    path = tmp_path / "baseline_results.jsonl"
    lines = [
        {"query_id": "q001", "question": "What is CloudSync?", "retrieved": [_OLD_RESULT]},
        {"query_id": "q002", "question": "Who?", "retrieved": []},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    run = read_run(path)
    assert run.source_format == "spanchor-0.x-jsonl"
    assert [(r.query_id, r.query, r.line) for r in run.records] == [
        ("q001", "What is CloudSync?", 1),
        ("q002", "Who?", 2),
    ]
    assert run.records[0].results == (RetrievedResult(1, "abc", 0.0, "api", 0, 3),)


def test_0x_jsonl_with_a_torn_tail_and_a_bad_middle_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    good = json.dumps({"query_id": "q1", "question": "a", "retrieved": []})
    path.write_text(f"{good}\n{good}\n{good[:15]}", "utf-8")
    run = read_run(path)
    assert len(run.records) == 2
    assert run.warnings == [f"{path}:3: incomplete last line skipped"]
    path.write_text(f"{good}\n{good[:15]}\n{good}\n", "utf-8")
    with pytest.raises(RunError, match=r"r\.jsonl:2: invalid JSON"):
        read_run(path)


def test_0x_list_of_records_and_bare_list_of_results(tmp_path: Path) -> None:
    records = tmp_path / "records.json"
    records.write_text(
        json.dumps([{"query_id": "q1", "question": "a", "retrieved": [_OLD_RESULT]}]), "utf-8"
    )
    (record,) = read_run(records).records
    assert record.query_id == "q1"
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps([{"chunk": "x"}, {"content": "y", "position": 1}]), "utf-8")
    run = read_run(bare)
    assert run.source_format == "spanchor-0.x-list"
    (record,) = run.records
    assert record.query_id is None
    assert [(r.rank, r.text) for r in record.results] == [(1, "x"), (1, "y")]
    assert "bare list of results has no query" in run.warnings[0]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"q1": {"text": "x"}}, r"query 'q1': results must be a list, got dict"),
        ({"q1": ["x"]}, r"query 'q1': result 1 must be an object"),
        ({"q1": [{"text": 3}]}, r"query 'q1': result 1: text must be a string"),
        ({"q1": [{"text": "x", "start": "zero"}]}, r"start must be an integer"),
        ({"query_id": "q", "question": "x", "anchors": []}, r"looks like a gold query"),
        ({"kind": "spanchor.evaluation"}, r"unknown kind 'spanchor.evaluation'"),
        ("just a string", r"got a JSON str"),
    ],
)
def test_bad_0x_files_are_errors(tmp_path: Path, data: Any, message: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data, indent=1), "utf-8")
    with pytest.raises(RunError, match=message):
        read_run(path)


def test_jsonl_that_is_not_results_is_named(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    line = json.dumps({"query_id": "q1", "question": "a", "anchors": []})
    gold.write_text(f"{line}\n{line}\n", "utf-8")
    with pytest.raises(RunError, match=r"gold\.jsonl:1: this looks like a gold set"):
        read_run(gold)
    other = tmp_path / "other.jsonl"
    other.write_text('{"a": 1}\n{"b": 2}\n', "utf-8")
    with pytest.raises(RunError, match=r":1: the first line is neither a run header"):
        read_run(other)


def test_0x_nan_scores_become_unknown(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"q1": [{"text": "x", "score": NaN}]}', "utf-8")
    assert read_run(path).records[0].results[0].score is None


@pytest.mark.parametrize(
    ("field", "aliases", "value"),
    [
        ("text", ["text", "chunk", "content", "body", "page_content"], "some text"),
        ("score", ["score", "relevance_score", "similarity", "confidence"], 0.75),
        ("rank", ["rank", "position", "index"], 4),
        ("document_id", ["document_id", "doc_id", "source", "document"], "guide"),
        ("start", ["start", "start_char", "offset"], 17),
        ("end", ["end", "end_char"], 42),
    ],
)
def test_every_0x_alias_is_read(field: str, aliases: list[str], value: Any) -> None:
    for alias in aliases:
        base = {} if field == "text" else {"text": "t"}
        result = result_from_mapping(base | {alias: value}, rank=9)
        assert getattr(result, field) == value, alias
        assert alias not in result.metadata


def test_zero_values_are_real_values_not_missing_ones() -> None:
    result = result_from_mapping(
        {"text": "", "score": 0.0, "confidence": 0.9, "rank": 0, "start": 0, "end": 0}, rank=5
    )
    assert (result.text, result.score, result.rank, result.start, result.end) == ("", 0.0, 0, 0, 0)
    assert result.metadata == {"confidence": 0.9}  # the alias that lost is kept, not dropped


def test_result_from_mapping_converts_0x_number_forms_and_keeps_the_rest() -> None:
    result = result_from_mapping(
        {"chunk": "x", "similarity": "0.5", "rank": 2.0, "doc_id": 7, "offset": "3", "extra": [1]},
        rank=1,
    )
    assert result == RetrievedResult(2, "x", 0.5, "7", 3, None, {"extra": [1]})
    with pytest.raises(TypeError, match="rank must be an integer"):
        result_from_mapping({"text": "x", "rank": 1.5})
    with pytest.raises(TypeError, match="score must be a number"):
        result_from_mapping({"text": "x", "score": True}, rank=1)
    with pytest.raises(ValueError, match="no rank"):
        result_from_mapping({"text": "x"})


def test_nested_metadata_wins_and_extra_keys_join_it() -> None:
    result = result_from_mapping({"text": "x", "metadata": {"a": 1}, "a": 2, "b": 3}, rank=1)
    assert result.metadata == {"a": 1, "b": 3}


def test_langchain_start_index_becomes_an_offset_hint() -> None:
    result = result_from_mapping(
        {"page_content": "hello", "metadata": {"source": "docs/a.md", "start_index": 0}}, rank=1
    )
    assert (result.document_id, result.start, result.end) == (None, 0, 5)
    assert result.metadata == {"source": "docs/a.md", "start_index": 0}


def test_llamaindex_char_indices_become_offset_hints() -> None:
    result = result_from_mapping(
        {
            "text": "hello",
            "metadata": {"start_char_idx": 10, "end_char_idx": 16, "ref_doc_id": "u"},
        },
        rank=1,
    )
    assert (result.document_id, result.start, result.end) == (None, 10, 16)
    top_level = result_from_mapping({"text": "hello", "start_char_idx": 0}, rank=1)
    assert (top_level.start, top_level.end) == (0, 5)
    assert top_level.metadata == {"start_char_idx": 0}


@pytest.mark.parametrize(
    "data",
    [
        {"text": "hello", "metadata": {"start_index": -1}},  # LangChain: chunk not found
        {"text": None, "metadata": {"start_index": 3}},  # nothing to verify a hint against
        {"text": "hello", "metadata": {"start_index": "3"}},
    ],
)
def test_unusable_offset_hints_are_ignored(data: dict[str, Any]) -> None:
    result = result_from_mapping(data, rank=1)
    assert (result.start, result.end) == (None, None)


def test_explicit_offsets_beat_hints() -> None:
    result = result_from_mapping(
        {"text": "hello", "start": 0, "end": 5, "metadata": {"start_index": 99}}, rank=1
    )
    assert (result.start, result.end) == (0, 5)


# ------------------------------------------------------------------------------------------
# Query ids
# ------------------------------------------------------------------------------------------


def test_resolve_query_ids_by_exact_canonical_text() -> None:
    gold = _FakeGold({"g1": "What is alpha?", "g2": "Café ok?"})
    decomposed = unicodedata.normalize("NFD", "Café ok?")
    records = [
        RetrievalRecord("explicit", "What is alpha?", ()),
        RetrievalRecord(None, "  What is alpha?\r\n", ()),
        RetrievalRecord(None, decomposed, ()),
        RetrievalRecord(None, "what is alpha?", ()),  # case differs: not exact
        RetrievalRecord(None, "", ()),
    ]
    run = Run(_header(), records)
    resolved, unmatched = resolve_query_ids(run, gold)
    assert [r.query_id for r in resolved.records] == ["explicit", "g1", "g2", None, None]
    assert unmatched == [records[3], records[4]]
    assert [r.query_id for r in run.records] == ["explicit", None, None, None, None]
    assert resolved.header is run.header


def test_recorder_resolves_query_ids_from_gold(tmp_path: Path) -> None:
    gold = _FakeGold({"g1": "What is alpha?"})
    path = tmp_path / "r.jsonl"
    with RunRecorder(path, gold=gold) as recorder:
        recorder.record("What is alpha? ", [])
        recorder.record("unknown", [])
        recorder.record("What is alpha?", [], query_id="mine")
    assert [r.query_id for r in read_run(path).records] == ["g1", None, "mine"]
    assert recorder.unmatched == 1
    assert recorder.header.gold_sha256 == "f" * 64


# ------------------------------------------------------------------------------------------
# Recorder
# ------------------------------------------------------------------------------------------


def test_recorder_accepts_results_and_dicts(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "r.jsonl"
    with RunRecorder(path, retriever="bm25", corpus_fingerprint="c" * 64) as recorder:
        recorder.record(
            "q",
            [RetrievedResult(1, "a", 0.5), {"content": "b", "relevance_score": 0.25}],
            query_id="q1",
            latency_ms=3,
            error=ValueError("boom"),
        )
    run = read_run(path)
    assert run.header.retriever.description == "bm25"
    assert run.header.corpus_fingerprint == "c" * 64
    (record,) = run.records
    assert record.results == (RetrievedResult(1, "a", 0.5), RetrievedResult(2, "b", 0.25))
    assert (record.latency_ms, record.error) == (3.0, "ValueError: boom")
    assert recorder.records == 1
    assert recorder.closed


def test_recorder_from_eight_threads(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    start = threading.Barrier(8)

    def work(thread: int, recorder: RunRecorder) -> None:
        start.wait()
        for i in range(200):
            result = RetrievedResult(1, f"text {thread}-{i} " + "x" * 500, 0.5)
            recorder.record(f"query {thread}-{i}", [result], query_id=f"{thread}-{i}")

    with RunRecorder(path) as recorder:
        threads = [threading.Thread(target=work, args=(n, recorder)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert (recorder.records, recorder.failures) == (1600, 0)
    assert len(path.read_text("utf-8").splitlines()) == 1601
    run = read_run(path)
    assert sorted(r.query_id or "" for r in run.records) == sorted(
        f"{t}-{i}" for t in range(8) for i in range(200)
    )


def test_recorder_from_asyncio_gather(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"

    async def one(recorder: RunRecorder, n: int) -> None:
        await asyncio.sleep(0)
        await recorder.arecord(f"query {n}", [{"text": f"t{n}"}], query_id=str(n))

    async def main() -> None:
        with RunRecorder(path) as recorder:
            await asyncio.gather(*(one(recorder, n) for n in range(1600)))

    asyncio.run(main())
    run = read_run(path)
    assert len(run.records) == 1600
    assert {r.query_id for r in run.records} == {str(n) for n in range(1600)}


def test_a_failing_write_is_counted_and_logged_once_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "r.jsonl"
    recorder = RunRecorder(path)

    def full_disk(fd: int, data: Any) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    with caplog.at_level(logging.DEBUG, logger="spanchor_core.runs"):
        for _ in range(3):
            recorder.record("q", [RetrievedResult(1, "a")])
    monkeypatch.undo()
    assert (recorder.records, recorder.failures) == (0, 3)
    assert isinstance(recorder.last_error, OSError)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "No space left on device" in warnings[0].getMessage()
    recorder.record("q", [RetrievedResult(1, "a")])  # recovers once the disk has room
    recorder.close()
    assert len(read_run(path).records) == 1


def test_a_partial_write_is_cut_off_so_the_next_line_stays_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.jsonl"
    recorder = RunRecorder(path)
    real_write = os.write
    calls = {"n": 0}

    def half_then_fail(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_fail)
    recorder.record("lost", [RetrievedResult(1, "a" * 100)])
    monkeypatch.undo()
    recorder.record("kept", [RetrievedResult(1, "b")])
    recorder.close()
    assert recorder.failures == 1
    run = read_run(path)
    assert [r.query for r in run.records] == ["kept"]
    assert run.warnings == []


def test_bad_input_and_closed_recorders_count_failures(tmp_path: Path) -> None:
    recorder = RunRecorder(tmp_path / "r.jsonl")
    recorder.record("q", ["not a result"])  # type: ignore[list-item]
    recorder.record(42, [])  # type: ignore[arg-type]
    recorder.record("q", [RetrievedResult("1", "a")])  # type: ignore[arg-type]
    recorder.close()
    recorder.close()
    recorder.record("q", [])
    assert (recorder.records, recorder.failures) == (0, 4)
    assert isinstance(recorder.last_error, RecorderError)
    assert read_run(tmp_path / "r.jsonl").records == []


def test_strict_recorders_raise_recorder_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = RunRecorder(tmp_path / "r.jsonl", strict=True)
    with pytest.raises(RecorderError, match="result 1 must be a RetrievedResult"):
        recorder.record("q", [3])  # type: ignore[list-item]

    def broken(fd: int, data: Any) -> int:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "write", broken)
    with pytest.raises(RecorderError, match="Input/output error") as info:
        recorder.record("q", [])
    assert isinstance(info.value.__cause__, OSError)
    monkeypatch.undo()
    recorder.close()
    with pytest.raises(RecorderError, match="recorder is closed"):
        recorder.record("q", [])
    assert recorder.failures == 3


def test_opening_problems_raise_at_construction(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", "utf-8")
    with pytest.raises(RecorderError, match="cannot open run file"):
        RunRecorder(blocker / "r.jsonl")
    with pytest.raises(ValueError, match="mode must be"):
        RunRecorder(tmp_path / "r.jsonl", mode="x")  # type: ignore[arg-type]


def test_append_mode_writes_no_second_header(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with RunRecorder(path, retriever="first", mode="a") as recorder:
        recorder.record("one", [])
    with RunRecorder(path, retriever="second", mode="a") as recorder:
        assert recorder.header.retriever.description == "first"
        recorder.record("two", [])
    run = read_run(path)
    assert [r.query for r in run.records] == ["one", "two"]
    assert sum("kind" in line for line in _lines(path)) == 1
    with RunRecorder(path, mode="w") as recorder:  # "w" starts over
        recorder.record("three", [])
    assert [r.query for r in read_run(path).records] == ["three"]


def test_append_mode_drops_a_torn_tail_first(tmp_path: Path) -> None:
    path = _written(tmp_path, 2)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 10])
    with RunRecorder(path, mode="a") as recorder:
        recorder.record("after the crash", [])
    run = read_run(path)
    assert [r.query for r in run.records] == ["question 0", "after the crash"]
    assert run.warnings == []


def test_append_mode_refuses_files_that_are_not_runs(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text('{"kind": "spanchor.gold", "schema_version": 1}\n', "utf-8")
    with pytest.raises(RecorderError, match="cannot append, not a spanchor run file"):
        RunRecorder(path, mode="a")
    assert path.read_text("utf-8") == '{"kind": "spanchor.gold", "schema_version": 1}\n'


_KILLED_WRITER = """
import sys
from spanchor_core.runs import RetrievedResult, RunRecorder
recorder = RunRecorder(sys.argv[1], retriever="killed")
n = 0
while True:
    recorder.record(f"query {n}", [RetrievedResult(1, "x" * 3000, 0.5)], query_id=str(n))
    n += 1
    if n == 200:
        print("ready", flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_a_recording_process_killed_mid_run_leaves_a_readable_file(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    ) as process:
        try:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == -signal.SIGKILL
    run = read_run(path)
    assert len(run.records) >= 200
    assert [r.query_id for r in run.records] == [str(n) for n in range(len(run.records))]
    assert all(r.results[0].text == "x" * 3000 for r in run.records)


# ------------------------------------------------------------------------------------------
# Streaming: iter_run reads what read_run reads, one line at a time
# ------------------------------------------------------------------------------------------


def _outcome_of_read_run(path: Path) -> tuple[Any, ...]:
    """Everything read_run says about a file (or the error it raises), to compare with."""
    try:
        run = read_run(path)
    except RunError as exc:
        return ("error", str(exc), exc.line)
    return (
        run.header,
        run.records,
        [r.line for r in run.records],
        run.warnings,
        run.source_format,
        run.path,
    )


def _outcome_of_iter_run(path: Path) -> tuple[Any, ...]:
    try:
        stream = iter_run(path)
        records = list(stream)
    except RunError as exc:
        return ("error", str(exc), exc.line)
    assert stream.records_read == len(records)
    return (
        stream.header,
        records,
        [r.line for r in records],
        stream.warnings,
        stream.source_format,
        stream.path,
    )


_GOOD = json.dumps({"query_id": "q1", "query": "a", "results": [{"rank": 1, "text": "x"}]})
_OLD_LINE = json.dumps({"query_id": "q1", "question": "a", "retrieved": [{"text": "x"}]})


def _header_text() -> str:
    return json.dumps(_header().model_dump(mode="json"))


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(lambda h: f"{h}\n{_GOOD}\n{_GOOD[:20]}", id="torn-last-line"),
        pytest.param(lambda h: f"{h}\n{_GOOD}\n{_GOOD}", id="complete-last-line-no-newline"),
        pytest.param(lambda h: f"\n  \n{h}\n\n{_GOOD}\n \n{_GOOD}\n\n", id="blank-lines"),
        pytest.param(lambda h: f"{h}\r\n{_GOOD}\r\n", id="crlf"),
        pytest.param(lambda h: f"\ufeff{h}\n{_GOOD}\n", id="byte-order-mark"),
        pytest.param(lambda h: f"{h}\n", id="header-only"),
        pytest.param(lambda h: h, id="header-only-no-newline"),
        pytest.param(lambda h: f"{h}\n{_GOOD[:20]}\n{_GOOD}\n", id="invalid-json-mid-file"),
        pytest.param(lambda h: f"{h}\n{_GOOD}\n{_GOOD[:20]}\n", id="invalid-last-line-newline"),
        pytest.param(lambda h: f"{h}\n{h}\n", id="second-header"),
        pytest.param(
            lambda h: f'{h}\n{{"query": "q", "results": [{{"rank": "1"}}]}}\n', id="bad-record"
        ),
        pytest.param(
            lambda h: f'{h}\n{{"query": "q", "results": [{{"rank": 1, "score": NaN}}]}}\n',
            id="nan-record",
        ),
        pytest.param(
            lambda h: f'{h}\n{{"query": "q", "results": [], "latency_ms": 1e400}}\n',
            id="model-path",
        ),
        pytest.param(lambda h: f"{h}\n{_GOOD}\u2028 \n", id="line-separator-is-not-a-break"),
        pytest.param(lambda h: '{"kind": "spanchor.run", "schema_ver', id="torn-header"),
        pytest.param(lambda h: '{"kind": "spanchor.gold"}\n', id="other-kind"),
        pytest.param(lambda h: h.replace('"created_at"', '"x": NaN, "created_at"'), id="nan-head"),
        pytest.param(lambda h: "", id="empty"),
        pytest.param(lambda h: "\n \n", id="blank"),
        pytest.param(lambda h: f"{_OLD_LINE}\n\n{_OLD_LINE}\n{_OLD_LINE[:9]}", id="0x-jsonl-torn"),
        pytest.param(lambda h: f"{_OLD_LINE}\n{_OLD_LINE[:9]}\n{_OLD_LINE}\n", id="0x-jsonl-bad"),
        pytest.param(lambda h: json.dumps({"q1": [{"text": "x"}]}, indent=1), id="0x-object"),
        pytest.param(lambda h: json.dumps([json.loads(_OLD_LINE)]), id="0x-list"),
        pytest.param(lambda h: '{"a": 1}\n{"b": 2}\n', id="not-a-run"),
        pytest.param(lambda h: "[1, 2", id="broken-document"),
    ],
)
def test_iter_run_reads_exactly_what_read_run_reads(tmp_path: Path, content: Any) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(content(_header_text()).encode("utf-8"))
    expected = _outcome_of_read_run(path)
    assert _outcome_of_iter_run(path) == expected


def test_iter_run_reports_unreadable_files_as_read_run_does(tmp_path: Path) -> None:
    for path in (tmp_path / "absent.jsonl", tmp_path):
        assert _outcome_of_iter_run(path) == _outcome_of_read_run(path)
        assert _outcome_of_iter_run(path)[0] == "error"
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(f"{_header_text()}\n".encode() + b'{"query": "caf\xe9"}\n')
    with pytest.raises(RunError, match=r"latin\.jsonl:2: not UTF-8 \(invalid byte at offset"):
        list(iter_run(latin))
    assert _outcome_of_iter_run(latin) == _outcome_of_read_run(latin)  # same offset too


@settings(max_examples=100, deadline=None)
@given(
    records=st.lists(_records, max_size=6),
    blank_after=st.sets(st.integers(min_value=0, max_value=6)),
    tail=st.sampled_from(["", "torn", "no-newline"]),
    crlf=st.booleans(),
)
def test_iter_run_equals_read_run_on_generated_runs(
    records: list[RetrievalRecord], blank_after: set[int], tail: str, crlf: bool
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "run.jsonl"
        write_run(Run(_header(), records), path)
        lines = path.read_bytes().split(b"\n")[:-1]
        out = [line + b"\n" + (b"\n" if i in blank_after else b"") for i, line in enumerate(lines)]
        data = b"".join(out)
        if crlf:
            data = data.replace(b"\n", b"\r\n")
        if tail == "torn":
            data += b'{"query_id": "cut", "query": "'
        elif tail == "no-newline":
            data = data.rstrip(b"\r\n")
        path.write_bytes(data)
        expected = _outcome_of_read_run(path)
        assert expected[0] != "error"
        assert _outcome_of_iter_run(path) == expected
        assert len(expected[3]) == (1 if tail == "torn" else 0)


def test_the_header_is_read_at_once_and_later_lines_only_when_iterated(tmp_path: Path) -> None:
    path = _written(tmp_path, 2)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")
        handle.write(f"{_GOOD}\n")
    stream = iter_run(path)  # a bad record line does not stop the header from being read
    assert stream.header == _header()
    assert stream.source_format == "spanchor.run"
    records = iter(stream)
    assert next(records).query_id == "q0"
    assert next(records).query_id == "q1"
    with pytest.raises(RunError, match=r"run\.jsonl:4: invalid JSON"):
        next(records)


def test_a_stream_can_be_iterated_again_without_doubling_its_warnings(tmp_path: Path) -> None:
    path = _written(tmp_path, 3)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 30])
    stream = iter_run(path)
    first = list(stream)
    assert (len(first), stream.records_read, len(stream.warnings)) == (2, 2, 1)
    assert list(stream) == first
    assert (stream.records_read, len(stream.warnings)) == (2, 1)


def test_an_abandoned_stream_closes_its_file(tmp_path: Path) -> None:
    path = _written(tmp_path, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = iter(iter_run(path))
        assert next(records).query_id == "q0"
        del records  # dropped mid-way: the generator is closed, and its file with it
        gc.collect()
    assert [w.message for w in caught if issubclass(w.category, ResourceWarning)] == []


# -- provenance fields (source, stage, trace, sequence) ------------------------------------------


def test_provenance_round_trips_through_recorder_and_reader(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with RunRecorder(path) as recorder:
        recorder.record(
            "q?",
            [{"text": "a"}],
            query_id="q1",
            source="bm25",
            stage="retrieval",
            trace_id="t1",
            run_id="r1",
            parent_run_id="p1",
            sequence=2,
            metadata={"tags": ["x"]},
        )
        recorder.record("q?", [{"text": "b"}], query_id="q1")
    first, second = read_run(path).records
    assert (first.source, first.stage, first.trace_id, first.run_id) == (
        "bm25",
        "retrieval",
        "t1",
        "r1",
    )
    assert (first.parent_run_id, first.sequence, first.metadata) == ("p1", 2, {"tags": ["x"]})
    assert (second.source, second.stage, second.trace_id, second.sequence) == (
        None,
        None,
        None,
        None,
    )
    # absent provenance is not written as nulls: old readers and diffs see the old shape
    lines = path.read_text(encoding="utf-8").splitlines()
    assert "trace_id" not in lines[2]
    assert "stage" not in lines[2]
    # write_run keeps them, and the streaming reader agrees with the whole-file reader
    again = tmp_path / "again.jsonl"
    write_run(read_run(path), again)
    assert read_run(again).records == read_run(path).records == list(iter_run(path))


def test_bad_stage_is_refused_on_read_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with RunRecorder(path) as recorder:
        recorder.record("q?", [{"text": "a"}], query_id="q1")
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"query": "q?", "results": [], "stage": "reranked"}\n')
    with pytest.raises(RunError, match=r"run\.jsonl:3:.*stage"):
        read_run(path)


def test_recorder_counts_a_bad_stage_as_a_failure_not_a_crash(tmp_path: Path) -> None:
    with RunRecorder(tmp_path / "run.jsonl") as recorder:
        recorder.record("q?", [], stage="final")  # type: ignore[arg-type]
        assert (recorder.records, recorder.failures) == (0, 1)
