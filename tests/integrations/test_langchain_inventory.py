"""Chunk inventories from LangChain Documents and from a real InMemoryVectorStore (offline,
with langchain_core's DeterministicFakeEmbedding), written, loaded and used for oracle recall."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_text_splitters")

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter

from spanchor_core import Corpus
from spanchor_core.diagnosis import ChunkInventoryError, load_inventory, oracle_recall, read_chunks
from spanchor_core.spans import DocSpan
from spanchor_langchain import documents_to_chunks, vector_store_documents, write_inventory

TEXTS = {
    "kettle": (
        "The kettle holds 1.7 litres. Descale it every month with white vinegar and rinse "
        "twice. Never run it empty: the dry-boil guard then switches it off for ten minutes."
    ),
    "toaster": (
        "The toaster has six browning levels. Empty the crumb tray every week. The bagel "
        "setting heats one side only, so put the cut face towards the middle."
    ),
}
CORPUS = Corpus.from_texts(TEXTS)


def split() -> list[Document]:
    splitter = RecursiveCharacterTextSplitter(chunk_size=60, chunk_overlap=0, add_start_index=True)
    docs = [Document(page_content=text, metadata={"doc": key}) for key, text in TEXTS.items()]
    return splitter.split_documents(docs)


def test_documents_become_chunks_with_hints_ids_and_metadata() -> None:
    documents = split()
    documents[0].id = "first"
    chunks = documents_to_chunks(documents, document_id="doc")
    assert len(chunks) == len(documents)
    first = chunks[0]
    assert (first.chunk_id, first.document_id, first.start) == ("first", "kettle", 0)
    assert first.text == documents[0].page_content
    assert first.metadata["doc"] == "kettle"


def test_a_vector_store_is_listed_and_written_as_an_inventory(tmp_path: Path) -> None:
    documents = split()
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    ids = store.add_documents(documents)
    listed = vector_store_documents(store)
    assert sorted(d.page_content for d in listed) == sorted(d.page_content for d in documents)
    assert {d.id for d in listed} == set(ids)

    path = tmp_path / "chunks.jsonl"
    written = write_inventory(
        store, path, corpus=CORPUS, document_id="doc", description="60-char recursive"
    )
    assert written == len(documents)
    found = read_chunks(path)
    assert found.header.corpus_fingerprint == CORPUS.fingerprint
    assert found.header.description == "60-char recursive"
    assert {c.chunk_id for c in found.chunks} == set(ids)

    inventory = load_inventory(path, CORPUS)
    assert all(item.span is not None for item in inventory)  # every chunk mapped
    # A sentence of the kettle that the 60-char chunks cut: its oracle needs two chunks.
    start = TEXTS["kettle"].index("Descale")
    gold = [DocSpan("kettle", start, TEXTS["kettle"].index("twice.") + 6)]
    one, two = oracle_recall(gold, inventory, 1), oracle_recall(gold, inventory, 2)
    spans = inventory.spans["kettle"]
    in_chunks = sum(
        1 for x in range(gold[0].start, gold[0].end) if any(s <= x < e for s, e in spans)
    )
    assert one.covered < in_chunks  # no single chunk holds the sentence
    assert two.covered == in_chunks  # two do (the splitter strips the space between them)
    assert len(two.chunks) == 2


def test_a_store_without_a_listing_api_says_what_to_pass() -> None:
    with pytest.raises(ChunkInventoryError, match="pass the list of Documents"):
        vector_store_documents(object())
