"""What span metrics judge against: :class:`SpanContext` (corpus, locator, gold, nodes).

Every span metric, evaluator and table of this package scores through one context, so a
query's gold evidence and a retrieval's mapping mean the same thing everywhere.

**Gold evidence** for one call, the first that applies:

1. an explicit gold query id (``query_id=``);
2. with a bound :class:`~spanchor_core.GoldSet`: the gold query whose id appears in
   ``expected_ids``, else the one whose question equals ``query`` (exact after
   canonicalising and stripping);
3. with known nodes: ``expected_ids`` that are node ids, each node located with its document
   id and offsets (``gold_source="expected_ids"``);
4. ``expected_texts``: each text one piece of evidence, located in the corpus (found exactly
   or up to whitespace/case, and only once);
5. else :class:`~spanchor_core.InputError` naming the query: a query with no evidence cannot
   be scored, and a silent 0 would read as a retrieval failure.

**Retrieved results**: with known nodes (``nodes=`` an index, a docstore, a mapping or a list
of nodes), each ``retrieved_id`` found there is mapped from its node — document id, offsets
(translated from raw file offsets where needed) and text — so repeated text lands on the
occurrence the node came from; an unknown id falls back to its text. Metric metadata says
which was used (``located_by``: ``"node_ids"``, ``"texts"`` or ``"node_ids+texts"``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from llama_index.core.indices.base import BaseIndex
from llama_index.core.schema import BaseNode
from llama_index.core.storage.docstore.types import BaseDocumentStore

from spanchor_core import (
    DEFAULT_MIN_OVERLAP,
    Corpus,
    DocSpan,
    GoldQuery,
    GoldSet,
    InputError,
    LocateRequest,
    Location,
    Locator,
    MatchStatus,
    RetrievedResult,
)
from spanchor_core.metrics import (
    DEFAULT_METRICS,
    RankedCoverage,
    check_min_overlap,
    measure_coverage,
)
from spanchor_llamaindex.nodes import DocumentIdResolver, NodeConverter

__all__ = ["GoldEvidence", "NodeSource", "SpanContext", "TextCoverage", "metric_value"]

# Statuses accepted when evidence is turned into gold spans: found, and only once (or placed
# by the document id the node named).
_GOLD_STATUSES: Final = frozenset({MatchStatus.EXACT, MatchStatus.VERIFIED, MatchStatus.NORMALISED})

NodeSource = BaseIndex[Any] | BaseDocumentStore | Mapping[str, BaseNode] | Iterable[BaseNode]
"""Where node ids are looked up: an index (its docstore), a docstore, id -> node, or nodes."""


@dataclass(frozen=True, slots=True)
class GoldEvidence:
    """The gold spans one query is judged against, and where they came from."""

    query_id: str | None
    spans: tuple[DocSpan, ...]
    source: str
    """``"gold_set"``, ``"expected_ids"``, ``"expected_texts"`` or ``"reference"``."""


@dataclass(frozen=True, slots=True)
class TextCoverage:
    """Gold evidence and what one ranked retrieval covers of it (one ``compute`` call)."""

    evidence: GoldEvidence
    coverage: RankedCoverage
    by_node_id: int
    """Results mapped from their node (document id, offsets); the rest by text alone."""

    @property
    def located_by(self) -> str:
        total = self.coverage.n_results
        if self.by_node_id == 0:
            return "texts"
        return "node_ids" if self.by_node_id == total else "node_ids+texts"


def preview(text: str, limit: int = 50) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def _gold_failure(location: Location) -> str:
    if location.status is MatchStatus.AMBIGUOUS:
        return f"it occurs {len(location.candidates)} times in the corpus"
    if location.status is MatchStatus.FUZZY:
        return f"it was only found approximately (score {location.confidence:.2f})"
    return location.reason or f"it was not found ({location.status.value})"


def gold_span(location: Location) -> DocSpan | None:
    """The span a location gives as gold evidence, or ``None`` when it is not sure enough."""
    span = location.span
    if location.status in _GOLD_STATUSES:
        return span
    if location.status is MatchStatus.AMBIGUOUS and location.resolved_by == "document_id":
        return span
    return None


def metric_value(coverage: RankedCoverage, base: str, k: int | None, min_overlap: float) -> float:
    """One core metric at cutoff ``k`` (``None``: the whole list)."""
    cutoff = max(coverage.n_results, 1) if k is None else k
    return DEFAULT_METRICS[base].function(coverage, cutoff, min_overlap)


def node_lookup(nodes: NodeSource | None) -> Any:
    """A ``node_id -> BaseNode | None`` function over whatever holds the nodes."""
    if nodes is None:
        return None
    if isinstance(nodes, BaseIndex):
        nodes = nodes.docstore
    if isinstance(nodes, BaseDocumentStore):
        store = nodes

        def from_store(node_id: str) -> BaseNode | None:
            try:
                return store.get_node(node_id, raise_error=False)
            except Exception:  # a docstore may hold a Document under that id, or fail
                return None

        return from_store
    if isinstance(nodes, Mapping):
        return dict(nodes).get
    by_id = {node.node_id: node for node in nodes}
    return by_id.get


class SpanContext:
    """What span metrics judge against: a corpus, its locator, optionally gold and nodes.

    Build one per corpus and share it: the locator's index is built once, on first use, and
    the coverage of recent retrievals is cached so that ten span metrics over one retrieval
    map its texts once. Thread-safe. Copying returns the same object (pydantic deep-copies
    field defaults; a context must never be duplicated with its index). Pickling keeps the
    corpus, gold set, nodes and settings and rebuilds the locator's index on first use.

    ``nodes`` (an index, a docstore, ``{node_id: node}`` or nodes) lets node ids resolve to
    documents and offsets (see the module docstring); ``document_id`` maps a node to its
    corpus id (default :func:`~spanchor_llamaindex.nodes.default_document_id`).
    """

    def __init__(
        self,
        corpus: Corpus,
        gold: GoldSet | None = None,
        *,
        min_overlap: float = DEFAULT_MIN_OVERLAP,
        locator: Locator | None = None,
        nodes: NodeSource | None = None,
        document_id: DocumentIdResolver | None = None,
        cache_size: int = 256,
    ) -> None:
        if locator is not None and locator.corpus.fingerprint != corpus.fingerprint:
            raise InputError("the locator was built for a different corpus")
        self.corpus = corpus
        self.gold = gold
        self.min_overlap = check_min_overlap(min_overlap)
        self.locator = locator if locator is not None else Locator(corpus)
        self.converter = NodeConverter(corpus, document_id)
        self._nodes = nodes
        self._node = node_lookup(nodes)
        self._cache: OrderedDict[tuple[Any, ...], TextCoverage] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        gold = "no gold set" if self.gold is None else f"{len(self.gold)} gold queries"
        nodes = "" if self._node is None else ", with nodes"
        return f"SpanContext({len(self.corpus)} documents, {gold}{nodes})"

    def __copy__(self) -> SpanContext:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> SpanContext:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # Locks, caches and the locator's index stay behind; the resolver must be picklable
        # (the default one is rebuilt from the corpus).
        resolver = self.converter.resolve
        custom = None if getattr(resolver, "__qualname__", "").startswith("default_") else resolver
        nodes = self._nodes
        if isinstance(nodes, BaseIndex | BaseDocumentStore):
            nodes = self._nodes_by_id()
        return (
            _rebuild_context,
            (self.corpus, self.gold, self.min_overlap, nodes, custom, self._cache_size),
        )

    def _nodes_by_id(self) -> dict[str, BaseNode]:
        nodes = self._nodes
        if isinstance(nodes, BaseIndex):
            nodes = nodes.docstore
        if isinstance(nodes, BaseDocumentStore):
            return {k: v for k, v in nodes.docs.items() if isinstance(v, BaseNode)}
        return {}

    # -- nodes ---------------------------------------------------------------------------------

    @property
    def has_nodes(self) -> bool:
        return self._node is not None

    @property
    def nodes_source(self) -> NodeSource | None:
        """What the context was given as ``nodes`` (an index, a docstore, nodes), if anything."""
        return self._nodes

    def node(self, node_id: str) -> BaseNode | None:
        """The node with this id, when the context was given nodes and holds it."""
        return None if self._node is None else self._node(node_id)

    def results_for(
        self, retrieved_ids: Sequence[str] | None, retrieved_texts: Sequence[str] | None
    ) -> tuple[list[RetrievedResult], int]:
        """Ranked results for one retrieval, by node id where known; and how many were."""
        ids = list(retrieved_ids or ())
        texts = list(retrieved_texts or ())
        results: list[RetrievedResult] = []
        by_node = 0
        for index in range(max(len(ids), len(texts))):
            node = self.node(ids[index]) if index < len(ids) else None
            if node is not None:
                results.append(self.converter.result(node, index + 1))
                by_node += 1
            else:
                text = texts[index] if index < len(texts) else None
                results.append(RetrievedResult(index + 1, text))
        return results, by_node

    # -- gold ----------------------------------------------------------------------------------

    def gold_query(self, query: str | None, expected_ids: Sequence[str] | None = None) -> GoldQuery:
        """The bound gold query for this call (by id in ``expected_ids``, then by question)."""
        if self.gold is None:
            raise InputError("no gold set is bound to this context")
        for candidate in expected_ids or ():
            if candidate in self.gold:
                return self.gold[candidate]
        found = self.gold.by_question(query) if query else None
        if found is None:
            raise InputError(
                f"query {preview(query or '')} is not in the gold set",
                path=self.gold.path,
                hint="pass its gold query id in expected_ids, or use the question text exactly "
                "as the gold set has it",
            )
        return found

    def gold_evidence(
        self,
        query: str | None,
        expected_ids: Sequence[str] | None = None,
        expected_texts: Sequence[str] | None = None,
        *,
        query_id: str | None = None,
    ) -> GoldEvidence:
        """The gold spans for one call, by the precedence in the module docstring.

        Raises :class:`~spanchor_core.InputError` when no evidence can be found, saying why.
        """
        if query_id is not None:
            if self.gold is None or query_id not in self.gold:
                where = "no gold set is bound" if self.gold is None else "it is not in the gold set"
                raise InputError(f"query id {query_id!r} cannot be scored: {where}")
            return self.from_gold(self.gold[query_id])
        if self.gold is not None:
            try:
                return self.from_gold(self.gold_query(query, expected_ids))
            except InputError:
                if not expected_texts and not self._known_nodes(expected_ids):
                    raise
        known = self._known_nodes(expected_ids)
        if known:
            return GoldEvidence(None, self.locate_node_evidence(known), "expected_ids")
        if expected_texts:
            return GoldEvidence(None, self.locate_evidence(expected_texts), "expected_texts")
        raise InputError(
            f"no gold evidence for query {preview(query or '')}",
            hint="bind a GoldSet (register_span_metrics(corpus, gold)), give the context the "
            "index or nodes (expected_ids), or pass the evidence texts as expected_texts",
        )

    def _known_nodes(self, expected_ids: Sequence[str] | None) -> list[BaseNode]:
        if self._node is None or not expected_ids:
            return []
        found = [self.node(node_id) for node_id in expected_ids]
        return [node for node in found if node is not None] if all(found) else []

    def from_gold(self, query: GoldQuery) -> GoldEvidence:
        if not query.anchors:
            raise InputError(
                f"gold query {query.query_id!r} has no anchors",
                path=self.gold.path if self.gold is not None else None,
                line=query.line,
            )
        return GoldEvidence(query.query_id, tuple(a.span for a in query.anchors), "gold_set")

    def locate_evidence(self, texts: Sequence[str]) -> tuple[DocSpan, ...]:
        """Each text as one gold span; it must occur once (up to whitespace and case)."""
        return self._gold_spans([LocateRequest(text) for text in texts])

    def locate_node_evidence(self, nodes: Sequence[BaseNode]) -> tuple[DocSpan, ...]:
        """Each node as one gold span, placed by its document id and offsets where known."""
        results = self.converter.results(nodes)
        return self._gold_spans(
            [LocateRequest(r.text, r.document_id, r.start, r.end) for r in results]
        )

    def _gold_spans(self, requests: Sequence[LocateRequest]) -> tuple[DocSpan, ...]:
        locations = self.locator.locate_many(list(requests))
        spans: list[DocSpan] = []
        for request, location in zip(requests, locations, strict=True):
            span = gold_span(location)
            if span is None:
                raise InputError(
                    f"expected text {preview(request.text or '')} cannot serve as gold "
                    f"evidence: {_gold_failure(location)}",
                    hint="bind a GoldSet with anchors, or pass texts copied from one document",
                )
            spans.append(span)
        return tuple(spans)

    # -- retrieved -----------------------------------------------------------------------------

    def locate_results(self, results: Sequence[RetrievedResult]) -> list[Location]:
        """Map results (text plus document id and offset hints) in one batched call."""
        return self.locator.locate_many(
            [LocateRequest(r.text, r.document_id, r.start, r.end) for r in results]
        )

    def coverage(self, gold: Sequence[DocSpan], locations: Sequence[Location]) -> RankedCoverage:
        """What the ranked locations cover of ``gold`` (unmapped results keep their slot)."""
        return measure_coverage(gold, [location.span for location in locations])

    def text_coverage(
        self,
        query: str | None,
        expected_ids: Sequence[str] | None,
        expected_texts: Sequence[str] | None,
        retrieved_texts: Sequence[str] | None,
        retrieved_ids: Sequence[str] | None = None,
    ) -> TextCoverage:
        """Gold and coverage for one ``compute`` call, cached on its arguments."""
        ids = tuple(retrieved_ids or ()) if self._node is not None else ()
        key = (
            query,
            tuple(expected_ids or ()),
            tuple(expected_texts or ()),
            tuple(retrieved_texts or ()),
            ids,
        )
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        evidence = self.gold_evidence(query, expected_ids, expected_texts)
        results, by_node = self.results_for(ids, retrieved_texts)
        locations = self.locate_results(results)
        value = TextCoverage(evidence, self.coverage(evidence.spans, locations), by_node)
        with self._lock:
            self._cache[key] = value
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return value


def _rebuild_context(
    corpus: Corpus,
    gold: GoldSet | None,
    min_overlap: float,
    nodes: NodeSource | None,
    document_id: DocumentIdResolver | None,
    cache_size: int,
) -> SpanContext:
    return SpanContext(
        corpus,
        gold,
        min_overlap=min_overlap,
        nodes=nodes,
        document_id=document_id,
        cache_size=cache_size,
    )
