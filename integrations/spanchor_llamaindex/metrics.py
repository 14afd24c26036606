"""Span metrics inside LlamaIndex's own retrieval harness.

``RetrieverEvaluator`` hands each metric only ``(query, expected_ids, retrieved_ids,
expected_texts, retrieved_texts)`` — node ids and texts, no offsets, no scores. The metrics
here therefore work from ``retrieved_texts`` (mapped onto the corpus by a
:class:`~spanchor_core.Locator`) and from gold evidence found through a :class:`SpanContext`:

1. with a bound :class:`~spanchor_core.GoldSet`: the gold query whose id appears in
   ``expected_ids``, else the one whose question equals ``query`` (exact after
   canonicalising and stripping);
2. else ``expected_texts``: each text is one piece of evidence, located in the corpus (it
   must be found exactly or up to whitespace/case, and only once);
3. else the metric raises :class:`~spanchor_core.InputError` naming the query: a query with no
   evidence cannot be scored, and a silent 0 would read as a retrieval failure.

An empty retrieval scores 0 (LlamaIndex's ``hit_rate`` and ``mrr`` raise instead). Definitions
are the core's (:mod:`spanchor_core.metrics`): characters per document, unions never sums, an
unmapped result keeps its rank slot.

Because ``from_metric_names`` builds each metric with no arguments, names are made usable by
:func:`register_span_metrics`, which binds a context and adds ``span_recall@5``-style entries
to ``METRIC_REGISTRY`` (a plain dict in LlamaIndex). One retrieval is mapped once however many
span metrics read it: the context caches the coverage of recent ``(query, texts)`` inputs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from llama_index.core.bridge.pydantic import ConfigDict, Field
from llama_index.core.evaluation.retrieval.metrics import METRIC_REGISTRY
from llama_index.core.evaluation.retrieval.metrics_base import (
    BaseRetrievalMetric,
    RetrievalMetricResult,
)

from spanchor_core import (
    DEFAULT_K,
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
    check_k,
    check_min_overlap,
    measure_coverage,
)

__all__ = [
    "SPAN_METRIC_PREFIX",
    "GoldEvidence",
    "SpanAP",
    "SpanContext",
    "SpanFullEvidence",
    "SpanHit",
    "SpanIoU",
    "SpanMRR",
    "SpanMetric",
    "SpanNDCG",
    "SpanPrecision",
    "SpanRecall",
    "register_span_metrics",
    "span_metrics",
    "unregister_span_metrics",
]

SPAN_METRIC_PREFIX: Final = "span_"
"""Registered names are ``span_<core metric>[@K]``, so they never shadow LlamaIndex's own."""

# Statuses accepted when an expected text is turned into gold evidence: found, and only once.
_GOLD_STATUSES = frozenset({MatchStatus.EXACT, MatchStatus.VERIFIED, MatchStatus.NORMALISED})


@dataclass(frozen=True, slots=True)
class GoldEvidence:
    """The gold spans one query is judged against, and where they came from."""

    query_id: str | None
    spans: tuple[DocSpan, ...]
    source: str
    """``"gold_set"`` or ``"expected_texts"``."""


def _preview(text: str, limit: int = 50) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


