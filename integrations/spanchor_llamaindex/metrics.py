"""Span metrics inside LlamaIndex's own retrieval harness.

``RetrieverEvaluator`` hands each metric only ``(query, expected_ids, retrieved_ids,
expected_texts, retrieved_texts)`` — node ids and texts, no offsets, no scores. The metrics
here map that retrieval onto the corpus through a :class:`~spanchor_llamaindex.context.
SpanContext`: by node id (document and offsets from the index/docstore/nodes the context was
given) where it can, else by text; gold evidence comes from the context too (a bound gold set,
node ids in ``expected_ids``, or ``expected_texts``; see :mod:`spanchor_llamaindex.context`).
Each result's metadata says which was used (``located_by``, ``gold_source``).

An empty retrieval scores 0 (LlamaIndex's ``hit_rate`` and ``mrr`` raise instead). Definitions
are the core's (:mod:`spanchor_core.metrics`): characters per document, unions never sums, an
unmapped result keeps its rank slot.

Because ``from_metric_names`` builds each metric with no arguments, names are made usable by
:func:`register_span_metrics`, which binds a context and adds ``span_recall@5``-style entries
to ``METRIC_REGISTRY`` (a plain dict in LlamaIndex). One retrieval is mapped once however many
span metrics read it: the context caches the coverage of recent inputs. Metrics pickle (for
process pools): an instance is rebuilt from its metric name, cutoff and context.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final

from llama_index.core.bridge.pydantic import ConfigDict, Field
from llama_index.core.evaluation.retrieval.metrics import METRIC_REGISTRY
from llama_index.core.evaluation.retrieval.metrics_base import (
    BaseRetrievalMetric,
    RetrievalMetricResult,
)

from spanchor_core import DEFAULT_K, DEFAULT_MIN_OVERLAP, Corpus, GoldSet, InputError
from spanchor_core.metrics import check_k, check_min_overlap
from spanchor_llamaindex.context import GoldEvidence, NodeSource, SpanContext, metric_value

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
    "metric_value",
    "register_span_metrics",
    "span_metrics",
    "unregister_span_metrics",
]

SPAN_METRIC_PREFIX: Final = "span_"
"""Registered names are ``span_<core metric>[@K]``, so they never shadow LlamaIndex's own."""


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
        """Score the retrieval against the query's gold evidence (0 when empty).

        ``retrieved_ids`` are used first when the context knows the nodes (see the module
        docstring); ``retrieved_texts`` otherwise.
        """
        if self.context is None:
            raise InputError(
                f"{self.metric_name} has no corpus to judge against",
                hint="pass context=SpanContext(corpus, gold) or use register_span_metrics",
            )
        overlap = self.context.min_overlap if self.min_overlap is None else self.min_overlap
        measured = self.context.text_coverage(
            query, expected_ids, expected_texts, retrieved_texts, retrieved_ids
        )
        coverage = measured.coverage
        value = metric_value(coverage, self.base_metric, self.k, overlap)
        cutoff = coverage.index(self.k if self.k is not None else coverage.n_results)
        return RetrievalMetricResult(
            score=value,
            metadata={
                "query_id": measured.evidence.query_id,
                "gold_source": measured.evidence.source,
                "located_by": measured.located_by,
                "by_node_id": measured.by_node_id,
                "unmapped": coverage.unmapped[cutoff],
            },
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Bound classes are made at run time (see ``at``) and cannot be found by name: rebuild
        # the instance from what defines it instead.
        return (_rebuild_metric, (self.base_metric, self.k, self.context, self.min_overlap))


def _rebuild_metric(
    base: str, k: int | None, context: SpanContext | None, min_overlap: float | None
) -> SpanMetric:
    return _CLASSES[base](k=k, context=context, min_overlap=min_overlap)


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
    corpus: Corpus | SpanContext,
    gold: GoldSet | None,
    min_overlap: float | None,
    nodes: NodeSource | None = None,
) -> SpanContext:
    if isinstance(corpus, SpanContext):
        if gold is not None or min_overlap is not None or nodes is not None:
            raise InputError("pass gold, min_overlap and nodes to the SpanContext, not here")
        return corpus
    overlap = DEFAULT_MIN_OVERLAP if min_overlap is None else min_overlap
    return SpanContext(corpus, gold, min_overlap=overlap, nodes=nodes)


def span_metrics(
    corpus: Corpus | SpanContext,
    gold: GoldSet | None = None,
    *,
    k: Iterable[int] = DEFAULT_K,
    metrics: Iterable[str] = _DEFAULT_BASES,
    min_overlap: float | None = None,
    nodes: NodeSource | None = None,
) -> list[SpanMetric]:
    """Bound span metric instances, for ``RetrieverEvaluator(metrics=[...])`` directly.

    One instance per metric per K (plus whole-list ``span_iou`` and ``span_mrr``), all
    sharing one :class:`SpanContext`, in the order of ``metrics`` then K. ``nodes`` (an
    index, docstore or nodes) lets ``retrieved_ids`` resolve to documents and offsets.
    """
    context = _as_context(corpus, gold, min_overlap, nodes)
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
    nodes: NodeSource | None = None,
) -> list[str]:
    """Make ``span_recall@5`` & co. nameable in ``RetrieverEvaluator.from_metric_names``.

    Adds one entry per metric per K (and whole-list ``span_iou``/``span_mrr``) to LlamaIndex's
    ``METRIC_REGISTRY``, all bound to one :class:`SpanContext` over ``corpus`` and ``gold``.
    Registering again rebinds the names (the registry is global: one binding per name).
    Returns the names, in registration order. :func:`unregister_span_metrics` removes them.
    ``nodes`` (the index, its docstore, or the nodes) lets ``retrieved_ids`` resolve to
    documents and offsets before text is tried.
    """
    context = _as_context(corpus, gold, min_overlap, nodes)
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
