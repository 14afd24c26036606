"""One-file corpora (JSONL, Parquet): same documents, hashes and fingerprint as a directory."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from spanchor_core.corpus import (
    Corpus,
    FieldMap,
    iter_corpus_file,
    load_corpus,
    load_corpus_file,
    shard_of,
)
from spanchor_core.errors import CorpusError

QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart" / "docs"


def _write_jsonl(path: Path, rows: Sequence[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_matches_the_directory_it_was_made_from(tmp_path: Path) -> None:
    directory = load_corpus(QUICKSTART)
    rows = [{"_id": doc_id, "title": "", "text": directory.text(doc_id)} for doc_id in directory]
    rows.reverse()  # the order of the rows does not matter
    corpus = load_corpus(_write_jsonl(tmp_path / "corpus.jsonl", rows))
    assert list(corpus) == list(directory)
    assert corpus.fingerprint == directory.fingerprint


def test_text_is_canonicalised_and_title_joined_by_a_blank_line(tmp_path: Path) -> None:
    path = _write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"_id": "a", "title": "Cafe\u0301", "text": "line one\r\nline two"},
            {"_id": 7, "title": "", "text": "no title"},
        ],
    )
    corpus = load_corpus_file(path)
    assert corpus.text("a") == "Caf\u00e9\n\nline one\nline two"
    assert corpus.text("7") == "no title"
    expected = Corpus.from_texts({"a": "Caf\u00e9\n\nline one\nline two", "7": "no title"})
    assert corpus.fingerprint == expected.fingerprint
    untitled = load_corpus_file(path, FieldMap(title=None))
    assert untitled.text("a") == "line one\nline two"


def test_field_mapping(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "c.jsonl", [{"doc": "x", "body": "hello"}])
    assert load_corpus_file(path, FieldMap(id="doc", text="body")).text("x") == "hello"


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"_id": "a", "text": "1"}, {"_id": "a", "text": "2"}], ":2: a second document"),
        ([{"text": "1"}], ":1: document id field '_id' is missing"),
        ([{"_id": "a", "text": 3}], ":1: text field 'text' of document 'a' is a int"),
        ([{"_id": "../a", "text": "x"}], ":1: document id '../a' points outside"),
        ([[1, 2]], ":1: is not an object"),
    ],
)
def test_bad_rows_name_their_line(tmp_path: Path, rows: list[object], message: str) -> None:
    path = _write_jsonl(tmp_path / "c.jsonl", rows)
    with pytest.raises(CorpusError) as caught:
        load_corpus(path)
    assert message in str(caught.value)
    assert str(caught.value).startswith(str(path))


def test_empty_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="holds no document"):
        load_corpus(_write_jsonl(tmp_path / "c.jsonl", []))
    with pytest.raises(CorpusError, match="does not exist"):
        load_corpus(tmp_path / "none.jsonl")


def test_shards_partition_the_corpus(tmp_path: Path) -> None:
    rows = [{"_id": f"d{i}", "text": f"text {i}"} for i in range(40)]
    path = _write_jsonl(tmp_path / "c.jsonl", rows)
    shards = [load_corpus_file(path, shard=(i, 4)) for i in range(4)]
    ids = sorted(doc_id for shard in shards for doc_id in shard)
    assert ids == sorted(r["_id"] for r in rows)
    assert all(len(shard) > 0 for shard in shards)
    for i, shard in enumerate(shards):
        assert all(shard_of(doc_id, 4) == i for doc_id in shard)
    assert [d.id for d in iter_corpus_file(path)] == [r["_id"] for r in rows]


def test_parquet_matches_jsonl(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [{"_id": f"d{i}", "title": "T" if i % 2 else "", "text": f"b\r\n{i}"} for i in range(5)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "c.parquet")
    parquet = load_corpus(tmp_path / "c.parquet")
    jsonl = load_corpus(_write_jsonl(tmp_path / "c.jsonl", list(rows)))
    assert parquet.fingerprint == jsonl.fingerprint
    assert parquet.text("d1") == "T\n\nb\n1"
    with pytest.raises(CorpusError, match="no column 'body'"):
        load_corpus_file(tmp_path / "c.parquet", FieldMap(text="body"))