class SpanContext:
    """What span metrics judge against: a corpus, its locator, optionally a gold set.

    Build one per corpus and share it: the locator's index is built once, on first use, and
    the coverage of recent retrievals is cached so that ten span metrics over one retrieval
    map its texts once. Thread-safe. Copying returns the same object (pydantic deep-copies
    field defaults; a context must never be duplicated with its index).
    """

    def __init__(
        self,
        corpus: Corpus,
        gold: GoldSet | None = None,
        *,
        min_overlap: float = DEFAULT_MIN_OVERLAP,
        locator: Locator | None = None,
        cache_size: int = 256,
    ) -> None:
        if locator is not None and locator.corpus.fingerprint != corpus.fingerprint:
            raise InputError("the locator was built for a different corpus")
        self.corpus = corpus
        self.gold = gold
        self.min_overlap = check_min_overlap(min_overlap)
        self.locator = locator if locator is not None else Locator(corpus)
        self._cache: OrderedDict[tuple[Any, ...], tuple[GoldEvidence, RankedCoverage]] = (
            OrderedDict()
        )
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        gold = "no gold set" if self.gold is None else f"{len(self.gold)} gold queries"
        return f"SpanContext({len(self.corpus)} documents, {gold})"

    def __copy__(self) -> SpanContext:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> SpanContext:
        return self

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
                f"query {_preview(query or '')} is not in the gold set",
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

        ``query_id`` (an explicit gold query id) wins over everything. Raises
        :class:`~spanchor_core.InputError` when no evidence can be found, saying why.
        """
        if query_id is not None:
            if self.gold is None or query_id not in self.gold:
                where = "no gold set is bound" if self.gold is None else "it is not in the gold set"
                raise InputError(f"query id {query_id!r} cannot be scored: {where}")
            return self._from_gold(self.gold[query_id])
        if self.gold is not None:
            try:
                return self._from_gold(self.gold_query(query, expected_ids))
            except InputError:
                if not expected_texts:
                    raise
        if expected_texts:
            return GoldEvidence(None, self.locate_evidence(expected_texts), "expected_texts")
        raise InputError(
            f"no gold evidence for query {_preview(query or '')}",
            hint="bind a GoldSet (register_span_metrics(corpus, gold)) or pass the evidence "
            "texts as expected_texts",
        )

    def _from_gold(self, query: GoldQuery) -> GoldEvidence:
        if not query.anchors:
            raise InputError(
                f"gold query {query.query_id!r} has no anchors",
                path=self.gold.path if self.gold is not None else None,
                line=query.line,
            )
        return GoldEvidence(query.query_id, tuple(a.span for a in query.anchors), "gold_set")

    def locate_evidence(self, texts: Sequence[str]) -> tuple[DocSpan, ...]:
        """Each text as one gold span; it must occur once (up to whitespace and case)."""
        locations = self.locator.locate_many([LocateRequest(text) for text in texts])
        spans: list[DocSpan] = []
        for text, location in zip(texts, locations, strict=True):
            span = location.span
            if location.status not in _GOLD_STATUSES or span is None:
                raise InputError(
                    f"expected text {_preview(text)} cannot serve as gold evidence: "
                    f"{_gold_failure(location)}",
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
    ) -> tuple[GoldEvidence, RankedCoverage]:
        """Gold and coverage for one ``compute`` call, cached on its arguments."""
        key = (
            query,
            tuple(expected_ids or ()),
            tuple(expected_texts or ()),
            tuple(retrieved_texts or ()),
        )
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        evidence = self.gold_evidence(query, expected_ids, expected_texts)
        texts = list(retrieved_texts or ())
        locations = self.locator.locate_many([LocateRequest(text) for text in texts])
        value = (evidence, self.coverage(evidence.spans, locations))
        with self._lock:
            self._cache[key] = value
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return value


def _gold_failure(location: Location) -> str:
    if location.status is MatchStatus.AMBIGUOUS:
        return f"it occurs {len(location.candidates)} times in the corpus"
    if location.status is MatchStatus.FUZZY:
        return f"it was only found approximately (score {location.confidence:.2f})"
    return location.reason or f"it was not found ({location.status.value})"


def metric_value(coverage: RankedCoverage, base: str, k: int | None, min_overlap: float) -> float:
    """One core metric at cutoff ``k`` (``None``: the whole list)."""
    cutoff = max(coverage.n_results, 1) if k is None else k
    return DEFAULT_METRICS[base].function(coverage, cutoff, min_overlap)


class SpanMetric(BaseRetrievalMetric):
    """Base of the span metrics: a core metric (``base_metric``) at cutoff ``k``.

    ``k=None`` means the whole ranked list. ``context`` says what to judge against; when it
    is ``None`` the metric raises, because LlamaIndex's arguments alone hold no corpus.
    Instances name themselves ``span_<metric>@<k>`` (see :meth:`at` for classes that carry
    that name, which ``METRIC_REGISTRY`` needs).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    metric_name: ClassVar[str] = "span"
    base_metric: ClassVar[str] = ""

    k: int | None = None
    context: SpanContext | None = Field(default=None, exclude=True)  # not data: never dumped
    min_overlap: float | None = None
    """``None``: the context's ``min_overlap``."""

    def model_post_init(self, context: Any, /) -> None:
        if self.k is not None:
            check_k([self.k])
        if self.min_overlap is not None:
            check_min_overlap(self.min_overlap)
        name = _metric_name(self.base_metric, self.k)
        if name != type(self).metric_name:
            # RetrieverEvaluator keys results by ``metric.metric_name``: an instance with its
            # own K must carry its own name, or two cutoffs would overwrite each other.
            object.__setattr__(self, "metric_name", name)

    @classmethod
    def at(cls, k: int | None, context: SpanContext | None = None) -> type[SpanMetric]:
        """A subclass named ``span_<metric>@<k>`` whose no-argument instance is bound.

        ``from_metric_names`` instantiates registry entries without arguments, so the cutoff
        and the context must live in the class.
        """
        if k is not None:
            check_k([k])
        name = _metric_name(cls.base_metric, k)
        bound = context
        namespace: dict[str, Any] = {
            "__module__": cls.__module__,
            "__qualname__": f"{cls.__qualname__}.at({k})",
            "__annotations__": {"k": int | None, "context": SpanContext | None},
            "metric_name": name,
            "k": k,
            "context": Field(default=bound, exclude=True),
        }
        return type(f"{cls.__name__}At{k or 'All'}", (cls,), namespace)

    def compute(
        self,
        query: str | None = None,
        expected_ids: list[str] | None = None,
        retrieved_ids: list[str] | None = None,
        expected_texts: list[str] | None = None,
        retrieved_texts: list[str] | None = None,
        **kwargs: Any,
    ) -> RetrievalMetricResult:
        """Score ``retrieved_texts`` against the query's gold evidence (0 when empty)."""
        if self.context is None:
            raise InputError(
                f"{self.metric_name} has no corpus to judge against",
                hint="pass context=SpanContext(corpus, gold) or use register_span_metrics",
            )
        overlap = self.context.min_overlap if self.min_overlap is None else self.min_overlap
        evidence, coverage = self.context.text_coverage(
            query, expected_ids, expected_texts, retrieved_texts
        )
        value = metric_value(coverage, self.base_metric, self.k, overlap)
        cutoff = coverage.index(self.k if self.k is not None else coverage.n_results)
        return RetrievalMetricResult(
            score=value,
            metadata={
                "query_id": evidence.query_id,
                "gold_source": evidence.source,
                "unmapped": coverage.unmapped[cutoff],
            },
        )


