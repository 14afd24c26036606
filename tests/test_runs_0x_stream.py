"""spanchor 0.x ``{query_id: [results]}`` files are read member by member (never parsed whole),
to the same run and the same errors as the whole-document reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanchor_core import _io
from spanchor_core.corpus import Corpus
from spanchor_core.errors import RunError
from spanchor_core.evaluate import evaluate, evaluate_file, write_evaluation
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_core.runs import Run, iter_run, read_run
from spanchor_core.runs import legacy as legacy_module
from spanchor_core.runs import read as read_module
from spanchor_core.runs.legacy import _stream_0x_object, read_0x_document
from spanchor_core.runs.model import FORMAT_0X_JSON, RecordFields

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


# -- RunStream: the object read member by member, never whole -----------------------------------

VARIED = {
    "plain": [{"text": "alpha beta", "score": 0.5, "doc_id": "d1", "start": 0, "end": 10}],
    "aliases": [{"chunk": "alpha", "similarity": "0.7", "document": "d1"}],
    "both-ids": [{"text": "beta", "document_id": "d2", "doc_id": "d1"}],
    "null-id": [{"text": "beta", "document_id": None, "doc_id": "d1"}],
    "int-id": [{"text": "gamma", "doc_id": 7}],
    "string-offsets": [{"text": "gamma", "start": "3", "end": 8.0}],
    "ranked": [{"text": "second", "rank": 2}, {"text": "first", "rank": 1}],
    "hinted": [{"text": "delta", "metadata": {"start_index": 4}}],
    "nan-and-huge": [{"text": "x", "score": float("nan")}, {"text": "y", "score": 10**400}],
    "no-text": [{"score": 1}, {"text": None, "doc_id": "d3"}],
    "empty": [],
}


def _stream_layout(tmp_path: Path, document: object, indent: int | None = None) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document, indent=indent, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def small_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files of a few hundred bytes behave as large ones: read a few bytes at a time, and a
    first line of 64 bytes counts as a document on one line."""
    monkeypatch.setattr(legacy_module, "_CHUNK", 512)
    monkeypatch.setattr(read_module, "_STREAM_FROM", 64)


@pytest.mark.usefixtures("small_reads")
@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("document", [DOCUMENT, VARIED], ids=["plain", "varied"])
def test_a_stream_reads_the_object_member_by_member(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indent: int | None, document: object
) -> None:
    path = _stream_layout(tmp_path, document, indent)
    expected = read_run(path)
    calls: list[Path] = []
    whole_document = legacy_module.read_0x_document

    def counted(file: Path, *data: object) -> Run:
        calls.append(file)
        return whole_document(file, *data)

    monkeypatch.setattr(read_module, "read_0x_document", counted)
    stream = iter_run(path)
    assert stream.header == expected.header
    assert stream.source_format == expected.source_format == FORMAT_0X_JSON
    assert list(stream) == expected.records
    assert list(stream.fields()) == [RecordFields.of(r) for r in expected.records]
    assert stream.records_read == len(expected.records)
    assert stream.bytes_read == stream.bytes_total == path.stat().st_size
    assert calls == []  # never read whole


@pytest.mark.usefixtures("small_reads")
@pytest.mark.parametrize(
    ("later", "message"),
    [
        ('"q1": []', "appears twice"),
        ('"q9": 3', "results must be a list"),
        ('"q9": [{"text": 5}]', "text must be a string"),
        ('"kind": "spanchor.gold"', "unknown kind"),
        ('"per_query_metrics": {}', "looks like an evaluation"),
    ],
)
def test_a_streams_errors_are_the_whole_readers(tmp_path: Path, later: str, message: str) -> None:
    path = tmp_path / "results.json"
    first = '"q1": [{"text": "' + "a" * 80 + '"}]'
    path.write_text("{" + first + ", " + later + "}", encoding="utf-8")
    with pytest.raises(RunError, match=message) as whole:
        read_run(path)
    stream = iter_run(path)  # opened: the first member reads
    for read in (lambda: list(stream), lambda: list(stream.fields())):
        with pytest.raises(RunError, match=message) as streamed:
            read()
        assert str(streamed.value) == str(whole.value)


@pytest.mark.usefixtures("small_reads")
def test_a_member_longer_than_the_buffer_is_read_whole_to_the_same_records(
    tmp_path: Path,
) -> None:
    document = {"q1": [{"text": "a"}], "q2": [{"text": "b" * 2000}], "q3": [{"text": "c"}]}
    path = _stream_layout(tmp_path, document)
    stream = iter_run(path)
    assert list(stream.fields()) == [RecordFields.of(r) for r in read_run(path).records]
    assert stream.records_read == 3


@pytest.mark.usefixtures("small_reads")
def test_an_object_that_also_reads_as_a_0x_record_is_refused_when_streamed(
    tmp_path: Path,
) -> None:
    # on one line, {"retrieved": [...], "qid": ...} makes the line a 0.x JSONL record
    # (read_run's reading); a stream that took "q1" as a query already says so
    path = tmp_path / "results.json"
    first = '"q1": [{"text": "' + "a" * 80 + '"}]'
    path.write_text("{" + first + ', "retrieved": [{"text": "b"}], "qid": "x"}', encoding="utf-8")
    assert read_run(path).source_format == "spanchor-0.x-jsonl"
    with pytest.raises(RunError, match=r"also reads as one 0\.x results record"):
        list(iter_run(path))


@pytest.mark.parametrize("indent", [None, 2])
def test_a_streamed_0x_run_scores_as_the_run_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indent: int | None
) -> None:
    monkeypatch.setattr(legacy_module, "_CHUNK", 512)
    monkeypatch.setattr(read_module, "_STREAM_FROM", 64)
    texts = {"d1": "alpha beta gamma delta. " * 20, "d2": "epsilon zeta eta theta. " * 20}
    corpus = Corpus.from_texts(texts)
    gold = GoldSet(
        [
            GoldQuery("q1", "q1?", (Anchor.from_span(corpus, "d1", 0, 40),)),
            GoldQuery("q2", "q2?", (Anchor.from_span(corpus, "d2", 24, 70),)),
            GoldQuery("q3", "q3?", (Anchor.from_span(corpus, "d2", 0, 20),)),
        ]
    )
    document = {
        "q1": [{"text": texts["d1"][0:30], "score": 0.9}, {"text": "absent zq"}],
        "q2": [{"chunk": texts["d2"][30:60], "doc_id": "d2", "start": "30", "end": 60}],
        "q9": [{"text": texts["d1"][5:25], "doc_id": "d1", "start": 5, "end": 25}],
    }
    path = _stream_layout(tmp_path, document, indent)
    assert iter_run(path)._layout.members
    streamed, whole = tmp_path / "streamed.json", tmp_path / "whole.json"
    write_evaluation(evaluate_file(corpus, gold, iter_run(path)), streamed)
    write_evaluation(evaluate(corpus, gold, read_run(path)), whole)
    assert '"recall@5": 0.75' in whole.read_text(encoding="utf-8")  # q1 was found
    assert _without_created_at(streamed) == _without_created_at(whole)


def _without_created_at(path: Path) -> bytes:
    return b"\n".join(
        line for line in path.read_bytes().split(b"\n") if b'"created_at"' not in line
    )
