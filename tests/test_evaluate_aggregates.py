"""``Evaluation.aggregates()`` is computed once per evaluation (the terminal table, the Markdown
report and the writer all ask for it) and gives the numbers one metric at a time gives."""

from __future__ import annotations

import dataclasses
import math

from hypothesis import given
from hypothesis import strategies as st

from spanchor_core.evaluate import Evaluation, EvaluationSettings, MetricSummary, QueryEvaluation

NAMES = ("recall@1", "recall@5", "mrr")


def _evaluation(rows: list[dict[str, float]]) -> Evaluation:
    queries = {f"q{i}": QueryEvaluation(f"q{i}", metrics) for i, metrics in enumerate(rows)}
    return Evaluation(queries=queries, settings=EvaluationSettings(), metric_names=NAMES)


def test_aggregates_by_hand() -> None:
    ev = _evaluation(
        [
            {"recall@1": 0.0, "recall@5": 1.0, "mrr": 0.5},
            {"recall@1": 1.0, "recall@5": 1.0, "mrr": 1.0},
        ]
    )
    summaries = ev.aggregates()
    assert list(summaries) == list(NAMES)
    assert summaries["recall@1"] == MetricSummary(0.5, 0.5, 0.0, 1.0, 2)
    assert summaries["recall@5"] == MetricSummary(1.0, 0.0, 1.0, 1.0, 2)
    assert summaries["mrr"] == MetricSummary(0.75, 0.25, 0.5, 1.0, 2)


values = st.floats(min_value=0, max_value=1, allow_nan=False)
row = st.fixed_dictionaries(dict.fromkeys(NAMES, values))


@given(st.lists(row, max_size=30), st.booleans())
def test_one_pass_equals_one_metric_at_a_time(rows: list[dict[str, float]], shuffle: bool) -> None:
    if shuffle:  # a query whose metrics are not in metric order takes the per-metric path
        rows = [dict(reversed(list(r.items()))) for r in rows]
    ev = _evaluation(rows)
    expected = {name: MetricSummary.of([r[name] for r in rows]) if rows else None for name in NAMES}
    got = ev.aggregates()
    for name in NAMES:
        if not rows:
            assert got[name].n == 0
            assert math.isnan(got[name].mean)
        else:
            assert got[name] == expected[name]
        assert ev.aggregate(name) == got[name]


def test_computed_once_and_never_shared_or_carried_over() -> None:
    ev = _evaluation([{"recall@1": 0.0, "recall@5": 1.0, "mrr": 0.5}])
    first = ev.aggregates()
    first.pop("mrr")  # the caller's dictionary is its own
    assert list(ev.aggregates()) == list(NAMES)
    assert ev.aggregates()["mrr"] is ev.aggregates()["mrr"]  # the same summary: not recomputed
    other = dataclasses.replace(
        ev, queries={"q0": QueryEvaluation("q0", {"recall@1": 1.0, "recall@5": 1.0, "mrr": 1.0})}
    )
    assert other.aggregates()["recall@1"].mean == 1.0  # a new evaluation computes its own
    assert ev.aggregates()["recall@1"].mean == 0.0