def _metric_name(base: str, k: int | None) -> str:
    return f"{SPAN_METRIC_PREFIX}{base}" + ("" if k is None else f"@{k}")


class SpanRecall(SpanMetric):
    """Gold characters covered / gold characters."""

    metric_name: ClassVar[str] = "span_recall"
    base_metric: ClassVar[str] = "recall"


class SpanPrecision(SpanMetric):
    """Gold characters covered / mapped characters retrieved."""

    metric_name: ClassVar[str] = "span_precision"
    base_metric: ClassVar[str] = "precision"


class SpanHit(SpanMetric):
    """1 if some gold anchor is covered by at least ``min_overlap``."""

    metric_name: ClassVar[str] = "span_hit"
    base_metric: ClassVar[str] = "hit"


class SpanFullEvidence(SpanMetric):
    """1 if every gold anchor is covered by at least ``min_overlap``."""

    metric_name: ClassVar[str] = "span_full_evidence"
    base_metric: ClassVar[str] = "full_evidence"


class SpanIoU(SpanMetric):
    """Gold ∩ retrieved / gold ∪ retrieved, in characters."""

    metric_name: ClassVar[str] = "span_iou"
    base_metric: ClassVar[str] = "iou"


class SpanMRR(SpanMetric):
    """1 / rank of the first result that shares a character with the gold evidence."""

    metric_name: ClassVar[str] = "span_mrr"
    base_metric: ClassVar[str] = "mrr"


class SpanNDCG(SpanMetric):
    """DCG of newly covered gold characters over the ideal DCG."""

    metric_name: ClassVar[str] = "span_ndcg"
    base_metric: ClassVar[str] = "ndcg"


