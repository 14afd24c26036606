"""Chunk inventories: builders, mapping, the spanchor.chunks file (round trip, bad input)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanchor_core.corpus import Corpus
from spanchor_core.diagnosis import (
    CHUNKS_KIND,
    Chunk,
    ChunkInventory,
    ChunkInventoryError,
    ChunkLine,
    ChunksHeader,
    chunk_file_schemas,
    chunks_from_dicts,
    chunks_from_documents,
    chunks_from_nodes,
    chunks_from_results,
    chunks_from_texts,
    load_inventory,
    map_inventory,
    read_chunks,
    write_chunks,
)
from spanchor_core.errors import InputError
from spanchor_core.locate import Locator, MatchStatus
from spanchor_core.runs import RetrievedResult
from spanchor_core.spans import DocSpan

TEXT = "Alpha paragraph about kettles.\n\nBeta paragraph about toasters and their crumb trays."
CORPUS = Corpus.from_texts({"doc": TEXT, "other": "Gamma text that stands alone here."})


def test_map_inventory_maps_every_chunk_once_and_indexes_spans() -> None:
    chunks = [
        *chunks_from_texts(["Alpha paragraph about kettles.", "not in the corpus at all, no"]),
        Chunk(None, "other", 0, 5),
        Chunk("Beta paragraph", "doc", 32, 46),
    ]
    inventory = map_inventory(CORPUS, chunks, description="test", parameters={"size": 1})
    assert isinstance(inventory, ChunkInventory)
    assert len(inventory) == 4
    assert [item.status for item in inventory] == [
        MatchStatus.EXACT,
        MatchStatus.UNMAPPED,
        MatchStatus.SPAN,
        MatchStatus.VERIFIED,
    ]
    assert inventory[0].span == DocSpan("doc", 0, 30)
    assert inventory.unmapped == 1
    assert inventory.spans == {"doc": ((0, 30), (32, 46)), "other": ((0, 5),)}
    assert inventory.longest == {"doc": 30, "other": 5}
    assert inventory.status_counts()["exact"] == 1
    assert "1 unmapped" in repr(inventory)
    assert map_inventory(CORPUS, []).spans == {}


def test_map_inventory_refuses_a_locator_of_another_corpus() -> None:
    with pytest.raises(ChunkInventoryError, match="different corpus"):
        map_inventory(CORPUS, [], locator=Locator(Corpus.from_texts({"x": "y"})))


@pytest.mark.parametrize(
    ("chunk", "message"),
    [
        (Chunk("t", "doc", -1, 3), "must not be negative"),
        (Chunk("t", "doc", 5, 3), "lies before start"),
        (Chunk(None, "doc", 0, None), "needs document_id, start and end"),
        (Chunk("t", "doc", 1.5, 3), "integer offset"),  # type: ignore[arg-type]
    ],
)
def test_impossible_chunks_are_input_errors(chunk: Chunk, message: str) -> None:
    with pytest.raises(ChunkInventoryError, match=message) as raised:
        map_inventory(CORPUS, [chunk])
    assert isinstance(raised.value, InputError)
    assert isinstance(raised.value, ValueError)


def test_chunks_from_dicts_reads_the_usual_aliases() -> None:
    chunks = chunks_from_dicts(
        [
            {"id": "c1", "page_content": "Alpha", "source": "doc", "start": 0, "lang": "en"},
            {"chunk_id": "c2", "text": "Beta", "metadata": {"x": 1}},
        ]
    )
    assert chunks[0] == Chunk("Alpha", "doc", 0, None, "c1", {"lang": "en"})
    assert chunks[1] == Chunk("Beta", None, None, None, "c2", {"x": 1})
    with pytest.raises(ChunkInventoryError, match="chunk 1"):
        chunks_from_dicts([{"text": 3}])
    with pytest.raises(ChunkInventoryError, match="chunk 2 is a str"):
        chunks_from_dicts([{"text": "a"}, "b"])  # type: ignore[list-item]
    with pytest.raises(ChunkInventoryError, match="chunk 1 is a int"):
        chunks_from_texts([1])  # type: ignore[list-item]


def test_chunks_from_results_take_the_id_from_metadata() -> None:
    results = [RetrievedResult(1, "Alpha", 0.5, "doc", 0, 5, {"node_id": "n1"})]
    assert chunks_from_results(results) == [Chunk("Alpha", "doc", 0, 5, "n1", {"node_id": "n1"})]


@dataclass
class FakeDocument:
    """Duck-typed LangChain Document."""

    page_content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass
class FakeNode:
    """Duck-typed LlamaIndex TextNode."""

    text: str
    start_char_idx: int | None = None
    end_char_idx: int | None = None
    node_id: str = "n"
    ref_doc_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeScored:
    node: FakeNode
    score: float = 1.0


def test_chunks_from_documents_use_start_index_as_a_hint_and_an_explicit_id_rule() -> None:
    docs = [
        FakeDocument("Alpha paragraph", {"start_index": 0, "corpus_id": "doc"}, id="d1"),
        FakeDocument("Beta", {"start_index": -1, "source": "/x/doc.md"}),
    ]
    chunks = chunks_from_documents(docs, document_id="corpus_id")
    assert (chunks[0].document_id, chunks[0].start, chunks[0].end) == ("doc", 0, 15)
    assert chunks[0].chunk_id == "d1"
    assert (chunks[1].document_id, chunks[1].start) == (None, None)
    assert chunks_from_documents(docs, document_id=lambda d: "doc")[1].document_id == "doc"
    with pytest.raises(ChunkInventoryError, match="page_content"):
        chunks_from_documents([object()])
    with pytest.raises(ChunkInventoryError, match="metadata key, a function or None"):
        chunks_from_documents(docs, document_id=3)  # type: ignore[arg-type]


def test_chunks_from_nodes_unwrap_scored_nodes_and_keep_provenance() -> None:
    node = FakeNode("Beta", 32, 36, "n7", "ref", {"document_id": "doc"})
    (chunk,) = chunks_from_nodes([FakeScored(node)])
    assert (chunk.text, chunk.document_id, chunk.start, chunk.end) == ("Beta", "doc", 32, 36)
    assert chunk.chunk_id == "n7"
    assert chunk.metadata["ref_doc_id"] == "ref"
    (other,) = chunks_from_nodes([FakeNode("Beta", -1, None)], document_id=lambda n: None)
    assert (other.document_id, other.start, other.end) == (None, None, None)
    inventory = map_inventory(CORPUS, [chunk])
    assert inventory[0].status is MatchStatus.VERIFIED


# -- the file -------------------------------------------------------------------------------------


def test_round_trip_of_an_inventory(tmp_path: Path) -> None:
    chunks = [
        Chunk("Alpha paragraph about kettles.", "doc", 0, 30, "c1", {"page": 1, "tags": ["a"]}),
        Chunk(None, "other", 0, 5, "c2"),
        Chunk("ünïcode\ttext", None, None, None, None),
    ]
    inventory = map_inventory(CORPUS, chunks, description="paragraphs", parameters={"n": 3})
    path = tmp_path / "sub" / "chunks.jsonl"
    write_chunks(inventory, path, tags={"team": "x"})
    found = read_chunks(path)
    assert found.chunks == tuple(chunks)
    assert found.header.kind == CHUNKS_KIND
    assert found.header.description == "paragraphs"
    assert found.header.parameters == {"n": 3}
    assert found.header.corpus_fingerprint == CORPUS.fingerprint
    assert found.header.tags == {"team": "x"}
    assert found.path == path
    loaded = load_inventory(path, CORPUS)
    assert [item.span for item in loaded] == [item.span for item in inventory]
    assert loaded.description == "paragraphs"
    first, second = path.read_text(encoding="utf-8").splitlines()[:2]
    assert json.loads(first)["kind"] == "spanchor.chunks"
    assert json.loads(second) == {
        "chunk_id": "c1",
        "text": "Alpha paragraph about kettles.",
        "document_id": "doc",
        "start": 0,
        "end": 30,
        "metadata": {"page": 1, "tags": ["a"]},
    }


chunk_values = st.builds(
    Chunk,
    text=st.text(max_size=20),
    document_id=st.none() | st.text(min_size=1, max_size=5),
    start=st.none() | st.integers(0, 50),
    end=st.none(),
    chunk_id=st.none(),
    metadata=st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=2),
)


@given(chunks=st.lists(chunk_values, max_size=6))
def test_any_chunks_round_trip(
    tmp_path_factory: pytest.TempPathFactory, chunks: list[Chunk]
) -> None:
    path = tmp_path_factory.mktemp("rt") / "c.jsonl"
    write_chunks(chunks, path, description="d")
    assert list(read_chunks(path).chunks) == chunks


def test_load_inventory_refuses_chunks_of_another_corpus(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write_chunks([Chunk("x")], path, corpus_fingerprint="0" * 64)
    with pytest.raises(ChunkInventoryError, match="another corpus") as raised:
        load_inventory(path, CORPUS)
    assert str(raised.value).startswith(f"{path}:1: ")


def test_metadata_json_cannot_hold_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ChunkInventoryError, match="metadata"):
        write_chunks([Chunk("x", metadata={"v": float("nan")})], tmp_path / "c.jsonl")
    assert not (tmp_path / "c.jsonl").exists()


HEADER = json.dumps({"kind": "spanchor.chunks", "schema_version": 1})


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ("", None, "empty file"),
        ("\n\n", None, "empty file"),
        ('{"kind": "spanchor.run", "schema_version": 1}\n', 1, "not a chunk inventory"),
        ('{"query_id": "q1"}\n', 1, "no 'kind'"),
        ('{"kind": "spanchor.chunks", "schema_version": 2}\n', 1, "unsupported schema_version"),
        ("[1]\n", 1, "expected a JSON object"),
        (HEADER[:-1] + ', "extra": 1}\n', 1, "'extra': is not a field"),
        (f"{HEADER}\n{{not json\n", 2, "not valid JSON"),
        (f'{HEADER}\n{{"text": "a", "start": NaN}}\n', 2, "NaN is not valid JSON"),
        (f'{HEADER}\n{{"text": "a", "text": "b"}}\n', 2, "appears twice"),
        (f'{HEADER}\n"just a string"\n', 2, "expected a JSON object"),
        (f'{HEADER}\n{{"chunk": "a"}}\n', 2, "'text': missing"),
        (f'{HEADER}\n{{"text": 5}}\n', 2, "'text'"),
        (f'{HEADER}\n{{"text": "a", "start": -1}}\n', 2, "'start'"),
        (f'{HEADER}\n{{"text": "a", "start": 5, "end": 2}}\n', 2, "lies before start"),
        (f'{HEADER}\n{{"text": null, "document_id": "d"}}\n', 2, "needs document_id"),
        (
            f'{HEADER}\n{{"chunk_id": "c", "text": "a"}}\n\n{{"chunk_id": "c", "text": "b"}}\n',
            4,
            "already appears on line 2",
        ),
        (
            '{"kind": "spanchor.chunks", "schema_version": 1, "created_at": "2020-01-01"}\n',
            1,
            "no time zone",
        ),
    ],
)
def test_bad_files_say_path_and_line(
    tmp_path: Path, content: str, line: int | None, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ChunkInventoryError) as raised:
        read_chunks(path)
    error = raised.value
    assert isinstance(error, InputError)
    assert error.path == str(path)
    assert error.line == line
    assert message in str(error)
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    assert str(error).startswith(where)


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(ChunkInventoryError, match="cannot read"):
        read_chunks(tmp_path / "absent.jsonl")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(HEADER.encode() + b'\n{"text": "caf\xe9"}\n')
    with pytest.raises(ChunkInventoryError, match="not UTF-8") as raised:
        read_chunks(path)
    assert raised.value.line == 2


def test_a_byte_order_mark_and_crlf_line_ends_are_read(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + HEADER.encode() + b'\r\n{"text": "a"}\r\n')
    assert read_chunks(path).chunks == (Chunk("a"),)


def test_schemas_are_named_by_kind() -> None:
    schemas = chunk_file_schemas()
    assert set(schemas) == {
        "spanchor.chunks.header.schema.json",
        "spanchor.chunks.chunk.schema.json",
    }
    assert schemas["spanchor.chunks.header.schema.json"] == ChunksHeader.model_json_schema()
    assert schemas["spanchor.chunks.chunk.schema.json"] == ChunkLine.model_json_schema()
