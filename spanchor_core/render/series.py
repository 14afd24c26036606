"""The data behind the charts: each query's change in one metric, mean metric@K curves, and the
colours both kinds of picture use.

Shared by the inline-SVG charts of the HTML report (:mod:`spanchor_core.render.html.svg`) and
the matplotlib figures (:mod:`spanchor_core.render.plots`), so the two always show the same
bars in the same order and colours.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal, NamedTuple

from spanchor_core.compare import ChangeStatus, Comparison, QueryChange
from spanchor_core.errors import InputError
from spanchor_core.evaluate import Evaluation
from spanchor_core.metrics import metric_parts

__all__ = [
    "DELTA_COLOURS",
    "SERIES_COLOURS",
    "DeltaKind",
    "QueryDelta",
    "metric_curve",
    "metric_cutoffs",
    "metric_direction",
    "primary_metric",
    "query_deltas",
]

DeltaKind = Literal["regressed", "flaky", "worse", "unchanged", "better", "improved"]

DELTA_COLOURS: Final[Mapping[str, str]] = {
    "regressed": "#c62828",
    "flaky": "#ef6c00",
    "worse": "#ef9a9a",
    "unchanged": "#9e9e9e",
    "better": "#a5d6a7",
    "improved": "#2e7d32",
}
"""Bar colour per :data:`DeltaKind`: strong red/green for gate verdicts, pale for moves the
gate let through, grey for no change (beyond the noise floor)."""
SERIES_COLOURS: Final = ("#1565c0", "#e65100", "#6a1b9a", "#00838f", "#5d4037", "#ad1457")
"""Line colours of the recall-vs-K curves, in series order (blue for the baseline, orange for
the candidate: distinguishable with the common colour-vision deficiencies)."""


def primary_metric(comparison: Comparison) -> str | None:
    """The metric the charts show: the first one the policy gates per query (in the policy's
    order), else the first gated on its mean, else the first aggregate row; ``None`` if the
    comparison has no metric at all."""
    for name in comparison.policy.max_drop:
        return name
    for name in comparison.policy.aggregate:
        return name
    for row in comparison.aggregates:
        return row.metric
    for query in comparison.queries:
        for change in query.changes:
            return change.metric
    return None


class QueryDelta(NamedTuple):
    """One bar of the per-query delta plot."""

    query_id: str
    baseline: float
    candidate: float
    delta: float
    """``candidate - baseline`` (0.0 within the noise floor), as the comparison recorded it."""
    kind: DeltaKind


def metric_direction(comparison: Comparison, metric: str) -> str:
    """``"higher"`` or ``"lower"``: which way ``metric`` is better in this comparison."""
    for row in comparison.aggregates:
        if row.metric == metric:
            return row.direction
    return comparison.policy.directions.get(metric, "higher")


def _kind(row: QueryChange, metric: str, gain: float) -> DeltaKind:
    status = row.change(metric).status
    if metric in row.regressed:
        return "flaky" if row.flaky else "regressed"
    if status is ChangeStatus.IMPROVED:
        return "improved"
    if gain < 0:
        return "worse"
    return "better" if gain > 0 else "unchanged"


def query_deltas(comparison: Comparison, metric: str | None = None) -> list[QueryDelta]:
    """Every compared query's change in ``metric`` (default :func:`primary_metric`), the worst
    first — the order of the bars, top to bottom.

    "Worst" follows the metric's direction: a rise is worst for a lower-is-better metric. Ties
    are broken by query id. Raises :class:`InputError` when ``metric`` was not compared.
    """
    name = metric if metric is not None else primary_metric(comparison)
    if name is None:
        raise InputError("the comparison has no metric to plot")
    sign = 1.0 if metric_direction(comparison, name) == "higher" else -1.0
    rows: list[tuple[float, str, QueryDelta]] = []
    for row in comparison.queries:
        try:
            change = row.change(name)
        except KeyError:
            continue
        gain = sign * change.delta
        kind = _kind(row, name, gain)
        rows.append(
            (
                gain,
                row.query_id,
                QueryDelta(row.query_id, change.baseline, change.candidate, change.delta, kind),
            )
        )
    if comparison.queries and not rows:
        compared = sorted({c.metric for row in comparison.queries for c in row.changes})
        raise InputError(
            f"metric {name!r} was not compared; compared: {', '.join(compared) or 'none'}"
        )
    rows.sort(key=lambda item: (item[0], item[1]))
    return [item[2] for item in rows]


def metric_cutoffs(evaluation: Evaluation, base: str) -> list[int]:
    """The K values (ascending) at which the evaluation reports ``base@K``."""
    found = []
    for name in evaluation.metric_names:
        metric, cutoff = metric_parts(name)
        if metric == base and cutoff is not None:
            found.append(cutoff)
    return sorted(set(found))


def metric_curve(
    evaluation: Evaluation,
    base: str = "recall",
    *,
    ks: Sequence[int] | None = None,
    query_ids: Iterable[str] | None = None,
) -> list[tuple[int, float]]:
    """``[(K, mean of base@K)]`` for every K the evaluation has (or those of ``ks`` it has).

    ``query_ids`` restricts the mean to those queries (a comparison's compared queries, so
    that the curves agree with its aggregates); by default every scored query counts. A K with
    no query to average is left out.
    """
    available = metric_cutoffs(evaluation, base)
    wanted = available if ks is None else [k for k in sorted(set(ks)) if k in available]
    queries = evaluation.queries  # ``in evaluation`` would build each query to look it up
    ids = list(evaluation) if query_ids is None else [q for q in query_ids if q in queries]
    points = []
    for k in wanted:
        # one metric's column, not every query built to read one value from it
        column = evaluation.metric(f"{base}@{k}")
        values = [column[qid] for qid in ids]
        if values:
            points.append((k, math.fsum(values) / len(values)))
    return points
