"""Every value of a metric plan for one ranked list in one walk: :func:`score_ranked`.

The same values, bit for bit, as ``apply_plan(measure_coverage(gold, ranked), plan, overlap)``
(:mod:`.coverage`, :mod:`.compute`), much cheaper for the built-in metrics of :mod:`.registry`:
the walk keeps running totals instead of a tuple per rank, and each built-in value is read off
those totals directly, at the positions the cutoffs need, instead of through one function call
per metric and cutoff. The arithmetic is the walk's own, in the same order (the same divisions,
the same left-to-right sums, ``math.log2`` for the discounts), so no float changes.

A plan may hold other functions (a user's metric in ``{**DEFAULT_METRICS, "mine": ...}``): the
:class:`~spanchor_core.metrics.RankedCoverage` is then built once, as before, and those
functions are called with it as they always were.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from spanchor_core.metrics.compute import MetricPlan
from spanchor_core.metrics.coverage import RankedCoverage, _validate_gold, measure_coverage
from spanchor_core.metrics.registry import DEFAULT_METRICS, MetricFunction
from spanchor_core.spans import DocSpan, Span, intersection_length, subtract_spans, union_spans

__all__ = ["score_ranked"]

# The built-in functions, by what they read off the walk's totals.
_CODES: dict[MetricFunction, int] = {
    metric.function: code for code, metric in enumerate(DEFAULT_METRICS.values())
}
_RECALL, _PRECISION, _HIT, _FULL, _IOU, _MRR, _NDCG, _AP, _RETRIEVED, _UNMAPPED = (
    _CODES[DEFAULT_METRICS[name].function]
    for name in (
        "recall",
        "precision",
        "hit",
        "full_evidence",
        "iou",
        "mrr",
        "ndcg",
        "ap",
        "retrieved_chars",
        "unmapped",
    )
)

_Compiled = tuple[tuple[tuple[str, int, int | None, MetricFunction], ...], bool]
_COMPILED: dict[MetricPlan, _Compiled] = {}


def _compile(plan: MetricPlan) -> _Compiled:
    """Each plan entry with its built-in code (-1 for any other function), and whether any
    entry needs the full coverage record. Plans are few per process, so they are kept."""
    found = _COMPILED.get(plan)
    if found is None:
        entries = tuple(
            (name, _CODES.get(function, -1), cutoff, function) for name, function, cutoff in plan
        )
        found = (entries, any(code < 0 for _, code, _, _ in entries))
        if len(_COMPILED) < 64:
            _COMPILED[plan] = found
    return found


def _log2_table(n: int) -> list[float]:
    return [math.log2(rank + 1) for rank in range(n + 1)]


_LOG2: list[float] = _log2_table(64)


def score_ranked(
    gold: Sequence[DocSpan],
    ranked: Sequence[DocSpan | None],
    plan: MetricPlan,
    overlap: float,
) -> dict[str, float]:
    """``apply_plan(measure_coverage(gold, ranked), plan, overlap)``, computed in one walk.

    ``gold`` and ``ranked`` are as for :func:`~spanchor_core.metrics.measure_coverage`
    (``None``: an unmapped result keeping its slot), ``plan`` and ``overlap`` as for
    :func:`~spanchor_core.metrics.apply_plan` (checked once by the caller).
    """
    entries, needs_record = _compile(plan)
    _validate_gold(gold)
    gold_by_doc: dict[str, list[Span]] = {}
    anchors_by_doc: dict[str, list[tuple[int, Span]]] = {}
    lengths: list[int] = []
    for position, (doc, a_start, a_end) in enumerate(gold):
        gold_by_doc.setdefault(doc, []).append((a_start, a_end))
        anchors_by_doc.setdefault(doc, []).append((position, (a_start, a_end)))
        lengths.append(a_end - a_start)
    gold_union = {doc: union_spans(spans) for doc, spans in gold_by_doc.items()}
    pieces = sorted(
        (end - start for spans in gold_union.values() for start, end in spans), reverse=True
    )
    gold_chars = sum(pieces)

    n = len(ranked)
    log2 = _LOG2 if n < len(_LOG2) else _log2_table(n)
    retrieved_union: dict[str, list[Span]] = {}
    anchor_state = [0] * len(gold)
    covered_at = [0] * (n + 1)
    retrieved_at = [0] * (n + 1)
    unmapped_at = [0] * (n + 1)
    adding_at = [0] * (n + 1)
    dcg_at = [0.0] * (n + 1)
    ap_at = [0.0] * (n + 1)
    anchors_at: dict[int, tuple[int, ...]] = {0: tuple(anchor_state)}
    snapshot = {min(cutoff, n) for _, _, cutoff, _ in entries if cutoff is not None}
    snapshot.add(n)
    first_overlap: int | None = None
    covered = retrieved = unmapped = adding = 0
    dcg = ap = 0.0

    for rank, item in enumerate(ranked, start=1):
        new_gold = new_retrieved = 0
        if item is None:
            unmapped += 1
        else:
            doc, start, end = item
            if end > start:
                span = (start, end)
                current = retrieved_union.get(doc)
                if current is None:  # first span in its document: all of it is new
                    gaps = [span]
                    new_retrieved = end - start
                else:
                    gaps = subtract_spans([span], current)
                    new_retrieved = sum(g_end - g_start for g_start, g_end in gaps)
                doc_gold = gold_union.get(doc)
                if doc_gold is not None:
                    if first_overlap is None and intersection_length([span], doc_gold) > 0:
                        first_overlap = rank
                    new_gold = intersection_length(gaps, doc_gold)
                    for position, anchor_span in anchors_by_doc[doc]:
                        anchor_state[position] += intersection_length(gaps, [anchor_span])
                if current is None:
                    retrieved_union[doc] = gaps
                elif new_retrieved:
                    retrieved_union[doc] = union_spans([*current, span])
        covered += new_gold
        retrieved += new_retrieved
        if new_retrieved > 0:
            adding += 1
        gain = new_gold / gold_chars
        dcg = dcg + gain / log2[rank]
        precision_here = covered / retrieved * adding / (adding + unmapped) if retrieved else 0.0
        ap = ap + precision_here * gain
        covered_at[rank] = covered
        retrieved_at[rank] = retrieved
        unmapped_at[rank] = unmapped
        adding_at[rank] = adding
        dcg_at[rank] = dcg
        ap_at[rank] = ap
        if rank in snapshot:
            anchors_at[rank] = tuple(anchor_state)

    record: RankedCoverage | None = measure_coverage(gold, ranked) if needs_record else None
    whole = max(n, 1)
    values: dict[str, float] = {}
    ideal: dict[int, float] = {}
    for name, code, cutoff, function in entries:
        k = whole if cutoff is None else cutoff
        i = k if k < n else n
        if code == _RECALL:
            values[name] = covered_at[i] / gold_chars
        elif code == _PRECISION:
            r = retrieved_at[i]
            if r:
                a = adding_at[i]
                values[name] = covered_at[i] / r * a / (a + unmapped_at[i])
            else:
                values[name] = 0.0
        elif code in (_HIT, _FULL):
            met = [
                c > 0 and c / length >= overlap
                for c, length in zip(anchors_at[i], lengths, strict=True)
            ]
            values[name] = 1.0 if (any(met) if code == _HIT else all(met)) else 0.0
        elif code == _IOU:
            c = covered_at[i]
            values[name] = c / (gold_chars + retrieved_at[i] - c)
        elif code == _MRR:
            values[name] = (
                1.0 / first_overlap if first_overlap is not None and first_overlap <= k else 0.0
            )
        elif code == _NDCG:
            best = ideal.get(k)
            if best is None:
                best = ideal[k] = sum(
                    length / gold_chars / math.log2(rank + 1)
                    for rank, length in enumerate(pieces[:k], start=1)
                )
            values[name] = min(1.0, dcg_at[i] / best)
        elif code == _AP:
            values[name] = ap_at[i]
        elif code == _RETRIEVED:
            values[name] = float(retrieved_at[i])
        elif code == _UNMAPPED:
            values[name] = float(unmapped_at[i])
        else:
            if record is None:  # pragma: no cover - needs_record says when
                record = measure_coverage(gold, ranked)
            values[name] = function(record, k, overlap)
    return values
