"""Chunk inventories: every chunk of an index, mapped once onto source spans.

A :class:`Chunk` is what an index holds (text and, when known, document id, offsets, an id);
:func:`map_inventory` maps all of them in one :meth:`~spanchor_core.locate.Locator.locate_many`
call into a :class:`ChunkInventory`, which oracle metrics and the chunking report read.
Offsets are hints, verified like a run's (``canonical[start:end] == text``).

The builders take plain values and duck-typed framework objects (nothing is imported from
any framework): strings, dicts, :class:`~spanchor_core.runs.RetrievedResult`, LangChain-style
documents (``.page_content``, ``.metadata``, ``.id``) and LlamaIndex-style nodes (``.text``,
``.start_char_idx``, ``.end_char_idx``, ``.node_id``, ``.ref_doc_id``, ``.metadata``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, overload

from spanchor_core.corpus import Corpus
from spanchor_core.errors import InputError
from spanchor_core.locate import LocateRequest, Locator, MatchStatus
from spanchor_core.runs import RetrievedResult, result_from_mapping
from spanchor_core.spans import DocSpan, Span

__all__ = [
    "Chunk",
    "ChunkInventory",
    "ChunkInventoryError",
    "DocumentIdRule",
    "LocatedChunk",
    "check_chunk",
    "chunks_from_dicts",
    "chunks_from_documents",
    "chunks_from_nodes",
    "chunks_from_results",
    "chunks_from_texts",
    "map_inventory",
]


class ChunkInventoryError(InputError):
    """A chunk inventory (file or in-memory chunks) is malformed or made for other documents."""


class MissingChunkInventory(ChunkInventoryError):
    """A run header points to a chunk inventory file that is not there (the run was copied
    without it, say): the gate then warns and shows no chunking/ranking split."""


DocumentIdRule: TypeAlias = str | Callable[[Any], str | None] | None
"""How a framework object names its corpus document: a metadata key whose value *is* the corpus
id, a function ``object -> id | None``, or ``None`` (the locator finds the text itself)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk as an index holds it. ``text`` may be ``None`` only for an explicit span."""

    text: str | None
    document_id: str | None = None
    start: int | None = None
    end: int | None = None
    chunk_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


def check_chunk(chunk: Chunk) -> Chunk:
    """``chunk`` if it can be mapped, else :class:`ChunkInventoryError` saying why."""
    for name in ("start", "end"):
        value = getattr(chunk, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ChunkInventoryError(f"{name} must be an integer offset, got {value!r}")
        if value is not None and value < 0:
            raise ChunkInventoryError(f"{name} must not be negative, got {value}")
    if chunk.start is not None and chunk.end is not None and chunk.end < chunk.start:
        raise ChunkInventoryError(f"end {chunk.end} lies before start {chunk.start}")
    if chunk.text is None and None in (chunk.document_id, chunk.start, chunk.end):
        raise ChunkInventoryError(
            "a chunk without text needs document_id, start and end",
            hint="give the chunk's text, or its explicit span",
        )
    return chunk


@dataclass(frozen=True, slots=True)
class LocatedChunk:
    """A chunk and where the locator placed it (``span`` is ``None`` when unmapped)."""

    chunk: Chunk
    status: MatchStatus
    span: DocSpan | None
    confidence: float


@dataclass(frozen=True, slots=True, eq=False)
class ChunkInventory(Sequence[LocatedChunk]):
    """Every chunk of one index, mapped onto one corpus; a sequence in index order."""

    chunks: tuple[LocatedChunk, ...]
    corpus_fingerprint: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    spans: Mapping[str, tuple[Span, ...]] = field(init=False, repr=False)
    """Mapped chunk spans per document, sorted, duplicates kept (they are separate chunks)."""
    longest: Mapping[str, int] = field(init=False, repr=False)
    """The longest mapped chunk per document, in characters (bounds span searches)."""

    def __post_init__(self) -> None:
        by_doc: dict[str, list[Span]] = {}
        for item in self.chunks:
            if item.span is not None:
                by_doc.setdefault(item.span.document_id, []).append(
                    (item.span.start, item.span.end)
                )
        object.__setattr__(
            self, "spans", {doc: tuple(sorted(spans)) for doc, spans in sorted(by_doc.items())}
        )
        object.__setattr__(
            self, "longest", {doc: max(e - s for s, e in spans) for doc, spans in by_doc.items()}
        )

    @overload
    def __getitem__(self, index: int) -> LocatedChunk: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[LocatedChunk]: ...
    def __getitem__(self, index: int | slice) -> LocatedChunk | Sequence[LocatedChunk]:
        return self.chunks[index]

    def __len__(self) -> int:
        return len(self.chunks)

    def __iter__(self) -> Iterator[LocatedChunk]:
        return iter(self.chunks)

    def __repr__(self) -> str:
        return f"ChunkInventory({len(self)} chunks, {self.unmapped} unmapped)"

    @property
    def unmapped(self) -> int:
        """Chunks that got no span (unmapped or invalid)."""
        return sum(1 for item in self.chunks if item.span is None)

    def status_counts(self) -> dict[str, int]:
        """Chunks per :class:`~spanchor_core.locate.MatchStatus` value, every status present."""
        counts = {status.value: 0 for status in MatchStatus}
        for item in self.chunks:
            counts[item.status.value] += 1
        return counts


def map_inventory(
    corpus: Corpus,
    chunks: Iterable[Chunk],
    *,
    locator: Locator | None = None,
    description: str = "",
    parameters: Mapping[str, Any] | None = None,
) -> ChunkInventory:
    """Map every chunk onto ``corpus`` in one batched locator call; see the module docstring.

    Pass ``locator`` to reuse one built for ``corpus`` (the evaluation's, say).
    """
    items = [check_chunk(chunk) for chunk in chunks]
    if locator is None:
        locator = Locator(corpus)
    elif locator.corpus.fingerprint != corpus.fingerprint:
        raise ChunkInventoryError(
            "the locator was built for a different corpus",
            hint="pass a Locator built on the corpus of the inventory, or none",
        )
    requests = [LocateRequest(c.text, c.document_id, c.start, c.end) for c in items]
    locations = locator.locate_many(requests) if requests else []
    located = tuple(
        LocatedChunk(chunk, where.status, where.span, where.confidence)
        for chunk, where in zip(items, locations, strict=True)
    )
    return ChunkInventory(located, corpus.fingerprint, description, dict(parameters or {}))


# -- builders ------------------------------------------------------------------------------------


def chunks_from_texts(texts: Iterable[str], *, document_id: str | None = None) -> list[Chunk]:
    """Chunks from bare texts (all of one document when ``document_id`` is given)."""
    out: list[Chunk] = []
    for number, text in enumerate(texts, start=1):
        if not isinstance(text, str):
            raise ChunkInventoryError(f"chunk {number} is a {type(text).__name__}, not a string")
        out.append(Chunk(text, document_id))
    return out


_ID_KEYS = ("chunk_id", "id", "node_id")


def _as_id(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _first_id(data: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    """The first non-empty string among ``data[key]`` for ``keys``."""
    for key in keys:
        found = _as_id(data.get(key))
        if found is not None:
            return found
    return None


def chunks_from_dicts(items: Iterable[Mapping[str, Any]]) -> list[Chunk]:
    """Chunks from plain dicts in the shapes a run's results take.

    Text, document id and offsets are read with the aliases of
    :func:`spanchor_core.runs.result_from_mapping` (``text|chunk|content|page_content``,
    ``document_id|doc_id|source``, ``start|start_char|offset``, ``end|end_char``); the chunk id
    from ``chunk_id``, ``id`` or ``node_id``; every other key ends up in ``metadata``.
    """
    out: list[Chunk] = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            raise ChunkInventoryError(f"chunk {number} is a {type(item).__name__}, not a dict")
        chunk_id = _first_id(item, _ID_KEYS)
        rest = {key: value for key, value in item.items() if key not in _ID_KEYS}
        try:
            result = result_from_mapping(rest, rank=number)
        except (TypeError, ValueError) as err:
            raise ChunkInventoryError(f"chunk {number}: {err}") from None
        out.append(_from_result(result, chunk_id, number))
    return out


def _checked(chunk: Chunk, number: int) -> Chunk:
    try:
        return check_chunk(chunk)
    except ChunkInventoryError as err:
        raise ChunkInventoryError(f"chunk {number}: {err.message}", hint=err.hint) from None


def _from_result(result: RetrievedResult, chunk_id: str | None, number: int) -> Chunk:
    chunk = Chunk(
        result.text, result.document_id, result.start, result.end, chunk_id, dict(result.metadata)
    )
    return _checked(chunk, number)


def chunks_from_results(
    results: Iterable[RetrievedResult], *, id_keys: Sequence[str] = _ID_KEYS
) -> list[Chunk]:
    """Chunks from :class:`~spanchor_core.runs.RetrievedResult` values: what the integrations'
    ``documents_to_results`` / ``nodes_to_results`` already produce from framework objects, so
    a chunk and a retrieved result of the same object always agree. The chunk id is the first
    of ``id_keys`` present in the metadata."""
    out: list[Chunk] = []
    for number, result in enumerate(results, start=1):
        chunk_id = _first_id(result.metadata, id_keys)
        out.append(_from_result(result, chunk_id, number))
    return out


def _id_rule(rule: DocumentIdRule) -> Callable[[Any], str | None]:
    if rule is None:
        return lambda _item: None
    if isinstance(rule, str):
        key = rule

        def from_metadata(item: Any) -> str | None:
            metadata = getattr(item, "metadata", None)
            return _as_id(metadata.get(key)) if isinstance(metadata, Mapping) else None

        return from_metadata
    if callable(rule):
        return rule
    raise ChunkInventoryError(
        f"document_id must be a metadata key, a function or None, got {type(rule).__name__}"
    )


def _metadata(item: Any) -> dict[str, Any]:
    raw = getattr(item, "metadata", None)
    return dict(raw) if isinstance(raw, Mapping) else {}


def chunks_from_documents(
    documents: Iterable[Any], *, document_id: DocumentIdRule = None
) -> list[Chunk]:
    """Chunks from LangChain-style documents (``page_content``, ``metadata``, optional ``id``).

    ``metadata["start_index"]`` (text splitters with ``add_start_index=True``) is an offset
    hint; LangChain writes -1 when its own search failed, which is no hint. The document id
    comes only from ``document_id``: ``metadata["source"]`` is a loader path, not a corpus id.
    """
    rule = _id_rule(document_id)
    out: list[Chunk] = []
    for number, item in enumerate(documents, start=1):
        text = getattr(item, "page_content", None)
        if not isinstance(text, str):
            raise ChunkInventoryError(f"chunk {number} has no page_content string")
        metadata = _metadata(item)
        hint = metadata.get("start_index")
        start = hint if type(hint) is int and hint >= 0 else None
        chunk = Chunk(
            text,
            rule(item),
            start,
            None if start is None else start + len(text),
            _as_id(getattr(item, "id", None)),
            metadata,
        )
        out.append(_checked(chunk, number))
    return out


def chunks_from_nodes(nodes: Iterable[Any], *, document_id: DocumentIdRule = None) -> list[Chunk]:
    """Chunks from LlamaIndex-style nodes (``NodeWithScore`` unwrapped through ``.node``).

    The text is ``node.text`` (the node's own text: ``get_content()`` may prepend metadata that
    is not in the document). ``start_char_idx``/``end_char_idx`` are hints. The document id is
    ``document_id`` applied to the node, else ``metadata["document_id"]``; ``ref_doc_id`` and
    ``node_id`` are kept in the metadata as provenance.
    """
    rule = _id_rule(document_id if document_id is not None else "document_id")
    out: list[Chunk] = []
    for number, item in enumerate(nodes, start=1):
        node = getattr(item, "node", item)
        text = getattr(node, "text", None)
        if not isinstance(text, str):
            raise ChunkInventoryError(f"chunk {number} has no text string")
        start = getattr(node, "start_char_idx", None)
        end = getattr(node, "end_char_idx", None)
        node_id = _as_id(getattr(node, "node_id", None))
        metadata = _metadata(node)
        metadata.update({"node_id": node_id, "ref_doc_id": getattr(node, "ref_doc_id", None)})
        chunk = Chunk(
            text,
            rule(node),
            start if type(start) is int and start >= 0 else None,
            end if type(end) is int and end >= 0 else None,
            node_id,
            metadata,
        )
        out.append(_checked(chunk, number))
    return out
