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

:class:`NodeConverter` does the same for one corpus, with two repairs the plain functions
cannot make:

* a **raising resolver** costs only that node's document id (``None``; the locator then
  searches by text), counted in :attr:`NodeConverter.resolver_errors` and logged once;
* **raw-file offsets**: ``SimpleDirectoryReader`` decodes files as they are, so on a file with
  ``\r\n`` line ends or text that is not NFC, a node's offsets count raw characters. When the
  node's document was loaded from a file whose raw text differs from its canonical text, and
  the node's text sits exactly at its offsets in the raw text, the offsets are translated to
  canonical ones (:class:`~spanchor_core.OffsetMap`) instead of being rejected.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    RelatedNodeInfo,
    TextNode,
)

from spanchor_core import Corpus, OffsetMap, RetrievedResult
from spanchor_core.corpus import document_id_for
from spanchor_core.runs.write import ResultEntries, result_entry

__all__ = [
    "DOCUMENT_ID_KEY",
    "DocumentIdResolver",
    "NodeConverter",
    "default_document_id",
    "node_text",
    "node_to_result",
    "nodes_to_results",
]

DOCUMENT_ID_KEY = "document_id"
"""Node metadata key that names the corpus document explicitly (it wins over everything)."""

_log = logging.getLogger(__name__)

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


def _offset(value: object) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None


_SOURCE = NodeRelationship.SOURCE


def _inner(node: NodeWithScore | BaseNode) -> BaseNode:
    return node.node if isinstance(node, NodeWithScore) else node


