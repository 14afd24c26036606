"""spanchor 0.x ``{query_id: [results]}`` files are read member by member (never parsed whole),
to the same run and the same errors as the whole-document reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanchor_core import _io
from spanchor_core.errors import RunError
from spanchor_core.runs import legacy as legacy_module
from spanchor_core.runs import read as read_module
from spanchor_core.runs import read_run
from spanchor_core.runs.legacy import _stream_0x_object, read_0x_document

DOCUMENT = {
    f"q{n}": [
        {"text": f'chunk {n}.{r} \u00e9\u2028 "quoted"', "score": 1 - r / 10, "doc_id": "d"}
        for r in range(3)
    ]
    for n in range(40)
}
DOCUMENT["q7"] = []
DOCUMENT["q9"][0]["score"] = float("nan")


def _whole(path: Path) -> object:
    """What the whole-document reader gives (the parsed document handed over)."""
    data = json.loads(path.read_text(encoding="utf-8-sig"))
    return read_0x_document(path, data)


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("bom", [False, True])
def test_streamed_run_is_the_whole_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indent: int | None, bom: bool
) -> None:
    monkeypatch.setattr(legacy_module, "_CHUNK", 512)  # members cross the chunks read
    path = tmp_path / "results.json"
    text = json.dumps(DOCUMENT, indent=indent, ensure_ascii=False)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    streamed = _stream_0x_object(path)
    assert streamed is not None
    expected = _whole(path)
    assert streamed.records == expected.records  # type: ignore[attr-defined]
    assert streamed.header == expected.header  # type: ignore[attr-defined]
    assert streamed.source_format == expected.source_format  # type: ignore[attr-defined]
    assert read_run(path).records == streamed.records


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"q1": [], "q1": []}', "appears twice"),
        ('{"q1": [{"text": "a", "x": 1, "x": 2}]}', "appears twice"),
        ('{"q1": [{"text": "a"}]} trailing', "invalid JSON"),
        ('{"q1": [{"text": "a"}], }', "invalid JSON"),
        ('{"q1": 3}', "results must be a list"),
        ('{"q1": [], "kind": "spanchor.gold"}', "unknown kind"),
        ('{"q1": [], "per_query_metrics": {}}', "looks like an evaluation"),
    ],
)
def test_errors_are_the_whole_document_readers(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "results.json"
    path.write_text(text, encoding="utf-8")
    assert _stream_0x_object(path) is None  # left to the whole-document reader
    with pytest.raises(RunError, match=message):
        read_run(path)


def test_a_document_on_one_line_longer_than_a_jsonl_line_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 0.x file written by json.dump on one line was refused as an over-long JSONL line
    monkeypatch.setattr(_io, "MAX_LINE_BYTES", 256)
    monkeypatch.setattr(read_module, "MAX_LINE_BYTES", 256)
    monkeypatch.setattr(legacy_module, "_CHUNK", 512)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(DOCUMENT, ensure_ascii=False), encoding="utf-8")
    assert path.stat().st_size > 256
    run = read_run(path)
    assert [record.query_id for record in run.records] == list(DOCUMENT)
    assert run.records == _whole(path).records  # type: ignore[attr-defined]
