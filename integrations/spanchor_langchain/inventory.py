"""Chunk inventories from LangChain: every chunk an index holds, as a ``spanchor.chunks`` file.

An inventory lets spanchor say what a chunking could ever reach (oracle recall) and split a
metric change into its chunking and ranking parts (:mod:`spanchor_core.diagnosis`). Give it the
``Document`` list you indexed (what a text splitter returned) or the vector store itself::

    chunks = splitter.split_documents(docs)
    store = InMemoryVectorStore.from_documents(chunks, embeddings)
    write_inventory(store, "chunks/windows-200.jsonl", corpus=corpus,
                    document_id=source_to_document_id("docs"), description="200-char windows")

A chunk is converted exactly as a retrieved ``Document`` is (:func:`documents_to_results`), so
an inventory chunk and a retrieved result of the same document always agree.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.documents import Document

from spanchor_core import Corpus
from spanchor_core.diagnosis import (  # the inventory building blocks (not all top level)
    Chunk,
    ChunkInventory,
    ChunkInventoryError,
    chunks_from_results,
    map_inventory,
    write_chunks,
)
from spanchor_core.locate import Locator
from spanchor_langchain.documents import DocumentIdRule, documents_to_results

__all__ = [
    "documents_to_chunks",
    "inventory_from_documents",
    "vector_store_documents",
    "write_inventory",
]


def vector_store_documents(store: Any) -> list[Document]:
    """Every ``Document`` a vector store holds, in its own order, with its id.

    Reads ``InMemoryVectorStore`` (its ``store`` dict) and stores with a Chroma-style ``get()``
    returning ``ids`` / ``documents`` / ``metadatas``. Other stores have no listing API in
    LangChain: pass the documents you added instead (raises
    :class:`~spanchor_core.diagnosis.ChunkInventoryError` saying so).
    """
    held = getattr(store, "store", None)
    if isinstance(held, Mapping):
        out = []
        for key, entry in held.items():
            if not isinstance(entry, Mapping) or not isinstance(entry.get("text"), str):
                raise ChunkInventoryError(f"vector store entry {key!r} has no text")
            out.append(
                Document(
                    page_content=entry["text"],
                    metadata=dict(entry.get("metadata") or {}),
                    id=str(entry.get("id", key)),
                )
            )
        return out
    getter = getattr(store, "get", None)
    if callable(getter):
        try:
            found = getter(include=["documents", "metadatas"])
        except TypeError:
            found = getter()
        if isinstance(found, Mapping) and isinstance(found.get("documents"), list):
            ids = found.get("ids") or [None] * len(found["documents"])
            metadatas = found.get("metadatas") or [None] * len(found["documents"])
            return [
                Document(page_content=text, metadata=dict(meta or {}), id=key)
                for key, text, meta in zip(ids, found["documents"], metadatas, strict=True)
            ]
    raise ChunkInventoryError(
        f"cannot list the documents of a {type(store).__name__}",
        hint="pass the list of Documents you added to the store instead",
    )


def _documents(source: Any) -> list[Any]:
    if isinstance(source, str | bytes) or not isinstance(source, Iterable):
        return vector_store_documents(source)
    return list(source)


def documents_to_chunks(source: Any, *, document_id: DocumentIdRule = None) -> list[Chunk]:
    """Chunks from ``Document`` objects (or ``(Document, score)`` pairs, dicts, strings) or a
    vector store (:func:`vector_store_documents`); the chunk id is ``Document.id``.

    ``document_id`` is the rule :func:`documents_to_results` takes (a metadata key or a
    function; ``None``: the chunk is found by its text).
    """
    items = _documents(source)
    results = documents_to_results(items, document_id=document_id)
    chunks = chunks_from_results(results)
    out = []
    for item, chunk in zip(items, chunks, strict=True):
        inner = item[0] if isinstance(item, tuple) else item
        key = getattr(inner, "id", None)
        out.append(
            dataclasses.replace(chunk, chunk_id=key) if isinstance(key, str) and key else chunk
        )
    return out


def inventory_from_documents(
    source: Any,
    corpus: Corpus,
    *,
    document_id: DocumentIdRule = None,
    description: str = "",
    parameters: Mapping[str, Any] | None = None,
    locator: Locator | None = None,
) -> ChunkInventory:
    """The chunks of ``source`` (documents or a vector store) mapped onto ``corpus``."""
    return map_inventory(
        corpus,
        documents_to_chunks(source, document_id=document_id),
        locator=locator,
        description=description,
        parameters=parameters,
    )


def write_inventory(
    source: Any,
    path: str | os.PathLike[str],
    *,
    corpus: Corpus | None = None,
    document_id: DocumentIdRule = None,
    description: str = "",
    parameters: Mapping[str, Any] | None = None,
    tags: Mapping[str, Any] | None = None,
) -> int:
    """Write the chunks of ``source`` (documents or a vector store) as a ``spanchor.chunks``
    file, atomically; returns how many chunks were written.

    With ``corpus`` the file records its fingerprint, so that loading it against other
    documents is refused; the chunks are stored as the index holds them (mapping happens when
    the file is loaded, :func:`spanchor_core.diagnosis.load_inventory`).
    """
    chunks = documents_to_chunks(source, document_id=document_id)
    write_chunks(
        chunks,
        path,
        description=description,
        parameters=parameters,
        corpus_fingerprint=None if corpus is None else corpus.fingerprint,
        tags=tags,
    )
    return len(chunks)
