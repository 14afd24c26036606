"""Span metrics: how much gold evidence a ranked list of retrieved spans covers, at each K.

Everything here is a pure function over :class:`~spanchor_core.spans.DocSpan` values. One pass
over a ranked list (:func:`measure_coverage`, in :mod:`.coverage`) records, after every rank, how
many gold and retrieved characters are covered; every metric at every K is then a lookup in that
record (:mod:`.registry` holds the metrics, one signature each, with their exact definitions).
:mod:`.names` checks cutoffs and reads names like ``recall@5``; :mod:`.compute` evaluates a
registry over one coverage record; :mod:`.fused` computes a whole plan in one walk, and
:mod:`.batch` for many ranked lists at once with numpy (the evaluation's hot path), both the
same values bit for bit.

Conventions (they hold for every metric of :mod:`.registry`):

* Characters count **per document**. A retrieved span overlaps gold only in the same document;
  the same offsets in another document are different characters. (spanchor 0.x compared bare
  intervals across documents, which inflated recall whenever two documents shared offsets.)
* Unions, never sums: overlapping or duplicate retrieved spans, and overlapping gold anchors, are
  counted once. ``G`` is the per-document union of the gold anchors, ``R_K`` the per-document
  union of the mapped results at ranks ``1..K``; ``|X|`` sums lengths over documents.
* A result that could not be mapped (``None``) keeps its rank slot and covers nothing: five
  unmapped results and the gold text at rank 6 give ``recall@5 == 0``. Its canonical length is
  unknown, so it adds no characters to ``R_K``; precision (and so AP, built from precision at
  each rank) counts it as retrieved text of the *average size* of the mapped results that
  added characters, covering no gold: ``precision@K = |G ∩ R_K| / |R_K| × D_K / (D_K + U_K)``
  for ``U_K`` unmapped and ``D_K`` character-adding results in the top K (a duplicate changes
  nothing). ``[unmapped, gold]`` gives ``precision@2 = ap@2 = 0.5``, the value of an irrelevant
  result above a relevant one. ``unmapped@K`` reports how many of the top K were unmapped.
* ``K`` larger than the list means "the whole list": the list is not padded with anything.
* Gold must hold at least one anchor and every anchor at least one character; anything else is an
  :class:`~spanchor_core.errors.InputError` (a query without evidence cannot be scored —
  :func:`spanchor_core.evaluate.evaluate` lists such queries instead of scoring them).
"""

from __future__ import annotations

from spanchor_core.metrics.batch import RankedColumns, score_columns, score_many
from spanchor_core.metrics.compute import (
    MetricPlan,
    apply_plan,
    compute_metrics,
    metric_names,
    metric_plan,
)
from spanchor_core.metrics.coverage import RankedCoverage, measure_coverage
from spanchor_core.metrics.fused import score_ranked
from spanchor_core.metrics.names import (
    DEFAULT_K,
    DEFAULT_MIN_OVERLAP,
    check_k,
    check_min_overlap,
    metric_parts,
    parse_cutoff,
    split_metric_name,
)
from spanchor_core.metrics.registry import DEFAULT_METRICS, Metric, MetricFunction

__all__ = [
    "DEFAULT_K",
    "DEFAULT_METRICS",
    "DEFAULT_MIN_OVERLAP",
    "Metric",
    "MetricFunction",
    "MetricPlan",
    "RankedColumns",
    "RankedCoverage",
    "apply_plan",
    "check_k",
    "check_min_overlap",
    "compute_metrics",
    "measure_coverage",
    "metric_names",
    "metric_parts",
    "metric_plan",
    "parse_cutoff",
    "score_columns",
    "score_many",
    "score_ranked",
    "split_metric_name",
]
