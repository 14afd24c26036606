"""Span metrics: how much gold evidence a ranked list of retrieved spans covers, at each K.

Everything here is a pure function over :class:`~spanchor_core.spans.DocSpan` values. One pass
over a ranked list (:func:`measure_coverage`) records, after every rank, how many gold and
retrieved characters are covered; every metric at every K is then a lookup in that record.

Conventions (they hold for every metric below):

* Characters count **per document**. A retrieved span overlaps gold only in the same document;
  the same offsets in another document are different characters. (spanchor 0.x compared bare
  intervals across documents, which inflated recall whenever two documents shared offsets.)
* Unions, never sums: overlapping or duplicate retrieved spans, and overlapping gold anchors, are
  counted once. ``G`` is the per-document union of the gold anchors, ``R_K`` the per-document
  union of the mapped results at ranks ``1..K``; ``|X|`` sums lengths over documents.
* A result that could not be mapped (``None``) keeps its rank slot and covers nothing: five
  unmapped results and the gold text at rank 6 give ``recall@5 == 0``. It adds no characters to
  ``R_K`` either, so precision is over *mapped* characters; ``unmapped@K`` reports how many of the
  top K were unmapped so that a report can show it next to precision.
* ``K`` larger than the list means "the whole list": the list is not padded with anything.
* Gold must hold at least one anchor and every anchor at least one character; anything else is an
  :class:`~spanchor_core.errors.InputError` (a query without evidence cannot be scored —
  :func:`spanchor_core.evaluate.evaluate` lists such queries instead of scoring them).

Definitions, for anchors ``a_1..a_m`` and ``c_j(K) = |a_j ∩ R_K| / |a_j|``:

``recall@K``          ``|G ∩ R_K| / |G|``
``precision@K``       ``|G ∩ R_K| / |R_K|``, and 0.0 when ``|R_K| == 0`` (nothing mapped)
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
                      spans at rank 1 give 1.0.
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

import math
import re
import reprlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from spanchor_core.errors import InputError
from spanchor_core.spans import (
    DocSpan,
    Span,
    intersection_length,
    subtract_spans,
    union_spans,
)

__all__ = [
    "DEFAULT_K",
    "DEFAULT_METRICS",
    "DEFAULT_MIN_OVERLAP",
    "Metric",
    "MetricFunction",
    "RankedCoverage",
    "check_k",
    "check_min_overlap",
    "compute_metrics",
    "measure_coverage",
    "metric_names",
    "metric_parts",
    "parse_cutoff",
    "split_metric_name",
]

DEFAULT_K: tuple[int, ...] = (1, 3, 5, 10)
DEFAULT_MIN_OVERLAP = 0.5


@dataclass(frozen=True, slots=True)
class RankedCoverage:
    """What the top ``i`` results cover, for every ``i`` from 0 to the length of the list.

    Index ``i`` of each tuple is the state after rank ``i`` (index 0: nothing retrieved yet).
    Built by :func:`measure_coverage`; metrics read it with :meth:`at`-style lookups.
    """

    gold_chars: int
    """``|G|``: characters in the per-document union of the gold anchors."""
    anchor_lengths: tuple[int, ...]
    """Length of each gold anchor, in the order given."""
    gold_pieces: tuple[int, ...]
    """Lengths of the maximal contiguous pieces of ``G``, largest first (the ideal ranking)."""
    covered: tuple[int, ...]
    """``|G ∩ R_i|``."""
    retrieved: tuple[int, ...]
    """``|R_i|``."""
    anchor_covered: tuple[tuple[int, ...], ...]
    """``|a_j ∩ R_i|`` for each anchor ``j``."""
    unmapped: tuple[int, ...]
    """Results without a span among the top ``i``."""
    first_overlap_rank: int | None
    """First rank whose span shares a character with ``G`` (``None``: no such rank)."""
    dcg: tuple[float, ...]
    """``DCG@i`` (gain normalised by ``|G|``)."""
    ap: tuple[float, ...]
    """``AP@i``."""

    @property
    def n_results(self) -> int:
        """Length of the ranked list, unmapped results included."""
        return len(self.covered) - 1

    def index(self, k: int) -> int:
        """Position in the tuples for cutoff ``k`` (``k`` past the list means the whole list)."""
        return min(k, len(self.covered) - 1)  # n_results, inlined: called per metric per K

    def ideal_dcg(self, k: int) -> float:
        """``IDCG@k``: the gold pieces at ranks ``1..k``, largest first."""
        return sum(
            length / self.gold_chars / math.log2(rank + 1)
            for rank, length in enumerate(self.gold_pieces[:k], start=1)
        )


def _validate_gold(gold: Sequence[DocSpan]) -> None:
    if not gold:
        raise InputError(
            "gold evidence is empty", hint="every gold query needs at least one anchor"
        )
    for anchor in gold:
        if anchor.end <= anchor.start:
            raise InputError(
                f"gold anchor {anchor.document_id}[{anchor.start}:{anchor.end}] has no characters",
                hint="anchors must satisfy start < end",
            )


def measure_coverage(gold: Sequence[DocSpan], ranked: Sequence[DocSpan | None]) -> RankedCoverage:
    """Walk ``ranked`` once and record what the top ``i`` results cover, for every ``i``.

    ``ranked[0]`` is rank 1; ``None`` is a result that could not be mapped (it keeps its slot).
    Per-document unions grow incrementally: each new span only adds the characters it does not
    share with what was retrieved before, so the walk costs about ``O(n × (n + m))`` for ``n``
    results and ``m`` anchors, not a fresh union per K.
    """
    _validate_gold(gold)
    gold_by_doc: dict[str, list[Span]] = {}
    anchors_by_doc: dict[str, list[tuple[int, Span]]] = {}
    for position, anchor in enumerate(gold):
        gold_by_doc.setdefault(anchor.document_id, []).append((anchor.start, anchor.end))
        anchors_by_doc.setdefault(anchor.document_id, []).append(
            (position, (anchor.start, anchor.end))
        )
    gold_union = {doc: union_spans(spans) for doc, spans in gold_by_doc.items()}
    pieces = sorted(
        (end - start for spans in gold_union.values() for start, end in spans), reverse=True
    )
    gold_chars = sum(pieces)

    retrieved_union: dict[str, list[Span]] = {}
    anchor_state = [0] * len(gold)
    covered, retrieved, unmapped = [0], [0], [0]
    anchor_covered = [tuple(anchor_state)]
    dcg, ap = [0.0], [0.0]
    first_overlap: int | None = None

    for rank, item in enumerate(ranked, start=1):
        new_gold = new_retrieved = 0
        missing = 0
        if item is None:
            missing = 1
        elif item.end > item.start:
            span = (item.start, item.end)
            current = retrieved_union.get(item.document_id, [])
            gaps = subtract_spans([span], current)
            new_retrieved = sum(end - start for start, end in gaps)
            doc_gold = gold_union.get(item.document_id)
            if doc_gold is not None:
                if first_overlap is None and intersection_length([span], doc_gold) > 0:
                    first_overlap = rank
                new_gold = intersection_length(gaps, doc_gold)
                for position, anchor_span in anchors_by_doc[item.document_id]:
                    anchor_state[position] += intersection_length(gaps, [anchor_span])
            if new_retrieved:
                retrieved_union[item.document_id] = union_spans([*current, span])
        covered.append(covered[-1] + new_gold)
        retrieved.append(retrieved[-1] + new_retrieved)
        unmapped.append(unmapped[-1] + missing)
        anchor_covered.append(tuple(anchor_state))
        gain = new_gold / gold_chars
        dcg.append(dcg[-1] + gain / math.log2(rank + 1))
        precision_here = covered[-1] / retrieved[-1] if retrieved[-1] else 0.0
        ap.append(ap[-1] + precision_here * gain)

    return RankedCoverage(
        gold_chars=gold_chars,
        anchor_lengths=tuple(anchor.end - anchor.start for anchor in gold),
        gold_pieces=tuple(pieces),
        covered=tuple(covered),
        retrieved=tuple(retrieved),
        anchor_covered=tuple(anchor_covered),
        unmapped=tuple(unmapped),
        first_overlap_rank=first_overlap,
        dcg=tuple(dcg),
        ap=tuple(ap),
    )


# -- the metrics: one signature, (coverage, k, min_overlap) -> float -------------------------

MetricFunction = Callable[[RankedCoverage, int, float], float]
"""The one signature every metric has: coverage record, cutoff K, min_overlap -> value."""


def _recall(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    return cov.covered[cov.index(k)] / cov.gold_chars


def _precision(cov: RankedCoverage, k: int, min_overlap: float) -> float:
    i = cov.index(k)
    return cov.covered[i] / cov.retrieved[i] if cov.retrieved[i] else 0.0


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
        Metric("precision", _precision, "gold characters covered / mapped characters retrieved"),
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


_CUTOFF = re.compile(r"[1-9][0-9]{0,17}")
"""A cutoff K as written after ``@``: ASCII digits, no leading zero, at most 18 digits (an
int64). Checked before any ``int()``: ``int()`` accepts other scripts' digits (``"²"``, ``"٥"``)
and refuses, with a bare ValueError, numbers of more than 4,300 digits."""

_SHOWN = reprlib.Repr()
_SHOWN.maxstring = 80
_SHOWN.maxother = 80


def _shown(value: object) -> str:
    """``repr(value)`` cut to about 80 characters, for error messages; total for huge ints."""
    try:
        return _SHOWN.repr(value)
    except ValueError:  # an int of more than 4,300 digits has no repr
        return f"<an integer of {value.bit_length() if isinstance(value, int) else '?'} bits>"


def parse_cutoff(text: str) -> int | None:
    """The K of ``"5"`` (from ``recall@5``); ``None`` unless it is a plain whole number >= 1."""
    return int(text) if _CUTOFF.fullmatch(text) else None


def check_k(k: Iterable[int]) -> tuple[int, ...]:
    """Sorted, de-duplicated cutoffs; each must be an integer of at least 1."""
    values = list(k)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"K must be a whole number of at least 1, got {_shown(value)}")
    if not values:
        raise InputError("at least one K is needed", hint="for example k=(1, 3, 5, 10)")
    return tuple(sorted(set(values)))


def check_min_overlap(min_overlap: float) -> float:
    """``min_overlap`` as a float in ``[0, 1]``."""
    try:
        value = float(min_overlap)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond any float
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise InputError(f"min_overlap must lie between 0 and 1, got {_shown(min_overlap)}")
    return value


def metric_names(
    k: Iterable[int] = DEFAULT_K, metrics: Mapping[str, Metric] = DEFAULT_METRICS
) -> list[str]:
    """The value names :func:`compute_metrics` produces, in its (stable) order."""
    ks = check_k(k)
    names: list[str] = []
    for metric in metrics.values():
        if metric.per_k:
            names.extend(f"{metric.name}@{cutoff}" for cutoff in ks)
        if metric.whole_list:
            names.append(metric.name)
    return names


def split_metric_name(name: str) -> tuple[str, int | None]:
    """``"recall@5"`` -> ``("recall", 5)``; ``"iou"`` -> ``("iou", None)``."""
    base, sep, cutoff = name.partition("@")
    if not sep:
        return name, None
    value = parse_cutoff(cutoff)
    if value is None:
        raise InputError(
            f"metric name {_shown(name)} needs a whole number of at least 1 after '@' "
            "(ASCII digits, at most 18)"
        )
    return base, value


def metric_parts(name: str) -> tuple[str, int | None]:
    """Like :func:`split_metric_name`, but never raises: a name outside the ``name@K`` grammar
    (a custom or 0.x metric) counts as a whole-list metric. For readers and renderers."""
    try:
        return split_metric_name(name)
    except InputError:
        return name, None


def compute_metrics(
    coverage: RankedCoverage,
    k: Iterable[int] = DEFAULT_K,
    *,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    metrics: Mapping[str, Metric] = DEFAULT_METRICS,
) -> dict[str, float]:
    """Every metric at every K (plus whole-list values) for one query, in a stable order.

    >>> gold = [DocSpan("a", 0, 10)]
    >>> values = compute_metrics(measure_coverage(gold, [None, DocSpan("a", 5, 15)]), k=(1, 2))
    >>> values["recall@1"], values["recall@2"], values["precision@2"], values["mrr"]
    (0.0, 0.5, 0.5, 0.5)
    """
    ks = check_k(k)
    overlap = check_min_overlap(min_overlap)
    return _apply_plan(coverage, _metric_plan(ks, metrics), overlap)


_Plan = tuple[tuple[str, MetricFunction, int | None], ...]


def _metric_plan(ks: tuple[int, ...], metrics: Mapping[str, Metric]) -> _Plan:
    """(value name, function, cutoff or None for the whole list), in compute_metrics order.

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


def _apply_plan(coverage: RankedCoverage, plan: _Plan, overlap: float) -> dict[str, float]:
    """:func:`compute_metrics` with checked ``k``/``min_overlap`` and a prebuilt plan."""
    whole = max(len(coverage.covered) - 1, 1)
    return {
        name: function(coverage, whole if cutoff is None else cutoff, overlap)
        for name, function, cutoff in plan
    }
