"""Oracle recall: the best recall@K any ranking could reach with a given chunking, and the split
of a metric change into its chunking part and its ranking part.

``oracle_recall@K`` of a query is ``max |G ∩ (c_1 ∪ … ∪ c_K)| / |G|`` over every choice of K
chunks of the inventory (union semantics: characters covered twice count once; ``G`` is the
per-document union of the gold anchors). Maximum coverage is NP-hard for arbitrary sets, but
chunks are *intervals* of a document, and for intervals it is solved exactly in polynomial time:

1. per document, project every chunk onto the gold characters (``[s, e)`` becomes the range of
   gold characters it holds — contiguous, because the chunk is); drop empty and duplicate
   projections and any projection contained in another (the container is never worse);
2. what is left is sorted with strictly increasing starts *and* ends, so adding interval ``i``
   after a chosen set whose last interval is ``p`` gains exactly ``r_i - max(l_i, r_p)``:
   a dynamic programme over (intervals used, last interval) gives the best coverage with
   ``j`` chunks, for every ``j <= K``, in ``O(K n²)``;
3. documents are combined by a knapsack over how many of the K chunks each one gets.

The result is the exact optimum for every query, whatever the chunk count (no greedy bound is
needed); ``tests/diagnosis/test_oracle.py`` checks it against brute force with hypothesis.
Everything here is pure.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spanchor_core.diagnosis.inventory import ChunkInventory
from spanchor_core.errors import InputError
from spanchor_core.evaluate import Evaluation
from spanchor_core.metrics import check_k
from spanchor_core.spans import DocSpan, Span, group_by_document

__all__ = [
    "MetricSplit",
    "OracleRecall",
    "QuerySplit",
    "chunking_split",
    "oracle_recall",
    "oracle_recalls",
    "split_change",
]


@dataclass(frozen=True, slots=True)
class OracleRecall:
    """The best recall@``k`` with this chunking, and one choice of chunks that reaches it."""

    k: int
    covered: int
    """Gold characters the best ``k`` chunks cover."""
    gold_chars: int
    chunks: tuple[DocSpan, ...]
    """One optimal choice (fewer than ``k`` when more would add nothing)."""

    @property
    def recall(self) -> float:
        return self.covered / self.gold_chars if self.gold_chars else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "recall": self.recall,
            "covered": self.covered,
            "gold_chars": self.gold_chars,
            "chunks": [[c.document_id, c.start, c.end] for c in self.chunks],
        }


def _rank(gold: Sequence[Span], x: int) -> int:
    """Gold characters before offset ``x`` (``gold`` unioned and sorted)."""
    total = 0
    for start, end in gold:
        if x <= start:
            break
        total += min(x, end) - start
    return total


def _candidates(
    gold: Sequence[Span], chunks: Sequence[Span], longest: int
) -> list[tuple[int, int, Span]]:
    """Projections ``(l, r, chunk)`` onto gold coordinates, undominated, sorted by ``l``.

    ``chunks`` is sorted; ``longest`` is the longest chunk's length, so that the scan can start
    at the first chunk that could reach the gold.
    """
    lo_gold, hi_gold = gold[0][0], gold[-1][1]
    first = bisect.bisect_left(chunks, (lo_gold - longest, -1))
    widest: dict[int, tuple[int, Span]] = {}  # l -> widest (r, chunk) starting there
    for chunk in chunks[first:]:
        start, end = chunk
        if start >= hi_gold:
            break
        if end <= lo_gold:
            continue
        left, right = _rank(gold, start), _rank(gold, end)
        if right > left and (left not in widest or right > widest[left][0]):
            widest[left] = (right, chunk)
    kept: list[tuple[int, int, Span]] = []
    reach = -1
    for left in sorted(widest):  # an interval ending within reach lies inside a kept one
        right, chunk = widest[left]
        if right > reach:
            kept.append((left, right, chunk))
            reach = right
    return kept


def _per_document(
    items: Sequence[tuple[int, int, Span]], budget: int
) -> tuple[list[int], list[list[Span]]]:
    """Best coverage with at most ``j`` intervals for ``j = 0..min(budget, n)``, one choice each.

    ``items`` have strictly increasing starts and ends (see :func:`_candidates`).
    """
    n = len(items)
    budget = min(budget, n)
    # value[j][i]: best coverage with j intervals, the rightmost being i (-1: impossible).
    value = [[-1] * n for _ in range(budget + 1)]
    back = [[-1] * n for _ in range(budget + 1)]
    for i, (left, right, _chunk) in enumerate(items):
        if budget:
            value[1][i] = right - left
    for j in range(2, budget + 1):
        for i in range(j - 1, n):
            left, right, _chunk = items[i]
            top, arg = -1, -1
            for p in range(j - 2, i):
                if value[j - 1][p] >= 0:
                    gain = value[j - 1][p] + right - max(left, items[p][1])
                    if gain > top:
                        top, arg = gain, p
            value[j][i], back[j][i] = top, arg
    best = [0] * (budget + 1)
    choice: list[list[Span]] = [[] for _ in range(budget + 1)]
    for j in range(1, budget + 1):
        best[j], choice[j] = best[j - 1], choice[j - 1]
        end_at = max(range(n), key=lambda i: value[j][i])
        if value[j][end_at] > best[j]:
            picked: list[Span] = []
            i, level = end_at, j
            while level >= 1:
                picked.append(items[i][2])
                i, level = back[level][i], level - 1
            best[j], choice[j] = value[j][end_at], sorted(picked)
    return best, choice


def _index(
    chunks: ChunkInventory | Mapping[str, Sequence[Span]],
) -> tuple[Mapping[str, Sequence[Span]], Mapping[str, int]]:
    if isinstance(chunks, ChunkInventory):
        return chunks.spans, chunks.longest
    spans = {doc: sorted(items) for doc, items in chunks.items()}
    return spans, {doc: max((e - s for s, e in items), default=0) for doc, items in spans.items()}


def oracle_recalls(
    gold: Sequence[DocSpan],
    chunks: ChunkInventory | Mapping[str, Sequence[Span]],
    k: Sequence[int],
) -> dict[int, OracleRecall]:
    """:class:`OracleRecall` for each cutoff in ``k``, from one computation.

    ``chunks`` is an inventory or ``{document_id: chunk spans}``. Empty gold is an
    :class:`~spanchor_core.errors.InputError`: a query without evidence has no recall.
    """
    ks = check_k(k)
    union = group_by_document(gold)
    gold_chars = sum(e - s for spans in union.values() for s, e in spans)
    if not gold_chars:
        raise InputError("gold evidence is empty", hint="every gold query needs an anchor")
    spans, longest = _index(chunks)
    budget = max(ks)
    # table[j]: best coverage over the documents so far with j chunks; picks[j]: the chunks.
    table = [0] * (budget + 1)
    picks: list[list[DocSpan]] = [[] for _ in range(budget + 1)]
    for document_id in sorted(union):
        items = _candidates(
            union[document_id], spans.get(document_id, ()), longest.get(document_id, 0)
        )
        best, choice = _per_document(items, budget)
        if len(best) == 1:
            continue
        merged = table[:]
        merged_picks = [p[:] for p in picks]
        for total in range(budget + 1):
            for here in range(1, min(total, len(best) - 1) + 1):
                value = table[total - here] + best[here]
                if value > merged[total]:
                    merged[total] = value
                    merged_picks[total] = picks[total - here] + [
                        DocSpan(document_id, s, e) for s, e in choice[here]
                    ]
        table, picks = merged, merged_picks
    return {
        cutoff: OracleRecall(cutoff, table[cutoff], gold_chars, tuple(picks[cutoff]))
        for cutoff in ks
    }


def oracle_recall(
    gold: Sequence[DocSpan], chunks: ChunkInventory | Mapping[str, Sequence[Span]], k: int
) -> OracleRecall:
    """The best recall@``k`` any ranking of ``chunks`` could reach for ``gold``."""
    return oracle_recalls(gold, chunks, [k])[k]


# -- the chunking / ranking split -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuerySplit:
    """One query's metric and oracle recall on both sides."""

    query_id: str
    baseline: float
    candidate: float
    oracle_baseline: float
    oracle_candidate: float

    @property
    def delta(self) -> float:
        return self.candidate - self.baseline

    @property
    def chunking(self) -> float:
        """What the chunking changed: the oracle's delta."""
        return self.oracle_candidate - self.oracle_baseline

    @property
    def ranking(self) -> float:
        """The rest: how much closer to (or further from) its ceiling the ranking got."""
        return self.delta - self.chunking


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


