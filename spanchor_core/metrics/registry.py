"""The built-in metrics: small functions of one signature over a coverage record, by name.

Definitions, with ``G`` and ``R_K`` as in :mod:`spanchor_core.metrics`, for anchors ``a_1..a_m``
and ``c_j(K) = |a_j ∩ R_K| / |a_j|``:

``recall@K``          ``|G ∩ R_K| / |G|``
``precision@K``       ``|G ∩ R_K| / (|R_K| + U_K × |R_K| / D_K)``, and 0.0 when ``|R_K| == 0``
                      (nothing mapped): ``U_K`` results among the top K are unmapped and
                      ``D_K`` mapped ones added characters to ``R_K`` (duplicates add none).
                      An unmapped result keeps its rank slot as retrieved text of the average
                      size ``|R_K| / D_K`` that covers no gold — its canonical length is
                      unknown. Equal to ``|G ∩ R_K| / |R_K| × D_K / (D_K + U_K)``.
``iou@K``             ``|G ∩ R_K| / |G ∪ R_K|``
``hit@K``             1.0 if some anchor has ``|a_j ∩ R_K| > 0`` and ``c_j(K) >= min_overlap``
``full_evidence@K``   1.0 if every anchor has ``|a_j ∩ R_K| > 0`` and ``c_j(K) >= min_overlap``
``mrr@K``             ``1 / r`` for the first rank ``r <= K`` whose span shares at least one
                      character with ``G``; 0.0 if none does
``ndcg@K``            ``min(1, DCG@K / IDCG@K)`` with ``DCG@K = Σ_{i<=K} g_i / log2(i + 1)``,
                      ``g_i = |G ∩ R_i| - |G ∩ R_{i-1}|`` over ``|G|`` (gold newly covered at
                      rank i). The ideal list returns the maximal contiguous pieces of ``G``
                      one per rank, largest first: ``IDCG@K = Σ_{i<=K} p_i / |G| / log2(i + 1)``
                      for piece lengths ``p_1 >= p_2 >= ...``. Only a single retrieved span that
                      bridges two gold pieces (and the gap between them) can beat that order,
                      hence the cap at 1.
``ap@K``              ``Σ_{i<=K} precision@i × g_i``: the mean, over gold characters, of the
                      precision at the rank where each character was first covered (0 for
                      characters not covered by rank K). ``ap@K <= recall@K``; exactly the gold
                      spans at rank 1 give 1.0; ``[unmapped, gold]`` gives ``ap@2 = 0.5``, as
                      for an irrelevant result above a relevant one.
``iou``, ``mrr``      ``iou@K`` and ``mrr@K`` over the whole list (spanchor 0.x's ``iou`` had no
                      cutoff either).
``retrieved_chars@K`` ``|R_K|`` (a count, a cost proxy; not a score)
``unmapped@K``        results among the top K that have no span (a count, not a score)

Hit and full evidence judge each anchor on its own: two adjacent anchors are two pieces of
evidence, not one merged interval, and ``min_overlap=0`` still needs one shared character.
Ratios are compared as ``covered / length >= min_overlap`` so that 3 of 10 characters meets a
``min_overlap`` of 0.3 exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from spanchor_core.metrics.coverage import RankedCoverage

__all__ = ["DEFAULT_METRICS", "Metric", "MetricFunction"]

MetricFunction = Callable[[RankedCoverage, int, float], float]
"""The one signature every metric has: coverage record, cutoff K, min_overlap -> value."""


def _recall(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    return cov.covered[cov.index(k)] / cov.gold_chars


def _precision(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    i = cov.index(k)
    if not cov.retrieved[i]:
        return 0.0
    adding = cov.adding[i]
    return cov.covered[i] / cov.retrieved[i] * adding / (adding + cov.unmapped[i])


def _iou(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    i = cov.index(k)
    return cov.covered[i] / (cov.gold_chars + cov.retrieved[i] - cov.covered[i])


def _anchors_met(cov: RankedCoverage, k: int, min_overlap: float) -> list[bool]:
    state = cov.anchor_covered[cov.index(k)]
    return [
        covered > 0 and covered / length >= min_overlap
        for covered, length in zip(state, cov.anchor_lengths, strict=True)
    ]


def _hit(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    return 1.0 if any(_anchors_met(cov, k, min_overlap)) else 0.0


def _full_evidence(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    return 1.0 if all(_anchors_met(cov, k, min_overlap)) else 0.0


def _mrr(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    rank = cov.first_overlap_rank
    return 1.0 / rank if rank is not None and rank <= k else 0.0


def _ndcg(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    return min(1.0, cov.dcg[cov.index(k)] / cov.ideal_dcg(k))


def _ap(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    return cov.ap[cov.index(k)]


def _retrieved_chars(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    return float(cov.retrieved[cov.index(k)])


def _unmapped(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    return float(cov.unmapped[cov.index(k)])


@dataclass(frozen=True, slots=True)
class Metric:
    """A named metric: its function and how to read its values.

    ``per_k`` metrics are reported as ``name@K`` for every requested K; ``whole_list`` ones also
    as plain ``name`` over the entire ranked list. ``score`` metrics lie in ``[0, 1]``; the
    others are counts. ``higher_is_better`` tells a comparison which way is a regression
    (``None``: neither, a diagnostic).
    """

    name: str
    function: MetricFunction
    description: str
    per_k: bool = True
    whole_list: bool = False
    score: bool = True
    higher_is_better: bool | None = True


DEFAULT_METRICS: Mapping[str, Metric] = {
    metric.name: metric
    for metric in (
        Metric("recall", _recall, "gold characters covered / gold characters"),
        Metric(
            "precision",
            _precision,
            "gold characters covered / retrieved, unmapped results counted at average size",
        ),
        Metric("hit", _hit, "1 if some anchor is covered by at least min_overlap"),
        Metric("full_evidence", _full_evidence, "1 if every anchor is covered by min_overlap"),
        Metric("iou", _iou, "gold ∩ retrieved / gold ∪ retrieved", whole_list=True),
        Metric("mrr", _mrr, "1 / rank of the first result touching gold", whole_list=True),
        Metric("ndcg", _ndcg, "DCG of newly covered gold characters / ideal DCG"),
        Metric("ap", _ap, "mean over gold characters of precision where first covered"),
        Metric(
            "retrieved_chars",
            _retrieved_chars,
            "characters in the union of mapped results",
            score=False,
            higher_is_better=None,
        ),
        Metric(
            "unmapped",
            _unmapped,
            "results without a source span",
            score=False,
            higher_is_better=False,
        ),
    )
}
"""The built-in metrics by base name. Extend with ``{**DEFAULT_METRICS, "mine": Metric(...)}``."""
