"""RunStream.fields: the records as scoring reads them, equal to the records read, byte progress."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanchor_core.errors import RunError
from spanchor_core.runs import iter_run, read_run
from spanchor_core.runs.model import RecordFields

HEADER = json.dumps(
    {"kind": "spanchor.run", "schema_version": 1, "created_at": "2025-01-02T03:04:05Z"},
    separators=(",", ":"),
)


def _compact(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


LINES = [
    _compact(
        {
            "query_id": "q1",
            "query": "naïve 🙂 q",
            "results": [
                {"rank": 3, "text": "c", "score": 0.5},
                {"rank": 1, "text": 'say "x": y', "document_id": "d", "start": 0, "end": 4},
                {"rank": 1, "text": "tie, second in file order"},
                {"text": "no rank: its position (4)"},
            ],
            "trace_id": "t",
            "stage": "context",
            "sequence": 2,
            "source": "bm25",
        }
    ),
    _compact({"query": "no id", "results": [], "error": "boom", "latency_ms": 1e300}),
    json.dumps({"query": "spaced, strict path", "results": [{"rank": 1, "text": "x"}]}),
    _compact({"query": "big", "results": [], "metadata": {"n": 2**70}}),
]


def _write(tmp_path: Path, *lines: str, tail: str = "\n") -> Path:
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([HEADER, *lines]) + tail, "utf-8")
    return path


def test_fields_are_the_records_fields(tmp_path: Path) -> None:
    path = _write(tmp_path, *LINES, _compact({"query": "torn", "results": []})[:-4], tail="")
    run = read_run(path)
    stream = iter_run(path)
    fields = list(stream.fields())
    assert fields == [RecordFields.of(record) for record in run.records]
    assert stream.warnings == run.warnings
    assert len(run.warnings) == 1
    assert stream.records_read == len(run.records) == 4
    first = fields[0]
    assert [text for text, *_ in first.results] == [
        'say "x": y',
        "tie, second in file order",
        "c",
        "no rank: its position (4)",
    ]
    assert first.results[0] == ('say "x": y', "d", 0, 4)
    assert (first.trace_id, first.stage, first.sequence, first.source, first.line) == (
        "t",
        "context",
        2,
        "bm25",
        2,
    )
    assert fields[1].error == "boom"
    assert fields[1].query_id is None


@pytest.mark.parametrize(
    "line",
    [
        '{"query":"q","query":"r","results":[]}',
        '{"query":"q","results":[{"rank":1,"text":"x","text":"y"}]}',
        '{"query":"q","results":[{"rank":"1","text":"x"}]}',
    ],
)
def test_fields_refuse_what_the_records_refuse(tmp_path: Path, line: str) -> None:
    path = _write(tmp_path, LINES[0], line)
    with pytest.raises(RunError) as expected:
        read_run(path)
    with pytest.raises(RunError) as got:
        list(iter_run(path).fields())
    assert str(got.value) == str(expected.value)
    assert got.value.line == 3


def test_0x_files_give_the_same_fields(tmp_path: Path) -> None:
    lines = tmp_path / "old.jsonl"
    lines.write_text(
        _compact({"query_id": "q1", "question": "?", "retrieved": [{"text": "a", "score": 1}]})
        + "\n",
        "utf-8",
    )
    whole = tmp_path / "old.json"
    whole.write_text(_compact({"q1": [{"text": "b"}, {"text": "c"}]}), "utf-8")
    for path in (lines, whole):
        assert list(iter_run(path).fields()) == [RecordFields.of(r) for r in read_run(path).records]


def test_bytes_read_goes_to_the_file_size(tmp_path: Path) -> None:
    path = _write(tmp_path, *LINES)
    stream = iter_run(path)
    size = path.stat().st_size
    assert stream.bytes_total == size
    assert stream.bytes_read == len(HEADER) + 1  # the header has been read
    seen = []
    for _ in stream.fields():
        seen.append(stream.bytes_read)
    assert seen == sorted(seen)
    assert seen[-1] == size
    assert seen[0] == len(HEADER) + 1 + len(LINES[0].encode()) + 1
    whole = tmp_path / "old.json"
    whole.write_text(_compact({"q1": [{"text": "b"}]}), "utf-8")
    opened = iter_run(whole)  # read whole when opened
    assert opened.bytes_read == opened.bytes_total == whole.stat().st_size


def _result(**values: object) -> dict[str, object]:
    """A result with all seven keys in written order, as our writers write it."""
    base: dict[str, object] = {
        "rank": 1,
        "text": "t",
        "score": 0.5,
        "document_id": None,
        "start": None,
        "end": None,
        "metadata": {},
    }
    base.update(values)
    return base


@pytest.mark.parametrize(
    "results",
    [
        [_result(rank=1), _result(rank=2, text=None, document_id="d", start=0, end=3)],
        [_result(rank=2, text="b"), _result(rank=1, text="a"), _result(rank=1, text="a2")],
        [_result(rank=1, score=1), _result(rank=2)],  # an int score: checked one by one
        [_result(rank=1, score=2**70)],  # too big for a float: the model words it
        [_result(rank=True)],  # a boolean is no rank
        [_result(rank=1, metadata=None)],
        [{"rank": 1, "text": "no metadata", "score": None, "document_id": None, "start": 0}],
        [{**_result(), "extra": 1}],
        [_result(start=1.5)],
        [_result(text=3)],
        [_result(document_id=7)],
        [_result(score="0.5")],
        [_result(end=-1, start=-5)],
        [_result(metadata={"nested": {"a": [1, 2]}})],
    ],
)
def test_fields_of_written_results_are_the_records_fields(
    tmp_path: Path, results: list[dict[str, object]]
) -> None:
    """The column-at-a-time check of written results (``lines._plain_fields``) accepts and
    orders exactly what the per-result check does, and steps aside for everything else."""
    line = _compact({"query_id": "q", "query": "?", "results": results})
    path = _write(tmp_path, line)
    refused: RunError | None = None
    try:
        expected = [RecordFields.of(record) for record in read_run(path).records]
    except RunError as err:
        refused = err
    if refused is None:
        assert list(iter_run(path).fields()) == expected
    else:
        with pytest.raises(RunError) as got:
            list(iter_run(path).fields())
        assert str(got.value) == str(refused)
