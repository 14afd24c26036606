"""The orjson fast path for run record lines reads what the strict reader reads, or steps aside.

orjson keeps a repeated key silently and turns integers beyond 64 bits into floats; the
strict reader refuses the first and keeps the second ``int``. These lines must come out
exactly as the strict reader gives them (values, types, errors and their lines).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanchor_core._io import JsonlLine
from spanchor_core.errors import RunError
from spanchor_core.runs import iter_run, read_run
from spanchor_core.runs.lines import read_record_line
from spanchor_core.runs.read import _read_record_line_fast

HEADER = json.dumps(
    {
        "kind": "spanchor.run",
        "schema_version": 1,
        "spanchor_version": "0.5.0",
        "created_at": "2025-01-02T03:04:05.000Z",
    },
    separators=(",", ":"),
)


def _compact(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([HEADER, *lines]) + "\n", "utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('{"query":"q","query":"r","results":[]}', "query"),
        ('{"query":"q","results":[{"rank":1,"text":"x","text":"y"}]}', "text"),
        ('{"query":"q","results":[],"metadata":{"a":{"b":1,"b":2}}}', "b"),
        # an escaped quote before a colon in a text, beside the repeated key
        (
            '{"query":"q","results":[{"rank":1,"text":"say \\":x"}],"error":null,"error":null}',
            "error",
        ),
        ('{"query":"q" ,"results":[],"query" :"r"}', "query"),
    ],
)
def test_a_repeated_key_is_refused_in_compact_lines(tmp_path: Path, line: str, key: str) -> None:
    path = _write(tmp_path, _compact({"query": "ok", "results": []}), line)
    for read in (read_run, lambda p: list(iter_run(p))):
        with pytest.raises(RunError, match=rf":3: the key '{key}' appears twice") as info:
            read(path)
        assert info.value.line == 3


def test_huge_integers_stay_integers(tmp_path: Path) -> None:
    huge = 123456789012345678901234567890
    line = _compact(
        {
            "query": "q",
            "results": [{"rank": 1, "text": "x", "metadata": {"n": huge, "m": -(2**70)}}],
            "metadata": {"big": [huge]},
        }
    )
    (record,) = read_run(_write(tmp_path, line)).records
    assert record.metadata == {"big": [huge]}
    assert type(record.metadata["big"][0]) is int
    assert record.results[0].metadata == {"n": huge, "m": -(2**70)}


def test_fast_and_strict_readers_give_equal_records(tmp_path: Path) -> None:
    lines = [
        _compact(
            {
                "query_id": "q1",
                "query": "naïve 🙂 \u2028 q",
                "results": [
                    {"rank": 2, "text": 'b: "quoted": c', "score": 0.5, "metadata": {"s": 1}},
                    {"rank": 1, "text": "a", "score": 3, "document_id": "d", "start": 0, "end": 1},
                ],
                "latency_ms": 12,
                "metadata": {"nested": {"x": [1, 2.5, None, True]}, "f": 1e300},
                "trace_id": "t",
                "sequence": 0,
            }
        ),
        json.dumps({"query": "spaced", "results": [{"rank": 1, "text": "x", "score": 0.1}]}),
    ]
    path = _write(tmp_path, *lines)

    for number, text in enumerate(lines, start=2):
        line = JsonlLine(number, text, False, 0)
        fast = _read_record_line_fast(line, path, [])
        strict = read_record_line(line, path, [])
        assert fast is not None
        assert strict is not None
        assert fast == strict
        assert [type(r.score) for r in fast.results] == [type(r.score) for r in strict.results]
    assert [r.query for r in read_run(path).records] == ["naïve 🙂 \u2028 q", "spaced"]


def test_a_torn_last_line_is_still_a_warning(tmp_path: Path) -> None:
    good = _compact({"query": "q", "results": []})
    path = tmp_path / "r.jsonl"
    path.write_text(f"{HEADER}\n{good}\n{good[:-3]}", "utf-8")
    run = read_run(path)
    assert len(run.records) == 1
    assert len(run.warnings) == 1
    assert ":3: incomplete last line" in run.warnings[0]


def test_a_0x_document_on_one_line_is_parsed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spanchor_core.runs import legacy

    results = [{"text": "a", "document_id": "d", "score": float(n)} for n in range(3)]
    whole = tmp_path / "whole.json"
    whole.write_text(_compact({"q1": results, "q2": results[:1]}) + "\n", "utf-8")
    listed = tmp_path / "list.json"
    listed.write_text(
        _compact([{"query_id": "q1", "question": "?", "retrieved": results}]), "utf-8"
    )
    expected = [read_run(whole).records, read_run(listed).records]

    def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("the file was read a second time")

    monkeypatch.setattr(legacy, "read_text", refuse)
    assert [read_run(whole).records, read_run(listed).records] == expected
    assert [r.query_id for r in expected[0]] == ["q1", "q2"]
    assert [len(r.results) for r in expected[0]] == [3, 1]
    assert expected[1][0].query_id == "q1"
