"""Evaluating a metric registry over one coverage record: :func:`compute_metrics`.

A :data:`MetricPlan` fixes the value names and their order once per evaluation;
:func:`metric_names` is that order, and :func:`apply_plan` the per-query step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from spanchor_core.metrics.coverage import RankedCoverage
from spanchor_core.metrics.names import DEFAULT_K, DEFAULT_MIN_OVERLAP, check_k, check_min_overlap
from spanchor_core.metrics.registry import DEFAULT_METRICS, Metric, MetricFunction

__all__ = ["MetricPlan", "apply_plan", "compute_metrics", "metric_names", "metric_plan"]

MetricPlan = tuple[tuple[str, MetricFunction, int | None], ...]
"""(value name, function, cutoff or ``None`` for the whole list), in output order."""


def metric_plan(ks: tuple[int, ...], metrics: Mapping[str, Metric] = DEFAULT_METRICS) -> MetricPlan:
    """The plan for checked cutoffs ``ks`` (see :func:`~spanchor_core.metrics.check_k`).

    Built once per evaluation instead of once per query: formatting ``name@K`` and re-checking
    the cutoffs cost more than some of the metrics themselves.
    """
    plan: list[tuple[str, MetricFunction, int | None]] = []
    for metric in metrics.values():
        if metric.per_k:
            plan.extend((f"{metric.name}@{cutoff}", metric.function, cutoff) for cutoff in ks)
        if metric.whole_list:
            plan.append((metric.name, metric.function, None))
    return tuple(plan)


def apply_plan(coverage: RankedCoverage, plan: MetricPlan, overlap: float) -> dict[str, float]:
    """:func:`compute_metrics` with checked ``k``/``min_overlap`` and a prebuilt plan."""
    whole = max(len(coverage.covered) - 1, 1)
    return {
        name: function(coverage, whole if cutoff is None else cutoff, overlap)
        for name, function, cutoff in plan
    }


def metric_names(
    k: Iterable[int] = DEFAULT_K, metrics: Mapping[str, Metric] = DEFAULT_METRICS
) -> list[str]:
    """The value names :func:`compute_metrics` produces, in its (stable) order."""
    return [name for name, _, _ in metric_plan(check_k(k), metrics)]


def compute_metrics(
    coverage: RankedCoverage,
    k: Iterable[int] = DEFAULT_K,
    *,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    metrics: Mapping[str, Metric] = DEFAULT_METRICS,
) -> dict[str, float]:
    """Every metric at every K (plus whole-list values) for one query, in a stable order.

    >>> from spanchor_core.metrics import measure_coverage
    >>> from spanchor_core.spans import DocSpan
    >>> gold = [DocSpan("a", 0, 10)]
    >>> values = compute_metrics(measure_coverage(gold, [None, DocSpan("a", 5, 15)]), k=(1, 2))
    >>> values["recall@1"], values["recall@2"], values["precision@2"], values["mrr"]
    (0.0, 0.5, 0.25, 0.5)
    """
    return apply_plan(coverage, metric_plan(check_k(k), metrics), check_min_overlap(min_overlap))