class SpanAP(SpanMetric):
    """Mean over gold characters of the precision where each was first covered."""

    metric_name: ClassVar[str] = "span_ap"
    base_metric: ClassVar[str] = "ap"


_CLASSES: Mapping[str, type[SpanMetric]] = {
    cls.base_metric: cls
    for cls in (
        SpanRecall,
        SpanPrecision,
        SpanHit,
        SpanFullEvidence,
        SpanIoU,
        SpanMRR,
        SpanNDCG,
        SpanAP,
    )
}
_WHOLE_LIST = ("iou", "mrr")  # also registered without @K, as the core reports them
_DEFAULT_BASES: tuple[str, ...] = tuple(_CLASSES)


def _bases(metrics: Iterable[str]) -> list[str]:
    chosen = list(metrics)
    unknown = [name for name in chosen if name not in _CLASSES]
    if unknown:
        raise InputError(
            f"unknown span metric {unknown[0]!r}", hint=f"choose from {', '.join(_CLASSES)}"
        )
    return chosen


def _bound_classes(
    context: SpanContext, k: Iterable[int], metrics: Iterable[str]
) -> list[type[SpanMetric]]:
    ks = check_k(k)
    classes: list[type[SpanMetric]] = []
    for base in _bases(metrics):
        cls = _CLASSES[base]
        classes.extend(cls.at(cutoff, context) for cutoff in ks)
        if base in _WHOLE_LIST:
            classes.append(cls.at(None, context))
    return classes


def _as_context(
    corpus: Corpus | SpanContext, gold: GoldSet | None, min_overlap: float | None
) -> SpanContext:
    if isinstance(corpus, SpanContext):
        if gold is not None or min_overlap is not None:
            raise InputError("pass gold and min_overlap to the SpanContext, not here")
        return corpus
    overlap = DEFAULT_MIN_OVERLAP if min_overlap is None else min_overlap
    return SpanContext(corpus, gold, min_overlap=overlap)


def span_metrics(
    corpus: Corpus | SpanContext,
    gold: GoldSet | None = None,
    *,
    k: Iterable[int] = DEFAULT_K,
    metrics: Iterable[str] = _DEFAULT_BASES,
    min_overlap: float | None = None,
) -> list[SpanMetric]:
    """Bound span metric instances, for ``RetrieverEvaluator(metrics=[...])`` directly.

    One instance per metric per K (plus whole-list ``span_iou`` and ``span_mrr``), all
    sharing one :class:`SpanContext`, in the order of ``metrics`` then K.
    """
    context = _as_context(corpus, gold, min_overlap)
    return [cls() for cls in _bound_classes(context, k, metrics)]


_registered: dict[str, type[BaseRetrievalMetric]] = {}
_registry_lock = threading.Lock()


def register_span_metrics(
    corpus: Corpus | SpanContext,
    gold: GoldSet | None = None,
    *,
    k: Iterable[int] = DEFAULT_K,
    metrics: Iterable[str] = _DEFAULT_BASES,
    min_overlap: float | None = None,
) -> list[str]:
    """Make ``span_recall@5`` & co. nameable in ``RetrieverEvaluator.from_metric_names``.

    Adds one entry per metric per K (and whole-list ``span_iou``/``span_mrr``) to LlamaIndex's
    ``METRIC_REGISTRY``, all bound to one :class:`SpanContext` over ``corpus`` and ``gold``.
    Registering again rebinds the names (the registry is global: one binding per name).
    Returns the names, in registration order. :func:`unregister_span_metrics` removes them.
    """
    context = _as_context(corpus, gold, min_overlap)
    classes = _bound_classes(context, k, metrics)
    with _registry_lock:
        for cls in classes:
            METRIC_REGISTRY[cls.metric_name] = cls
            _registered[cls.metric_name] = cls
    return [cls.metric_name for cls in classes]


def unregister_span_metrics() -> list[str]:
    """Remove every name :func:`register_span_metrics` added (others' entries are kept)."""
    with _registry_lock:
        removed = []
        for name, cls in list(_registered.items()):
            if METRIC_REGISTRY.get(name) is cls:
                del METRIC_REGISTRY[name]
                removed.append(name)
            del _registered[name]
    return removed