@dataclass(frozen=True, slots=True)
class MetricSplit:
    """A metric's mean change split into a chunking part (oracle) and a ranking part (the rest).

    Means are macro (each query weighs the same) over ``queries``; ``delta`` is
    ``mean(candidate) - mean(baseline)`` of the raw values (no noise floor), and
    ``delta == chunking + ranking`` exactly up to float rounding.
    """

    metric: str
    queries: tuple[QuerySplit, ...]
    depth: int | None = None
    """When the runs hold fewer results per query than the metric's K: the most any query
    holds. The oracle at K may use K chunks, which such runs can never reach, so their
    "ranking" share is partly the depth they were recorded at (:meth:`line` says so). Known
    when the split is computed; not kept in comparison files."""

    @property
    def n(self) -> int:
        return len(self.queries)

    def _mean_of(self, name: str) -> float:
        return _mean([getattr(row, name) for row in self.queries])

    @property
    def baseline(self) -> float:
        return self._mean_of("baseline")

    @property
    def candidate(self) -> float:
        return self._mean_of("candidate")

    @property
    def oracle_baseline(self) -> float:
        return self._mean_of("oracle_baseline")

    @property
    def oracle_candidate(self) -> float:
        return self._mean_of("oracle_candidate")

    @property
    def delta(self) -> float:
        return self.candidate - self.baseline

    @property
    def chunking(self) -> float:
        return self.oracle_candidate - self.oracle_baseline

    @property
    def ranking(self) -> float:
        return self.delta - self.chunking

    def line(self, digits: int = 2) -> str:
        """``"recall@5 -0.12: -0.09 chunking (oracle 0.99 → 0.90), -0.03 ranking"``."""
        if not self.queries:
            return f"{self.metric}: no queries to split"
        d = digits
        text = (
            f"{self.metric} {self.delta:+.{d}f}: {self.chunking:+.{d}f} chunking "
            f"(oracle {self.oracle_baseline:.{d}f} → {self.oracle_candidate:.{d}f}), "
            f"{self.ranking:+.{d}f} ranking"
        )
        if self.depth is not None:
            text += (
                f" (the runs hold at most {self.depth} results per query, fewer than the "
                f"oracle's K: part of 'ranking' is that depth)"
            )
        return text

    def to_json(self) -> dict[str, Any]:
        def number(value: float) -> float | None:
            return value if math.isfinite(value) else None

        return {
            "metric": self.metric,
            "n": self.n,
            "baseline": number(self.baseline),
            "candidate": number(self.candidate),
            "delta": number(self.delta),
            "oracle_baseline": number(self.oracle_baseline),
            "oracle_candidate": number(self.oracle_candidate),
            "chunking": number(self.chunking),
            "ranking": number(self.ranking),
            "queries": [
                {
                    "query_id": row.query_id,
                    "baseline": row.baseline,
                    "candidate": row.candidate,
                    "oracle_baseline": row.oracle_baseline,
                    "oracle_candidate": row.oracle_candidate,
                }
                for row in self.queries
            ],
        }


