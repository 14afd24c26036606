"""Chunk inventories from LlamaIndex: every node an index holds, as a ``spanchor.chunks`` file.

An inventory lets spanchor say what a chunking could ever reach (oracle recall) and split a
metric change into its chunking and ranking parts (:mod:`spanchor_core.diagnosis`). Give it the
nodes a parser made, a docstore, or an index (its docstore is read)::

    nodes = SentenceSplitter(chunk_size=128).get_nodes_from_documents(documents)
    write_inventory(nodes, "chunks/sentences-128.jsonl", corpus=corpus)

A node is converted exactly as a retrieved node is (:class:`~spanchor_llamaindex.nodes.
NodeConverter`: safe document ids, raw file offsets made canonical), so an inventory chunk and
a retrieved result of the same node always agree. ``Document`` objects a docstore keeps beside
the nodes (ingestion pipelines store them) are not chunks and are left out.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from llama_index.core.schema import BaseNode, Document, NodeWithScore

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
from spanchor_llamaindex.nodes import DocumentIdResolver, NodeConverter

__all__ = [
    "docstore_nodes",
    "inventory_from_nodes",
    "nodes_to_chunks",
    "write_inventory",
]


def docstore_nodes(source: Any) -> list[BaseNode]:
    """The nodes of a docstore (``SimpleDocumentStore`` and any ``BaseDocumentStore``) or of an
    index (its ``docstore``), in the docstore's order, without stored ``Document`` objects."""
    docstore = getattr(source, "docstore", source)
    docs = getattr(docstore, "docs", None)
    if not isinstance(docs, Mapping):
        raise ChunkInventoryError(
            f"cannot list the nodes of a {type(source).__name__}",
            hint="pass the nodes, a docstore or an index with a docstore",
        )
    return [node for node in docs.values() if not isinstance(node, Document)]


def _nodes(source: Any) -> list[BaseNode | NodeWithScore]:
    if isinstance(source, str | bytes) or not isinstance(source, Iterable):
        return list(docstore_nodes(source))
    items = list(source)
    for number, item in enumerate(items, start=1):
        if not isinstance(item, BaseNode | NodeWithScore):
            raise ChunkInventoryError(f"item {number} is a {type(item).__name__}, not a node")
    return items


def nodes_to_chunks(
    source: Any, *, corpus: Corpus | None = None, document_id: DocumentIdResolver | None = None
) -> list[Chunk]:
    """Chunks from nodes (``NodeWithScore`` unwrapped), a docstore or an index; the chunk id is
    the node id. ``corpus`` and ``document_id`` are those of
    :class:`~spanchor_llamaindex.nodes.NodeConverter` (document ids that are corpus ids, offsets
    into the files translated to canonical ones)."""
    converter = NodeConverter(corpus, document_id)
    results = [converter.result(node, rank) for rank, node in enumerate(_nodes(source), start=1)]
    return chunks_from_results(results, id_keys=("node_id",))


def inventory_from_nodes(
    source: Any,
    corpus: Corpus,
    *,
    document_id: DocumentIdResolver | None = None,
    description: str = "",
    parameters: Mapping[str, Any] | None = None,
    locator: Locator | None = None,
) -> ChunkInventory:
    """The nodes of ``source`` mapped onto ``corpus`` (see :func:`nodes_to_chunks`)."""
    return map_inventory(
        corpus,
        nodes_to_chunks(source, corpus=corpus, document_id=document_id),
        locator=locator,
        description=description,
        parameters=parameters,
    )


def write_inventory(
    source: Any,
    path: str | os.PathLike[str],
    *,
    corpus: Corpus | None = None,
    document_id: DocumentIdResolver | None = None,
    description: str = "",
    parameters: Mapping[str, Any] | None = None,
    tags: Mapping[str, Any] | None = None,
) -> int:
    """Write the nodes of ``source`` (nodes, a docstore or an index) as a ``spanchor.chunks``
    file, atomically; returns how many chunks were written. With ``corpus`` the file records
    its fingerprint and node offsets are made canonical."""
    chunks = nodes_to_chunks(source, corpus=corpus, document_id=document_id)
    write_chunks(
        chunks,
        path,
        description=description,
        parameters=parameters,
        corpus_fingerprint=None if corpus is None else corpus.fingerprint,
        tags=tags,
    )
    return len(chunks)
