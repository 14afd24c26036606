"""The metric plan: public, in metric_names order, and what compute_metrics applies."""

from __future__ import annotations

from spanchor_core.metrics import (
    DEFAULT_METRICS,
    apply_plan,
    check_k,
    compute_metrics,
    measure_coverage,
    metric_names,
    metric_plan,
)
from spanchor_core.spans import DocSpan


def test_plan_order_is_metric_names_and_apply_equals_compute() -> None:
    ks = check_k((5, 1))
    plan = metric_plan(ks, DEFAULT_METRICS)
    assert [name for name, _, _ in plan] == metric_names(ks)
    assert [cutoff for name, _, cutoff in plan if "@" not in name] == [None, None]
    coverage = measure_coverage([DocSpan("a", 0, 10)], [None, DocSpan("a", 5, 15)])
    assert apply_plan(coverage, plan, 0.5) == compute_metrics(coverage, k=ks)
