"""Chunk inventories from real LlamaIndex nodes (SentenceSplitter), a SimpleDocumentStore and
a VectorStoreIndex's docstore (offline, MockEmbedding), written, loaded and used."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import NodeWithScore
from llama_index.core.storage.docstore import SimpleDocumentStore

from spanchor_core import Corpus
from spanchor_core.diagnosis import ChunkInventoryError, chunk_report, load_inventory, read_chunks
from spanchor_core.gold import Anchor, GoldQuery, GoldSet
from spanchor_llamaindex import docstore_nodes, nodes_to_chunks, write_inventory

TEXTS = {
    "kettle": " ".join(
        f"Kettle sentence number {n} says something about water." for n in range(30)
    ),
    "toaster": " ".join(f"Toaster sentence number {n} talks about bread." for n in range(30)),
}
CORPUS = Corpus.from_texts(TEXTS)


def nodes() -> list:  # type: ignore[type-arg]
    documents = [
        Document(text=text, metadata={"document_id": key}, id_=key) for key, text in TEXTS.items()
    ]
    return SentenceSplitter(chunk_size=64, chunk_overlap=0).get_nodes_from_documents(documents)


def test_nodes_become_chunks_with_node_ids_and_verified_offsets() -> None:
    made = nodes()
    chunks = nodes_to_chunks(made, corpus=CORPUS)
    assert [c.chunk_id for c in chunks] == [n.node_id for n in made]
    assert {c.document_id for c in chunks} == {"kettle", "toaster"}
    for chunk in chunks:
        assert chunk.start is not None
        assert chunk.end is not None
        assert CORPUS[chunk.document_id].text[chunk.start : chunk.end] == chunk.text  # type: ignore[index]
    wrapped = nodes_to_chunks([NodeWithScore(node=made[0], score=0.5)], corpus=CORPUS)
    assert wrapped[0].chunk_id == made[0].node_id


def test_a_docstore_and_an_index_give_their_nodes_without_documents(tmp_path: Path) -> None:
    made = nodes()
    docstore = SimpleDocumentStore()
    docstore.add_documents(made)
    docstore.add_documents([Document(text="a whole source document", id_="whole")])
    listed = docstore_nodes(docstore)
    assert {n.node_id for n in listed} == {n.node_id for n in made}  # the Document left out

    index = VectorStoreIndex(made, embed_model=MockEmbedding(embed_dim=8))
    path = tmp_path / "chunks.jsonl"
    assert write_inventory(index, path, corpus=CORPUS, description="sentences of 64") == len(made)
    assert read_chunks(path).header.corpus_fingerprint == CORPUS.fingerprint
    inventory = load_inventory(path, CORPUS)
    assert all(item.span is not None for item in inventory)
    start = TEXTS["kettle"].index("Kettle sentence number 3 ")
    gold = GoldSet([GoldQuery("q", "?", (Anchor.from_span(CORPUS, "kettle", start, start + 40),))])
    report = chunk_report(CORPUS, gold, inventory, k=[1])
    assert report.queries[0].oracle[1].recall == 1.0
    assert report.sizes.chunks == len(made)


def test_other_objects_are_refused() -> None:
    with pytest.raises(ChunkInventoryError, match="not a node"):
        nodes_to_chunks(["text"])
    with pytest.raises(ChunkInventoryError, match="cannot list the nodes"):
        docstore_nodes(object())
