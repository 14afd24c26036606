"""A one-file corpus opened lazily: the same documents and fingerprint, texts read on demand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanchor_core.corpus import Corpus, FieldMap, load_corpus, load_corpus_file
from spanchor_core.corpus.lazy import LazyCorpus, open_corpus_file
from spanchor_core.errors import CorpusError
from spanchor_core.gold import Anchor

QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart" / "docs"


def _rows() -> list[dict[str, str]]:
    directory = load_corpus(QUICKSTART)
    rows = [
        {"_id": d, "title": f"T {d}" if n % 2 else "", "text": directory.text(d)}
        for n, d in enumerate(directory)
    ]
    rows.append({"_id": "crlf", "title": "", "text": "caf\u0065\u0301 one\r\ntwo\u00a0"})
    rows.reverse()
    return rows


def _jsonl(path: Path, rows: list[dict[str, str]], *, blank: bool = False) -> Path:
    gap = "\n  \n" if blank else "\n"
    path.write_bytes(("\ufeff" + gap.join(json.dumps(r) for r in rows) + "\n").encode())
    return path


@pytest.mark.parametrize("blank", [False, True])
def test_jsonl_documents_equal_the_loaded_ones(tmp_path: Path, blank: bool) -> None:
    path = _jsonl(tmp_path / "c.jsonl", _rows(), blank=blank)
    loaded = load_corpus_file(path)
    lazy = open_corpus_file(path)
    assert isinstance(lazy, LazyCorpus)
    assert isinstance(lazy, Corpus)
    assert lazy.fingerprint == loaded.fingerprint
    assert list(lazy) == list(loaded)
    assert len(lazy) == len(loaded)
    assert lazy.reads == 0  # opening reads no text back
    assert lazy.total_chars == loaded.total_chars
    for doc_id in reversed(list(loaded)):
        assert lazy[doc_id] == loaded[doc_id]
        assert lazy.length(doc_id) == len(loaded.text(doc_id))
    assert lazy.reads == len(loaded)
    assert "crlf" in lazy
    assert "nope" not in lazy


def test_gold_anchors_check_against_a_lazy_corpus(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", _rows())
    lazy = open_corpus_file(path)
    anchor = Anchor.from_span(lazy, "crlf", 0, 5)
    assert anchor == Anchor.from_span(load_corpus_file(path), "crlf", 0, 5)
    assert lazy.reads == 1


def test_parquet_documents_equal_the_loaded_ones(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [{"doc": r["_id"], "body": r["text"]} for r in _rows()]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "c.parquet", row_group_size=2)
    fields = FieldMap(id="doc", text="body", title=None)
    loaded = load_corpus_file(tmp_path / "c.parquet", fields)
    lazy = open_corpus_file(tmp_path / "c.parquet", fields)
    assert lazy.fingerprint == loaded.fingerprint
    for doc_id in loaded:
        assert lazy.text(doc_id) == loaded.text(doc_id)


def test_a_file_rewritten_under_it_is_an_error(tmp_path: Path) -> None:
    rows = [{"_id": "a", "text": "alpha"}, {"_id": "b", "text": "beta"}]
    path = _jsonl(tmp_path / "c.jsonl", rows)
    lazy = open_corpus_file(path)
    _jsonl(path, [{"_id": "a", "text": "ALPHABET"}, {"_id": "b", "text": "beta"}])
    with pytest.raises(CorpusError, match="changed since the corpus was opened"):
        lazy.text("b")  # its line moved: another document is there now
    with pytest.raises(CorpusError, match="changed since the corpus was opened"):
        lazy.text("a")


def test_bad_files_are_the_same_errors(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", [{"_id": "a", "text": "x"}, {"_id": "a", "text": "y"}])
    with pytest.raises(CorpusError, match="a second document with the id 'a'"):
        open_corpus_file(path)
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="holds no document"):
        open_corpus_file(tmp_path / "empty.jsonl")
    with pytest.raises(CorpusError, match="not a corpus file"):
        open_corpus_file(tmp_path / "c.txt")