class NodeConverter:
    """Nodes as results for one corpus: safe document ids, raw offsets made canonical.

    ``document_id`` is the resolver (default :func:`default_document_id` of ``corpus``). It
    may raise: that node gets no document id and the error is counted (see the module
    docstring). Thread-safe; each document's raw file is read at most once.
    """

    def __init__(
        self, corpus: Corpus | None = None, document_id: DocumentIdResolver | None = None
    ) -> None:
        self.corpus = corpus
        self.resolve = document_id if document_id is not None else default_document_id(corpus)
        self._errors = 0
        self._lock = threading.Lock()
        self._maps: dict[str, tuple[OffsetMap, int] | None] = {}

    def __repr__(self) -> str:
        return f"NodeConverter({self.corpus!r}, resolver_errors={self._errors})"

    @property
    def resolver_errors(self) -> int:
        """Nodes whose document-id resolver raised (each lost its document id only)."""
        return self._errors

    def document_id(self, node: BaseNode) -> str | None:
        """The node's corpus document id; ``None`` when unknown or when the resolver raised."""
        try:
            found = self.resolve(node)
        except Exception as exc:
            with self._lock:
                self._errors += 1
                first = self._errors == 1
            if first:
                _log.warning(
                    "spanchor: the document_id resolver raised on node %r (%s: %s); that node "
                    "is located by its text, further errors are counted in resolver_errors",
                    node.node_id,
                    type(exc).__name__,
                    exc,
                )
            return None
        return found if isinstance(found, str) and found else None

    def _raw_map(self, document_id: str) -> tuple[OffsetMap, int] | None:
        """The raw->canonical map of a document read from a file, when the two differ."""
        if document_id in self._maps:
            return self._maps[document_id]
        found: tuple[OffsetMap, int] | None = None
        corpus = self.corpus
        document = corpus.get(document_id) if corpus is not None else None
        if document is not None and document.path is not None:
            try:
                raw = document.path.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                raw = None
            if raw is not None:
                bom = 1 if raw.startswith("\ufeff") else 0
                mapping = OffsetMap(raw[bom:])
                if not mapping.is_identity and mapping.canonical == document.text:
                    found = (mapping, bom)
        self._maps[document_id] = found
        return found

    def _canonical_offsets(
        self, document_id: str | None, text: str, start: int | None, end: int | None
    ) -> tuple[int | None, int | None, bool]:
        if document_id is None or start is None or end is None or self.corpus is None:
            return start, end, False
        raw = self._raw_map(document_id)
        if raw is None:
            return start, end, False
        mapping, bom = raw
        raw_start, raw_end = start - bom, end - bom
        if raw_start < 0 or mapping.raw[raw_start:raw_end] != text:
            return start, end, False  # not raw offsets of this text: leave them to the core
        canonical = mapping.raw_span_to_canonical(raw_start, raw_end)
        return canonical[0], canonical[1], True

    def _fields(
        self, node: NodeWithScore | BaseNode
    ) -> tuple[str, Any, str | None, int | None, int | None, dict[str, Any]]:
        """``(text, score, document_id, start, end, metadata)`` of one node."""
        if type(node) is NodeWithScore or isinstance(node, NodeWithScore):
            score: Any = node.score
            inner = node.node
        else:
            score = None
            inner = node
        # TextNode.get_content(NONE) is its text; other node types may differ
        text = inner.text if type(inner) is TextNode else node_text(inner)
        document_id = self.document_id(inner)
        start = _offset(getattr(inner, "start_char_idx", None))
        end = _offset(getattr(inner, "end_char_idx", None))
        translated = False
        if document_id is not None and start is not None and end is not None:
            start, end, translated = self._canonical_offsets(document_id, text, start, end)
        metadata: dict[str, Any] = {"node_id": inner.node_id, "ref_doc_id": inner.ref_doc_id}
        if translated:
            metadata["offsets"] = "raw"  # the node's own offsets counted raw file characters
        return text, score, document_id, start, end, metadata

    def result(self, node: NodeWithScore | BaseNode, rank: int) -> RetrievedResult:
        """One node as a ranked result (``rank`` is 1-based)."""
        text, score, document_id, start, end, metadata = self._fields(node)
        return RetrievedResult(rank, text, score, document_id, start, end, metadata)

    def results(self, nodes: Iterable[NodeWithScore | BaseNode]) -> list[RetrievedResult]:
        """Nodes in retrieval order as results ranked 1, 2, ..."""
        return [self.result(node, rank) for rank, node in enumerate(nodes, start=1)]

    def entry(self, node: NodeWithScore | BaseNode, rank: int) -> dict[str, Any]:
        """:meth:`result` in line form, for the recorder's hot path (see
        :class:`~spanchor_core.runs.write.ResultEntries`)."""
        return result_entry(rank, *self._fields(node))

    def entries(
        self, nodes: Iterable[NodeWithScore | BaseNode], seen: set[str] | None = None
    ) -> ResultEntries:
        """:meth:`results` in line form, ready for :meth:`~spanchor_core.RunRecorder.record`;
        each node's id is added to ``seen`` when given (even when a later node fails).

        The recorder's hot path: a ``NodeWithScore`` around a plain ``TextNode`` (what
        retrievers return) whose text, score and offsets have their usual types (a string, a
        finite float or ``None``, non-negative ints or ``None``) has its fields read once
        each, straight from the two models' ``__dict__`` (one attribute each through
        pydantic's hook, then dict subscripts), and its entry built inline; any other node,
        or any odd value, takes :meth:`entry`. Both give the same entry. The texts'
        characters are counted on the way (``ResultEntries.characters``), so the recorder's
        size check does not walk the entries again.
        """
        entries = ResultEntries()
        append = entries.append
        explicit = self.resolve is _explicit_id
        translate = self.corpus is not None
        characters = 0
        # Locals rather than globals: this loop runs for every node of every recording.
        with_score, text_node, related, source_key, id_key = (
            NodeWithScore,
            TextNode,
            RelatedNodeInfo,
            _SOURCE,
            DOCUMENT_ID_KEY,
        )
        try:
            for rank, node in enumerate(nodes, 1):
                if type(node) is with_score:
                    outer = node.__dict__
                    inner = outer["node"]
                    if type(inner) is text_node:
                        fields = inner.__dict__
                        text = fields["text"]
                        score = outer["score"]
                        start = fields["start_char_idx"]
                        end = fields["end_char_idx"]
                        if (
                            type(text) is str
                            and ((type(score) is float and score - score == 0.0) or score is None)
                            and ((type(start) is int and start >= 0) or start is None)
                            and ((type(end) is int and end >= 0) or end is None)
                        ):
                            node_id = fields["id_"]
                            if seen is not None:
                                seen.add(node_id)
                            relations = fields["relationships"]
                            relation = relations.get(source_key) if relations else None
                            if relation is None:
                                ref = None
                            elif type(relation) is related:
                                ref = relation.node_id
                            else:  # a list is refused by the property, with its own message
                                ref = inner.ref_doc_id
                            if explicit:  # _explicit_id, inlined
                                found = fields["metadata"].get(id_key)
                                document_id = found if isinstance(found, str) and found else None
                            else:
                                document_id = self.document_id(inner)
                            metadata: dict[str, Any] = {"node_id": node_id, "ref_doc_id": ref}
                            if (
                                translate
                                and document_id is not None
                                and start is not None
                                and end is not None
                            ):
                                start, end, translated = self._canonical_offsets(
                                    document_id, text, start, end
                                )
                                if translated:
                                    metadata["offsets"] = "raw"
                                    if type(start) is not int or type(end) is not int:
                                        entry = result_entry(
                                            rank, text, score, document_id, start, end, metadata
                                        )
                                        characters += len(text)
                                        append(entry)
                                        continue
                            characters += len(text)
                            append(
                                {
                                    "rank": rank,
                                    "text": text,
                                    "score": score,
                                    "document_id": document_id,
                                    "start": start,
                                    "end": end,
                                    "metadata": metadata,
                                }
                            )
                            continue
                if seen is not None:
                    seen.add(_inner(node).node_id)
                entry = self.entry(node, rank)
                characters += len(entry["text"] or "")
                append(entry)
        except BaseException:
            if seen is not None:
                for node in nodes:
                    with contextlib.suppress(Exception):
                        seen.add(_inner(node).node_id)
            raise
        entries.characters = characters
        return entries
