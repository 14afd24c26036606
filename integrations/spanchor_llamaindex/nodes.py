"""LlamaIndex nodes as spanchor results: text, score, corpus document id and offset hints.

Every other module of this package turns nodes into :class:`~spanchor_core.RetrievedResult`
through :func:`node_to_result`, so a node means the same thing in a live recording, in the
span-aware evaluator and in the BatchEvalRunner evaluator:

* ``text`` is ``node.get_content(MetadataMode.NONE)``. The default ``get_content()`` of some
  node types and modes prepends metadata (``file_path: ...``) that is not in the source
  document; what the model saw with metadata is not what we anchor.
* ``score`` is ``NodeWithScore.score`` (``None`` when the retriever gives none).
* ``document_id`` is the corpus id of the node's source document, found by a
  :data:`DocumentIdResolver`; :func:`default_document_id` decides as documented there, and
  returns ``None`` rather than guess (the locator then searches the whole corpus by text).
* ``start``/``end`` are ``start_char_idx``/``end_char_idx``: hints only. They are wrong after
  two-stage pipelines (Markdown -> SentenceSplitter) and relative to the text LlamaIndex was
  given, which may not be canonical; the core verifies ``canonical[start:end] == text`` before
  it trusts them and re-anchors by text when they do not verify.
* ``metadata`` keeps ``node_id`` and ``ref_doc_id`` (provenance, never used for scoring).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore

from spanchor_core import Corpus, RetrievedResult
from spanchor_core.corpus import document_id_for

__all__ = [
    "DOCUMENT_ID_KEY",
    "DocumentIdResolver",
    "default_document_id",
    "node_text",
    "node_to_result",
    "nodes_to_results",
]

DOCUMENT_ID_KEY = "document_id"
"""Node metadata key that names the corpus document explicitly (it wins over everything)."""

DocumentIdResolver = Callable[[BaseNode], str | None]
"""Maps a node to the corpus id of its source document, or ``None`` when unknown."""


def node_text(node: BaseNode) -> str:
    """The node's own text, without metadata prepended (see the module docstring)."""
    return node.get_content(metadata_mode=MetadataMode.NONE)


def _explicit_id(node: BaseNode) -> str | None:
    value = node.metadata.get(DOCUMENT_ID_KEY)
    return value if isinstance(value, str) and value else None


def default_document_id(corpus: Corpus | None = None) -> DocumentIdResolver:
    """The document-id rule used unless you pass your own resolver.

    In order, the first that applies wins:

    1. ``metadata["document_id"]`` when it is a non-empty string (set it when you build
       ``Document``\\ s and every node inherits it — the one rule that needs no corpus);
    2. with a corpus loaded from a directory: ``metadata["file_path"]`` (what
       ``SimpleDirectoryReader`` sets) relative to the corpus root, as a corpus id
       (``guide/install.md`` -> ``guide/install``) when that id exists;
    3. with a corpus: ``ref_doc_id`` when it is a corpus id (``Document(id_=...)``);
    4. with a corpus: ``metadata["file_name"]`` without its suffix when that is a corpus id;
    5. otherwise ``None``. Never a guess: a wrong id would only cost a note in the mapping,
       but ``None`` says honestly that the locator must search by text.
    """
    if corpus is None:
        return _explicit_id
    root = corpus.root.resolve() if corpus.root is not None else None
    by_path: dict[str, str | None] = {}  # file_path -> id, resolved once per file

    def from_path(file_path: str) -> str | None:
        if file_path in by_path:
            return by_path[file_path]
        found: str | None = None
        if root is not None:
            try:
                relative = Path(file_path).resolve().relative_to(root)
            except (ValueError, OSError):
                relative = None
            if relative is not None:
                candidate = document_id_for(PurePosixPath(relative.as_posix()))
                found = candidate if candidate in corpus else None
        by_path[file_path] = found
        return found

    def resolve(node: BaseNode) -> str | None:
        explicit = _explicit_id(node)
        if explicit is not None:
            return explicit
        metadata = node.metadata
        file_path = metadata.get("file_path")
        if isinstance(file_path, str | os.PathLike):
            found = from_path(os.fspath(file_path))
            if found is not None:
                return found
        ref = node.ref_doc_id
        if ref is not None and ref in corpus:
            return ref
        file_name = metadata.get("file_name")
        if isinstance(file_name, str):
            stem = document_id_for(PurePosixPath(file_name))
            if stem in corpus:
                return stem
        return None

    return resolve


def node_to_result(
    node: NodeWithScore | BaseNode,
    rank: int,
    document_id: DocumentIdResolver | None = None,
) -> RetrievedResult:
    """One node as a ranked result (``rank`` is 1-based); see the module docstring."""
    if isinstance(node, NodeWithScore):
        score: float | None = node.score
        inner = node.node
    else:
        score = None
        inner = node
    resolver = document_id if document_id is not None else _explicit_id
    start = getattr(inner, "start_char_idx", None)
    end = getattr(inner, "end_char_idx", None)
    metadata: dict[str, Any] = {"node_id": inner.node_id, "ref_doc_id": inner.ref_doc_id}
    return RetrievedResult(
        rank=rank,
        text=node_text(inner),
        score=score,
        document_id=resolver(inner),
        start=start if isinstance(start, int) and start >= 0 else None,
        end=end if isinstance(end, int) and end >= 0 else None,
        metadata=metadata,
    )


def nodes_to_results(
    nodes: Iterable[NodeWithScore | BaseNode],
    document_id: DocumentIdResolver | None = None,
) -> list[RetrievedResult]:
    """Nodes in retrieval order as results ranked 1, 2, ..."""
    return [node_to_result(node, rank, document_id) for rank, node in enumerate(nodes, start=1)]