def split_change(
    baseline_oracle: Mapping[str, float],
    candidate_oracle: Mapping[str, float],
    baseline_metric: Mapping[str, float],
    candidate_metric: Mapping[str, float],
    *,
    metric: str = "recall",
) -> MetricSplit:
    """Split the change of ``metric`` (``{query_id: value}`` per side) into chunking and ranking.

    The queries are those in both metric tables (in the baseline's order); each needs an
    oracle value on both sides. The chunking part is the mean oracle delta, the ranking part
    the rest. Meaningful for ``recall@K`` with the oracle at the same K (the oracle is the
    best recall@K a ranking could reach). Raises :class:`~spanchor_core.errors.InputError`
    for a query without an oracle value or a value that is not a finite number.
    """
    ids = [qid for qid in baseline_metric if qid in candidate_metric]
    for side, table in (("baseline", baseline_oracle), ("candidate", candidate_oracle)):
        absent = [qid for qid in ids if qid not in table]
        if absent:
            shown = ", ".join(absent[:5]) + (" ..." if len(absent) > 5 else "")
            raise InputError(
                f"{len(absent)} compared queries have no {side} oracle value: {shown}",
                hint="compute the oracle from the same gold set as the evaluations",
            )
    rows: list[QuerySplit] = []
    for qid in ids:
        values = (
            baseline_metric[qid],
            candidate_metric[qid],
            baseline_oracle[qid],
            candidate_oracle[qid],
        )
        if not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
            raise InputError(f"query {qid!r}: {metric} values must be finite numbers, got {values}")
        rows.append(QuerySplit(qid, *(float(v) for v in values)))
    return MetricSplit(metric, tuple(rows))


def chunking_split(
    baseline: Evaluation,
    candidate: Evaluation,
    baseline_chunks: ChunkInventory | Mapping[str, Sequence[Span]],
    candidate_chunks: ChunkInventory | Mapping[str, Sequence[Span]],
    *,
    k: int,
) -> MetricSplit:
    """The split of ``recall@k`` between two evaluations, given each side's chunk inventory.

    Oracles are computed from each query's own gold spans (the candidate's, else the
    baseline's), over the queries scored on both sides.
    """
    metric = f"recall@{k}"
    for side, evaluation in (("baseline", baseline), ("candidate", candidate)):
        if metric not in evaluation.metric_names:
            raise InputError(
                f"the {side} evaluation has no {metric}",
                hint=f"evaluate with k including {k}",
            )
    ids = [qid for qid in baseline.queries if qid in candidate.queries]
    oracle_before: dict[str, float] = {}
    oracle_after: dict[str, float] = {}
    for qid in ids:
        gold = candidate.queries[qid].gold or baseline.queries[qid].gold
        oracle_before[qid] = oracle_recall(gold, baseline_chunks, k).recall
        oracle_after[qid] = oracle_recall(gold, candidate_chunks, k).recall
    split = split_change(
        oracle_before,
        oracle_after,
        {qid: baseline.queries[qid].metrics[metric] for qid in ids},
        {qid: candidate.queries[qid].metrics[metric] for qid in ids},
        metric=metric,
    )
    # the depth of the list each query was scored on (a query engine's context line), not
    # every result of its records (``mapping.total`` also counts the retrieval line before it)
    deepest = max(
        (len(side.queries[qid].results) for side in (baseline, candidate) for qid in ids),
        default=None,
    )
    if deepest is not None and deepest < k:
        return dataclasses.replace(split, depth=deepest)
    return split
