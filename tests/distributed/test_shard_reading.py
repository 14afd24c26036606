"""A shard actor reads its documents from the corpus file, passing over other shards' rows by
their id (spanchor_core.corpus.sources): the shards must still hold exactly the documents
that reading the whole file and keeping the shard's gives, with the same texts and hashes,
whatever the file's layout (other key orders, escapes, blank lines, a byte-order mark,
CRLF, a torn last line), and a bad row of the shard must still be refused at its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanchor_core.corpus import load_corpus_file, shard_of
from spanchor_core.corpus.lazy import fingerprint_of
from spanchor_core.errors import CorpusError


def _expected(path: Path, shard: int, shards: int) -> dict[str, tuple[str, str]]:
    whole = load_corpus_file(path)
    return {
        doc_id: (whole[doc_id].text, whole[doc_id].sha256)
        for doc_id in whole
        if shard_of(doc_id, shards) == shard
    }


def _held(path: Path, shard: int, shards: int) -> dict[str, tuple[str, str]]:
    corpus = load_corpus_file(path, shard=(shard, shards))
    return {doc_id: (corpus[doc_id].text, corpus[doc_id].sha256) for doc_id in corpus}


_ID = st.one_of(
    st.from_regex(r"d[0-9]{1,4}", fullmatch=True),
    st.text('abé"ü€z_\t', min_size=1, max_size=6),  # escapes, non-ASCII
)


@st.composite
def _lines(draw: st.DrawFn) -> bytes:
    ids = draw(st.lists(_ID, min_size=1, max_size=12, unique=True))
    out = []
    for doc_id in ids:
        row = {"_id": doc_id, "title": draw(st.sampled_from(["", "T"])), "text": f"x {doc_id} y"}
        if draw(st.booleans()):  # another key first: read by the strict path
            row = {"text": row["text"], "_id": doc_id}
        text = json.dumps(row, ensure_ascii=draw(st.booleans()))
        if draw(st.booleans()):
            text = " " + text.replace('": "', '":"', 1)
        out.append(text.encode() + draw(st.sampled_from([b"\n", b"\r\n", b"\n\n"])))
    data = b"".join(out)
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if draw(st.booleans()):
        data = data.rstrip(b"\r\n")  # no newline after the last row
    return data


@settings(max_examples=60, deadline=None)
@given(data=_lines(), shards=st.integers(2, 5))
def test_each_shard_holds_its_documents(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, shards: int
) -> None:
    path = tmp_path_factory.mktemp("c") / "corpus.jsonl"
    path.write_bytes(data)
    whole = load_corpus_file(path)
    pairs = []
    for shard in range(shards):
        held = _held(path, shard, shards)
        assert held == _expected(path, shard, shards)
        pairs += [(doc_id, sha) for doc_id, (_, sha) in held.items()]
    assert fingerprint_of(sorted(pairs)) == whole.fingerprint


def _write(path: Path, rows: list[str]) -> Path:
    path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def _in_shard(shard: int, shards: int) -> str:
    return next(f"d{i}" for i in range(1000) if shard_of(f"d{i}", shards) == shard)


def test_a_bad_row_of_the_shard_is_refused_at_its_line(tmp_path: Path) -> None:
    mine, other = _in_shard(0, 4), _in_shard(1, 4)
    path = _write(
        tmp_path / "c.jsonl",
        [
            json.dumps({"_id": other, "text": "fine"}),
            json.dumps({"_id": mine, "text": 5}),
        ],
    )
    with pytest.raises(CorpusError, match="text field 'text'") as caught:
        load_corpus_file(path, shard=(0, 4))
    assert caught.value.line == 2


def test_a_row_of_another_shard_is_passed_over_by_its_id(tmp_path: Path) -> None:
    # the row is broken after its id: only the driver's reading of the whole file refuses it
    mine, other = _in_shard(0, 4), _in_shard(1, 4)
    path = _write(
        tmp_path / "c.jsonl",
        [f'{{"_id": "{other}", "text": oops}}', json.dumps({"_id": mine, "text": "kept"})],
    )
    assert list(load_corpus_file(path, shard=(0, 4))) == [mine]
    with pytest.raises(CorpusError):
        load_corpus_file(path)


def test_parquet_shards_hold_their_documents(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [{"_id": f"d{i}", "title": "T" if i % 3 else "", "text": f"t {i}"} for i in range(50)]
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=7)
    whole = load_corpus_file(path)
    for shard in range(3):
        held = load_corpus_file(path, shard=(shard, 3))
        expected = [d for d in whole if shard_of(d, 3) == shard]
        assert list(held) == expected
        assert all(held[d].sha256 == whole[d].sha256 for d in held)
    bad = [*rows, {"_id": _in_shard(2, 3), "title": "", "text": None}]
    pq.write_table(pa.Table.from_pylist(bad), path)
    with pytest.raises(CorpusError, match="row 51: "):
        load_corpus_file(path, shard=(2, 3))
    assert len(load_corpus_file(path, shard=(0, 3))) == len(
        [d for d in whole if shard_of(d, 3) == 0]
    )
